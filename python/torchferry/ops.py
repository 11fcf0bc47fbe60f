"""The ops. Each takes tensors first, then attributes, then the keyword-only
`out=` (allocated when omitted, except for `cast`) and `stream=` (CUDA only:
a torch.cuda.Stream or a raw handle; torch's current stream by default).

Every op is one entry in the host's op table; `schemas()` lists them, and each
function carries its signature (`inspect.signature(torchferry.ops.add)`).
Ops that plugins declare (ABI 1.1) live under their namespace:
`acme::fused_gelu` is `torchferry.ops.acme.fused_gelu`.
The functions are the native ones themselves: a call goes from Python straight
into C++ with no Python frame in between.
"""

from . import _C, _require_started

_require_started()  # a bad TORCHFERRY_BRIDGE or TORCHFERRY_TENSOR_META


def schemas():
    """One dict per op, in the op table's order: name, schema (torch's schema
    language), signature (as Python sees it), doc, dtypes (torch's names
    of exactly the dtypes the default plugins serve on the CPU, e.g.
    'float32', 'bool', 'uint16'; an op that lists only float dtypes refuses
    the others), aliasing ('exact': out may be the very same
    view as an input; 'none'), contract (what a kernel receives),
    declared_by (None for built-in ops), since (the ABI minor that brought a
    built-in op) and accumulates (True where the kernel combines many terms
    into one result in an order of its own: softmax, rms_norm, matmul...)."""
    return _C._schemas()


class Namespace:
    """The ops one plugin namespace declared (ABI 1.1): torchferry.ops.acme
    holds acme::fused_gelu as .fused_gelu."""

    def __init__(self, name):
        # Stored as _Namespace__name: an op name ([a-z_][a-z0-9_]*) cannot
        # take it.
        self.__name = name

    def __repr__(self):
        ops = ", ".join(sorted(k for k in vars(self) if k != "_Namespace__name"))
        return f"<torchferry.ops.{self.__name}: {ops}>"


def _Export():
    """Puts every op the registry holds into this module and returns the
    names for __all__. It runs again once torchferry has loaded its plugins,
    because an entry point's module may import this one before that. Its
    name holds a capital so that no plugin namespace can be called so."""
    scope = globals()
    functions = _C._functions()
    exported = {"schemas"}
    for s in _C._schemas():
        fn = functions[s["name"]]
        namespace, _, name = s["name"].rpartition("::")
        if not namespace:
            scope[name] = fn
            exported.add(name)
            continue
        if not isinstance(scope.get(namespace), Namespace):
            scope[namespace] = Namespace(namespace)
        exported.add(namespace)
        setattr(scope[namespace], name, fn)
    return sorted(exported)


__all__ = _Export()
