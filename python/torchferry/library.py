"""torch.compile sees torchferry: every op as a torch custom op.

Each op the registry knows, built-in or declared by a plugin, is defined as
`torch.ops.torchferry.<name>` (a declared `acme::fused_gelu` as
`torch.ops.torchferry.acme__fused_gelu`), with its schema derived from the
op's entry:

- `<name>` (the default overload) is functional and returns a new tensor;
- `<name>.out` takes `*, Tensor(a!) out` and returns nothing, which is what
  torch's functionalization needs of a mutating custom op. An op whose schema
  declares out itself (`cast`) has only that form, as its default overload.

The CPU and CUDA kernels call the native function itself (torchferry.ops),
so compiled code runs the same kernels as eager code. The fake
implementations compute no data: a built-in op runs its reference
(torchferry.reference) on fake tensors, so torch's own meta functions give
its shape and dtype, symbolic ones included; a declared op asks its plugin's
infer (torchferry._C._infer, through the checks an eager call makes).
Declared ops' infer sees concrete sizes, so dynamic=True specializes the
dims of their inputs.

Eager calls never come here: `torchferry.ops.<name>` stays the native
function. Dynamo, which cannot trace a C function, gets a Python substitute
for each one (torch._dynamo.substitute_in_graph) that calls the custom op;
the substitute exists only inside traced code.

A torch that lacks one of the APIs below refuses this module at import with
the API's name (torchferry's import then warns with it, and the eager ops
work on); Dynamo's own is checked when torch._dynamo loads.
"""

import sys
import warnings

import torch

from . import _C
from . import ops as _ops
from .reference import REFERENCES

NAMESPACE = "torchferry"

# What this module needs of torch, by dotted name; all exist from torch 2.5
# on (torchferry.COMPILE_FLOOR; the eager ops' floor is 2.3). The last is Dynamo's, checked when
# torch._dynamo loads (see _when_dynamo_loads).
REQUIRED_TORCH_APIS = (
    "torch.library.Library",
    "torch.library.register_fake",
    "torch._C._AutoDispatchBelowAutograd",
)
REQUIRED_DYNAMO_API = "torch._dynamo.substitute_in_graph"


def _resolve(dotted):
    obj = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _missing(names):
    missing = [name for name in names if _resolve(name) is None]
    if not missing:
        return None
    return (
        f"torchferry.library needs {', '.join(missing)}, which torch {torch.__version__} "
        "lacks; torch.compile integration is off (the eager torchferry.ops work)"
    )


def _check_torch():
    names = REQUIRED_TORCH_APIS
    if "torch._dynamo" in sys.modules:
        names += (REQUIRED_DYNAMO_API,)
    message = _missing(names)
    if message:
        raise ImportError(message)


_check_torch()


def torch_name(name):
    """The custom op's name for a torchferry op: 'acme::gelu' -> 'acme__gelu'."""
    return name.replace("::", "__")


class _Op:
    """What one op needs at registration and in traced code."""

    def __init__(self, schema, native):
        self.name = schema["name"]
        self.torch_name = torch_name(self.name)
        self.native = native
        self.declared = schema["declared_by"] is not None
        args = schema["args"]
        self.variadic = "(*" in schema["signature"]  # noop(*tensors)
        # out declared by the schema itself (cast): the op always writes it.
        self.writes = any(a["written"] and a["kwarg_only"] for a in args)
        # Parameters include an input the op updates in place (written, not
        # keyword-only: add_rms_norm's residual), which torch's schema marks
        # as mutated so that functionalization sees the write.
        self.params = [a for a in args if not (a["written"] and a["kwarg_only"])]
        self.positional = [a["name"] for a in self.params if not a["kwarg_only"]]
        self.keyword = [a["name"] for a in self.params if a["kwarg_only"]]
        self.numbers = {a["name"] for a in self.params if a["number_ok"]}
        self.returns = n = schema["returns"]  # how many
        # The out overload's arguments: out, or out0, out1, ... for several
        # returns, which the native door takes as out=(out0, out1, ...).
        self.out_names = ["out"] if self.writes or n == 1 else [f"out{i}" for i in range(n)]
        self.signature = schema["signature"]
        self.reference = REFERENCES.get(self.name)
        self.packet = None  # torch.ops.torchferry.<torch_name>, once defined
        self.defaults = {}  # argument name -> its default, as torch parsed it

    def torch_schemas(self):
        """{overload: schema text without the name}. An op where a Python
        number may stand for a tensor (add, mul, clamp) also has `number`
        (and `number_out`), whose such parameters are Scalar: compiled code
        hands the number itself to the native function, which applies it as
        an eager call does (float16's in float32, unrounded)."""
        schemas = self._schemas("")
        if self.numbers and not self.writes:
            schemas.update(self._schemas("number"))
        return schemas

    def _schemas(self, numbers):
        params, star = [], False
        mutated = iter("bcdefghijklmnopqrstuvwxyz")  # (a!) is out's
        for a in self.params:
            if a["kwarg_only"] and not star:
                params.append("*")
                star = True
            alias = f"({next(mutated)}!)" if a["written"] else ""
            kind = "Scalar" if numbers and a["name"] in self.numbers else a["type"]
            text = f"{kind}{alias}{'?' if a['optional'] else ''} {a['name']}"
            if a["default"] is not None:
                text += f"={a['default']}"
            params.append(text)
        outs = [f"Tensor(a!) {self.out_names[0]}"] if self.out_names else []
        outs += [f"Tensor({next(mutated)}!) {name}" for name in self.out_names[1:]]
        with_out = params + ([] if star else ["*"]) + outs
        if self.writes:
            return {"default": f"({', '.join(with_out)}) -> ()"}
        n = self.returns
        result = "()" if n == 0 else "Tensor" if n == 1 else f"({', '.join(['Tensor'] * n)})"
        functional, out = (numbers, f"{numbers}_out") if numbers else ("default", "out")
        schemas = {functional: f"({', '.join(params)}) -> {result}"}
        if self.returns:
            schemas[out] = f"({', '.join(with_out)}) -> ()"
        return schemas

    def values(self, args, kwargs):
        """The native function's parameters in order, from torch's call, which
        leaves out the arguments that equal their defaults."""
        names = [a["name"] for a in self.params]
        return list(args) + [
            kwargs[n] if n in kwargs else self.defaults[n] for n in names[len(args) :]
        ]


# --- kernels -----------------------------------------------------------------


def _functional_kernel(op):
    native = op.native
    if op.variadic:
        return lambda tensors: native(*tensors)
    return native  # torch passes the schema's arguments as the native takes them


def _out_kernel(op):
    native = op.native
    names = op.out_names

    def kernel(*args, **kwargs):
        outs = [kwargs.pop(n) for n in names]
        native(*args, out=outs[0] if len(outs) == 1 else tuple(outs), **kwargs)

    return kernel


def _tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, torch.Tensor))


def _autograd_kernel(op, overload, writes_out):
    """Refuses a requires_grad tensor under grad mode as the native door
    does (core/prepare/checks.cc CheckNoGrad), in the same words; below autograd
    otherwise. Under torch.compile, tracing reaches this too."""
    target = getattr(op.packet, overload)
    who = "functions with out=... arguments don't" if writes_out else "torchferry ops don't"

    def kernel(*args, **kwargs):
        if torch.is_grad_enabled() and any(
            t.requires_grad for t in _tensors(list(args) + list(kwargs.values()))
        ):
            raise RuntimeError(
                f"{op.name}(): {who} support automatic differentiation, but one of the "
                "arguments requires grad; call it under torch.no_grad() or pass detached "
                "tensors"
            )
        with torch._C._AutoDispatchBelowAutograd():
            return target(*args, **kwargs)

    return kernel


# --- fake implementations ----------------------------------------------------


def _dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


def _spec(t):
    # Concrete sizes: a symbolic one is specialized (guarded) here.
    return (tuple(int(d) for d in t.shape), _dtype_name(t.dtype))


def _first_tensor(values):
    return next(_tensors(values))


def _infer(op, values, out):
    first = _first_tensor(values)
    specs = tuple(_spec(v) if isinstance(v, torch.Tensor) else v for v in values)
    device = "cuda" if first.device.type == "cuda" else "cpu"
    if isinstance(out, tuple):
        out = tuple(_spec(o) for o in out)
    elif out is not None:
        out = _spec(out)
    return _C._infer(op.name, device, specs, out)


def _functional_fake(op):
    if op.declared:

        def fake(*args, **kwargs):
            values = op.values(args, kwargs)
            result = _infer(op, values, None)
            if result is None:
                return None
            device = _first_tensor(values).device
            made = [torch.empty(s, dtype=getattr(torch, d), device=device)
                    for s, d in (result if isinstance(result, list) else [result])]
            return made[0] if op.returns == 1 else tuple(made)

        return fake
    reference = op.reference
    if reference is None:

        def missing(*args, **kwargs):
            raise NotImplementedError(
                f"torchferry op {op.name} has no reference in torchferry/reference.py, "
                "which its fake implementation runs; add one beside its op table entry"
            )

        return missing

    def fake(*args, **kwargs):
        if op.variadic:
            reference(*args[0])
            return None
        result = reference(*args, **kwargs)
        if result is None:
            return None
        # The host allocates its outputs contiguous (torch.empty).
        return torch.empty(result.shape, dtype=result.dtype, device=result.device)

    return fake


def _out_fake(op):
    if op.declared:

        def fake(*args, **kwargs):
            outs = [kwargs.pop(n) for n in op.out_names]
            out = outs[0] if len(outs) == 1 else tuple(outs)
            _infer(op, op.values(args, kwargs), out)  # checks out as eager does

        return fake
    if op.writes:
        # The reference takes out= (cast): it computes on fake tensors.
        return lambda *args, out, **kwargs: (op.reference(*args, out=out, **kwargs), None)[1]

    functional = _functional_fake(op)

    def fake(*args, out, **kwargs):
        expected = functional(*args, **kwargs)
        if expected.shape != out.shape or expected.dtype != out.dtype:
            raise RuntimeError(
                f"{op.name}(): expected out of shape {tuple(expected.shape)} and dtype "
                f"{_dtype_name(expected.dtype)}, got {tuple(out.shape)} and "
                f"{_dtype_name(out.dtype)}"
            )

    return fake


# --- what Dynamo traces instead of the native function ------------------------


def _check_number(op, what, value, like):
    """A Python number standing for a tensor (ops.mul(x, 0.5)) as the native
    door takes it beside `like`: the element torch.full makes of it, or the
    eager call's refusal in its words. The rule (which op wraps, which checks
    into the dtype, what is refused) is the native side's alone
    (core/prepare/number_tensor.h)."""
    # The rules tell the cpu from any other device (a number stands for a
    # tensor on the cpu only), which 'cuda' stands for.
    device = "cpu" if like.device.type == "cpu" else "cuda"
    element, error, message = _number_rule(op.name, what, value, like.dtype, device)
    if error is not None:
        # Raised in traced code, as eager raises it: without fullgraph Dynamo
        # falls back to the eager call, which raises it again.
        raise _NUMBER_ERRORS[error](message)
    return element


# What _C._number raises, by the index _number_rule gives.
_NUMBER_ERRORS = (TypeError, OverflowError, ValueError)


def _number_rule(op_name, what, value, dtype, device):
    """_C._number on constants, as (element, None, None) or (None, index
    into _NUMBER_ERRORS, message). Dynamo cannot trace a C function: it calls
    this one once while tracing and keeps the result as a constant
    (_substitute_all marks it so); an error raised here would reach the user
    as Dynamo's own, so it comes back as a value."""
    try:
        return _C._number(op_name, what, value, _dtype_name(dtype), device), None, None
    except _NUMBER_ERRORS as e:
        return None, _NUMBER_ERRORS.index(type(e)), str(e)


def _number_as_tensor(op, what, value, like):
    """A Python number standing for a tensor where another such argument is
    a tensor (clamp(x, min=t, max=1)): a 0-dim tensor of the other operand's
    dtype, as the native door would make it."""
    if not isinstance(value, (bool, int, float)):
        return value
    value = _check_number(op, what, value, like)
    return torch.full((), value, dtype=like.dtype, device=like.device)


def _call(op, values, out, stream):
    """The body of every substitute: the custom op with the native door's
    arguments, out= returned as the native function returns it."""
    if stream is not None:
        raise TypeError(
            f"{op.name}(): stream= is not supported inside torch.compile; compiled code "
            "runs on torch's current stream (use torch.cuda.stream(...))"
        )
    packet = op.packet
    outs = out if isinstance(out, (tuple, list)) else () if out is None else (out,)
    if any(not o.is_contiguous() for o in outs):
        # Dynamo refuses a custom op's out= that is not contiguous ("Attempted
        # to call op with non-contiguous `out=` tensor"), such as a slot of a
        # KV cache: the kernel writes contiguous tensors, copied over.
        dense = [torch.empty(o.shape, dtype=o.dtype, device=o.device) for o in outs]
        _call(op, values, dense[0] if out is outs[0] else tuple(dense), stream)
        for o, d in zip(outs, dense):
            o.copy_(d)
        return out
    if op.variadic:
        return packet.default(list(values[0]))
    functional, with_out = packet.default, getattr(packet, "out", None)
    if op.numbers:
        first = values[0]
        given = [v for v, a in zip(values, op.params) if a["name"] in op.numbers and v is not None]
        if given and all(isinstance(v, (bool, int, float)) for v in given):
            # Every number-or-tensor argument is a number: the overload that
            # takes them as numbers, applied by the native function as eager
            # applies them; refused here first with eager's words.
            for v, a in zip(values, op.params):
                if a["name"] in op.numbers and v is not None:
                    _check_number(op, a["name"], v, first)
            functional, with_out = packet.number, packet.number_out
        else:
            values = [
                _number_as_tensor(op, a["name"], v, first) if a["name"] in op.numbers else v
                for v, a in zip(values, op.params)
            ]
    args = values[: len(op.positional)]
    kwargs = dict(zip(op.keyword, values[len(op.positional) :]))
    if op.writes:
        packet.default(*args, out=out, **kwargs)
        return out
    if out is None:
        return functional(*args, **kwargs)
    if len(op.out_names) == 1:
        with_out(*args, out=out, **kwargs)
        return out
    if not isinstance(out, (tuple, list)) or len(out) != len(op.out_names):
        raise TypeError(f"{op.name}(): expected out to be a tuple of {len(op.out_names)} tensors")
    packet.out(*args, **kwargs, **dict(zip(op.out_names, out)))
    return tuple(out)


def _substitute(op):
    """A Python function with the native function's signature whose body is
    _call: Dynamo inlines it wherever traced code calls the native one."""
    name = op.name.rpartition("::")[2]
    params = op.signature[len(name) + 1 : -1]
    if op.variadic:
        passed, out, stream = f"({params[1:]},)", "None", "None"
    else:
        passed = f"({', '.join(a['name'] for a in op.params)},)" if op.params else "()"
        out, stream = "out", "stream"
    # _CALL and _OP hold a capital: no argument name ([a-z_][a-z0-9_]*) can
    # shadow them.
    source = f"def {name}({params}):\n    return _CALL(_OP, {passed}, {out}, {stream})\n"
    scope = {"_CALL": _call, "_OP": op}
    exec(compile(source, f"<torchferry.library {op.name}>", "exec"), scope)  # noqa: S102
    return scope[name]


# --- registration ------------------------------------------------------------

# Kept for the process in _C's state, not only here: dropping the library
# unregisters its ops, and torch refuses to define the namespace twice, which
# a re-import of torchferry (after its modules left sys.modules) would do.
_STATE = _C._state()
if "library" not in _STATE:
    _STATE["library"] = torch.library.Library(NAMESPACE, "DEF")
    _STATE["ops"] = {}  # torchferry name -> _Op
    _STATE["substituted"] = set()  # names Dynamo has a substitute for
    _STATE["hooked"] = False  # _substitute_all runs when Dynamo loads
_LIBRARY = _STATE["library"]
OPS = _STATE["ops"]


def _register(op):
    schemas = op.torch_schemas()
    for overload, text in schemas.items():
        qualified = op.torch_name if overload == "default" else f"{op.torch_name}.{overload}"
        _LIBRARY.define(qualified + text)
        op.packet = getattr(getattr(torch.ops, NAMESPACE), op.torch_name)
        if overload == "default":
            op.defaults = {
                a.name: a.default_value
                for a in op.packet.default._schema.arguments
                if a.has_default_value()
            }
        writes_out = overload.endswith("out") or op.writes
        kernel = _out_kernel(op) if writes_out else _functional_kernel(op)
        for key in ("CPU", "CUDA"):
            _LIBRARY.impl(qualified, kernel, key)
        _LIBRARY.impl(qualified, _autograd_kernel(op, overload, writes_out), "Autograd")
        fake = _out_fake(op) if writes_out else _functional_fake(op)
        torch.library.register_fake(f"{NAMESPACE}::{qualified}", fake, lib=_LIBRARY)
    OPS[op.name] = op


def _substitute_all():
    """Gives Dynamo each native function's substitute; runs once torch._dynamo
    has loaded. A torch without the API gets a warning naming it."""
    message = _missing((REQUIRED_DYNAMO_API,))
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    torch._dynamo.assume_constant_result(_number_rule)
    done = _STATE["substituted"]
    for op in list(OPS.values()):
        if op.name in done:
            continue
        done.add(op.name)
        # This runs inside torch._dynamo's import: one op that fails here
        # must cost that op its substitute, not every torch.compile.
        try:
            torch._dynamo.substitute_in_graph(op.native)(_substitute(op))
        except Exception as e:
            warnings.warn(
                f"torchferry.library: op {op.name} has no substitute for Dynamo "
                f"({type(e).__name__}: {e}); compiled code that calls it fails",
                RuntimeWarning,
                stacklevel=2,
            )


def _when_dynamo_loads(callback):
    """Runs `callback` now if torch._dynamo is loaded, else right after its
    import (torch.compile's first call imports it). Importing it here would
    cost every `import torchferry` Dynamo's import time, several seconds on
    a small machine."""
    if "torch._dynamo" in sys.modules:
        callback()
        return
    import importlib.abc
    import importlib.util

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != "torch._dynamo":
                return None
            sys.meta_path.remove(self)  # once; and find_spec below must not find us
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                return spec
            exec_module = spec.loader.exec_module

            def exec_then_register(module):
                exec_module(module)
                callback()

            spec.loader.exec_module = exec_then_register
            return spec

    sys.meta_path.insert(0, Finder())


def _register_all():
    """Registers every op not registered yet; runs at import and again once
    torchferry has loaded its plugins (this module may be imported before)."""
    functions = _C._functions()
    for schema in _ops.schemas():
        if schema["name"] in OPS:
            continue
        try:
            _register(_Op(schema, functions[schema["name"]]))
        except Exception as e:
            # A declared schema torch's parser refuses costs that op its
            # torch.compile form, never the import or the other ops.
            warnings.warn(
                f"torchferry.library: op {schema['name']} is not a torch custom op ({e}); "
                "compiled code that calls it fails",
                RuntimeWarning,
                stacklevel=2,
            )
    if not _STATE["hooked"]:
        _STATE["hooked"] = True
        _when_dynamo_loads(_substitute_all)
    elif "torch._dynamo" in sys.modules:
        _substitute_all()


_register_all()
