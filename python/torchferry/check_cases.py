"""The cases `python -m torchferry check` runs: for each op, how to build its
arguments in each case kind, and how close a result must be.

CASE_KINDS names what a kind exercises. GENERATORS holds, per op, a function
`gen(kind, make) -> [(args, kwargs), ...]` (one call, or several that must
all hold, e.g. cast to several dtypes), or None when the kind does not apply
to the op; `make(shape)` builds a tensor of the case's dtype, device and
values in the kind's layout. An op without an entry gets `schema_generator`,
which builds arguments from the op's schema: tensors of one shape, numbers
for its scalars. Adding an op is one entry here when its arguments are more
than that, and its reference in reference.py.

Tolerances (tolerance(op, dtype), as (rtol, atol) for
torch.testing.assert_close with NaN equal to NaN): integer and bool results
must be exact; elementwise float results within about one rounding of the
dtype (TOLERANCES); ops that accumulate (accumulates(op), from the op
table through ops.schemas(): softmax, rms_norm, matmul...) within a looser
bound, as their order of summation is the kernel's
own; float64 results of ops whose reference computes in float32
(FLOAT32_REFERENCES) within float32's looser bound. These tables are the
project's one bound on a kernel's float results: the test suite's
assert_matches (TOLERANCES, or REDUCING_TOLERANCES for an accumulating op)
and bench/gpu/check_ops.py (through torchferry.check) hold kernels to them.
"""

import math

import torch

CASE_KINDS = {
    "contiguous": "row-major compact tensors",
    "transposed": "the last two dims swapped (strides not row-major)",
    "offset": "a slice with a storage offset and row padding",
    "broadcast": "an operand expanded with stride 0",
    "empty": "a dim of size 0",
    "zero_dim": "0-dim tensors",
    "alias": "out= the very input (where the op allows it)",
    "odd": "odd sizes (37 x 13)",
    "large": "about 2**17 elements",
    "special": "NaN, +-inf, -0.0, subnormals and the dtype's extremes",
}

TOLERANCES = {
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}
REDUCING_TOLERANCES = {
    torch.float32: (1e-4, 1e-4),
    torch.float64: (1e-10, 1e-10),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}
_ACCUMULATING = None  # the accumulating ops' names, read once


def accumulates(op):
    """Whether `op`'s kernel combines many terms into one result in an order
    of its own, as the op table says (ops.schemas()'s "accumulates")."""
    global _ACCUMULATING
    if _ACCUMULATING is None:
        from . import ops

        _ACCUMULATING = {s["name"] for s in ops.schemas() if s["accumulates"]}
    return op in _ACCUMULATING


# reference.py computes these in float32 (their contract asks for at least
# float32): a float64 result is held to float32's tolerance, and their
# special values are float32's without the extremes.
FLOAT32_REFERENCES = {"silu_and_mul", "rms_norm", "add_rms_norm", "softmax"}


def tolerance(op, dtype):
    """(rtol, atol) for a float result of `op` in `dtype`."""
    table = REDUCING_TOLERANCES if accumulates(op) else TOLERANCES
    if op in FLOAT32_REFERENCES and dtype == torch.float64:
        return REDUCING_TOLERANCES[torch.float32]
    return table[dtype]

# The shape each kind builds most tensors with (rows, cols).
_SHAPES = {
    "contiguous": (4, 6),
    "transposed": (5, 7),
    "offset": (5, 7),
    "broadcast": (4, 6),
    "empty": (0, 6),
    "zero_dim": (),
    "alias": (4, 6),
    "odd": (37, 13),
    "large": (512, 257),
    "special": (4, 11),
}


def special_values(dtype, extremes=True):
    """The values that break careless kernels, in `dtype`. Without `extremes`
    (for ops that sum: whether max + max - max overflows depends on the
    order of summation, which is the kernel's own) the float extremes are
    left out."""
    if dtype == torch.bool:
        return [True, False]
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        values = [math.nan, math.inf, -math.inf, -0.0, 0.0, info.tiny / 4, -info.tiny / 4, info.tiny, 1.0]
        # info.tiny / 4: a subnormal.
        return values + ([info.max, info.min] if extremes else [])
    info = torch.iinfo(dtype)
    return [info.min, info.max, 0, 1, -1 if info.min < 0 else 2]


def random_values(shape, dtype, gen):
    """Values that suit `dtype`: normal floats, small ints, random bools."""
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    low = 0 if dtype == torch.uint8 else -50
    return torch.randint(low, 50, shape, generator=gen).to(dtype)


def tensor_factory(kind, dtype, device, gen, extremes=True, special_dtype=None):
    """make(shape): a tensor of `shape` in the layout `kind` asks for. The
    special values are `special_dtype`'s (default `dtype`'s)."""

    def values(shape):
        if kind == "special":
            vals = special_values(special_dtype or dtype, extremes)
            n = math.prod(shape)
            order = torch.randperm(max(n, 1), generator=gen)[:n] % len(vals)
            flat = torch.tensor(vals, dtype=dtype)[order]
            return flat.reshape(shape)
        return random_values(shape, dtype, gen)

    def make(shape):
        shape = tuple(shape)
        if kind == "transposed" and len(shape) >= 2:
            swapped = shape[:-2] + (shape[-1], shape[-2])
            return values(swapped).to(device).transpose(-1, -2)
        if kind == "offset" and len(shape) >= 1:
            # One row and two columns more, cut off: element 0 is not the
            # storage's first and rows are padded.
            padded = (shape[0] + 1,) + shape[1:-1] + (shape[-1] + 2,) if len(shape) >= 2 else (shape[0] + 3,)
            base = values(padded).to(device)
            if len(shape) >= 2:
                return base[1:, ..., 2:]
            return base[3:]
        return values(shape).to(device)

    return make


def expanded(make, shape):
    """A tensor of `shape` whose first dim has stride 0."""
    return make((1,) + tuple(shape[1:])).expand(*shape)


def _shape(kind):
    return _SHAPES[kind]


def unary(kind, make, alias_ok=True):
    shape = _shape(kind)
    if kind == "broadcast":
        return [((expanded(make, shape),), {})]
    if kind == "alias":
        if not alias_ok:
            return None
        x = make(shape)
        return [((x,), {"out": x})]
    return [((make(shape),), {})]


def binary(kind, make):
    shape = _shape(kind)
    if kind == "broadcast":
        # Both ways: an expanded input, and an operand the host broadcasts.
        return [
            ((expanded(make, shape), make(shape)), {}),
            ((make(shape), make(shape[1:])), {}),
        ]
    if kind == "alias":
        x, y = make(shape), make(shape)
        return [((x, y), {"out": x}), ((x, y), {"out": y})]
    return [((make(shape), make(shape)), {})]


def _add(kind, make):
    calls = binary(kind, make)
    if kind == "contiguous":
        # alpha, of the input's kind (a float for float dtypes).
        x, y = calls[0][0]
        alpha = 2 if not x.dtype.is_floating_point else 0.5
        calls.append(((x, y), {"alpha": alpha}))
    return calls


def _clamp(kind, make):
    shape = _shape(kind)
    probe = make((1,))
    if probe.dtype == torch.bool:
        lo, hi = False, True
    elif probe.dtype.is_floating_point:
        lo, hi = -0.5, 0.5
    else:
        lo, hi = (2, 30) if probe.dtype == torch.uint8 else (-10, 10)
    if kind == "broadcast":
        x = make(shape)
        return [
            ((expanded(make, shape),), {"min": lo, "max": hi}),
            ((x,), {"min": make(shape[1:]), "max": None}),
        ]
    if kind == "alias":
        x = make(shape)
        return [((x,), {"min": lo, "max": hi, "out": x})]
    x = make(shape)
    return [
        ((x,), {"min": lo, "max": hi}),
        ((x,), {"min": lo}),
        ((x,), {"max": hi}),
        ((x,), {"min": make(shape), "max": None}),
    ]


def _stack(kind, make):
    if kind == "alias":
        return None
    shape = _shape(kind)
    if kind == "broadcast":
        return [(([expanded(make, shape), make(shape)],), {"dim": 1})]
    dims = [0] if not shape else [0, len(shape)]
    return [(([make(shape), make(shape), make(shape)],), {"dim": d}) for d in dims]


_CAST_TARGETS = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                 torch.int8, torch.uint8, torch.bool)


def _cast(kind, make):
    if kind == "alias":
        return None
    shape = _shape(kind)
    x = expanded(make, shape) if kind == "broadcast" else make(shape)
    targets = _CAST_TARGETS
    if kind == "special" or x.dtype.is_floating_point:
        # Float to int of a value out of the target's range is undefined in
        # C and differs between torch builds: only in-range values, or float
        # targets for the special values.
        if kind == "special":
            targets = tuple(t for t in targets if t.is_floating_point or t == torch.bool)
    return [((x,), {"out": torch.empty(x.shape, dtype=t, device=x.device)}) for t in targets]


def _silu_and_mul(kind, make):
    if kind in ("alias", "zero_dim"):
        return None
    rows, cols = _shape(kind) if kind != "empty" else (0, 6)
    shape = (rows, 2 * cols)
    if kind == "broadcast":
        return [((expanded(make, shape),), {})]
    return [((make(shape),), {})]


def _rms_norm(kind, make):
    if kind in ("alias", "zero_dim"):
        return None
    shape = _shape(kind)
    x = expanded(make, shape) if kind == "broadcast" else make(shape)
    weight = make(shape[-1:])
    return [((x, weight), {}), ((x, weight), {"eps": 1e-3})]


def _add_rms_norm(kind, make):
    # The residual is written: never a broadcast view (its own memory).
    if kind in ("alias", "zero_dim"):
        return None
    shape = _shape(kind)
    x = expanded(make, shape) if kind == "broadcast" else make(shape)
    residual, weight = make(shape), make(shape[-1:])
    return [((x, residual, weight), {}), ((x, residual, weight), {"eps": 1e-3})]


def _softmax(kind, make):
    if kind == "alias":
        return None
    shape = _shape(kind)
    x = expanded(make, shape) if kind == "broadcast" else make(shape)
    if not shape:
        return [((x,), {})]
    return [((x,), {}), ((x,), {"dim": 0})]


def _matmul(kind, make):
    if kind in ("alias", "zero_dim"):
        return None
    m, k = _shape(kind)
    n = 5 if kind != "large" else 129
    if kind == "empty":
        # An empty product (k = 0) is zeros; an empty m is an empty result.
        return [((make((3, 0)), make((0, 4))), {}), ((make((0, 6)), make((6, 4))), {})]
    if kind == "broadcast":
        b = make((k, n))
        return [((make((3, m, k)), b), {}), ((make((1, m, k)).expand(3, m, k), make((3, k, n))), {})]
    return [((make((m, k)), make((k, n))), {}), ((make((2, m, k)), make((2, k, n))), {})]


def _noop(kind, make):
    if kind in ("alias",):
        return None
    shape = _shape(kind)
    return [((make(shape), make(shape)), {})]


def _unary_no_alias(kind, make):
    return unary(kind, make, alias_ok=False)


def _linear(kind, make):
    if kind in ("alias", "zero_dim"):
        return None
    m, k = _shape(kind)
    n = 5 if kind != "large" else 129
    x = expanded(make, (m, k)) if kind == "broadcast" else make((m, k))
    weight = make((n, k))
    return [((x, weight), {}), ((x, weight, make((n,))), {}), ((make((2, m, k)), weight), {})]


def _rotary_embedding(kind, make):
    if kind == "zero_dim":
        return None
    rows, cols = _shape(kind)
    shape = (2, rows, 3, 2 * cols)  # [B, S, H, D]
    x = expanded(make, shape) if kind == "broadcast" else make(shape)
    cos, sin = make((rows, 1, cols)), make((rows, 1, cols))
    if kind == "alias":
        return [((x, cos, sin), {"out": x})]
    half = make((rows, 1, cols // 2))
    return [
        ((x, cos, sin), {}),
        ((x, cos, sin), {"interleaved": True}),
        ((x, half, make((rows, 1, cols // 2))), {}),  # a rotary dim below the head dim
    ]


def _scaled_dot_product_attention(kind, make):
    # special: an inf or NaN score makes a row's whole softmax depend on where
    # the kernel meets it in its blocked (online) sum, so it has no one answer.
    if kind in ("alias", "zero_dim", "special"):
        return None
    rows, cols = _shape(kind)
    s = max(rows, 1) + 3 if kind != "empty" else 0
    q = make((1, 4, max(rows, 1) if kind != "empty" else 0, cols))
    k, v = make((1, 2, s, cols)), make((1, 2, s, cols))
    calls = [((q, k, v), {"enable_gqa": True})]
    if kind != "empty":
        calls.append(((q, k, v), {"enable_gqa": True, "is_causal": True, "lower_right": True}))
        k4, v4 = make((1, 4, s, cols)), make((1, 4, s, cols))
        calls.append(((q, k4, v4, make((q.shape[-2], s))), {}))
    if kind == "broadcast":
        calls = [((q, k.expand(3, 2, s, cols), v.expand(3, 2, s, cols)), {"enable_gqa": True})]
    return calls


def _embedding(kind, make):
    if kind in ("alias", "special"):
        return None
    rows, cols = _shape(kind) if kind != "zero_dim" else (1, 6)
    table = make((max(rows, 1) + 5, cols))
    device = table.device
    shape = () if kind == "zero_dim" else (rows, 3)
    ids = torch.randint(0, table.shape[0], shape, device=device)
    return [((ids, table), {}), ((ids.to(torch.int32), table), {})]


def _cat(kind, make):
    if kind in ("alias", "zero_dim"):
        return None
    shape = _shape(kind)
    a = expanded(make, shape) if kind == "broadcast" else make(shape)
    wider = make(shape[:-1] + (shape[-1] + 2,))
    return [(([a, make(shape)],), {"dim": 0}), (([a, wider],), {"dim": -1})]


GENERATORS = {
    "abs": unary,
    "neg": unary,
    "exp": unary,
    "silu": unary,
    "add": _add,
    "mul": binary,
    "clamp": _clamp,
    "stack": _stack,
    "cast": _cast,
    "silu_and_mul": _silu_and_mul,
    "rms_norm": _rms_norm,
    "add_rms_norm": _add_rms_norm,
    "softmax": _softmax,
    "matmul": _matmul,
    "noop": _noop,
    "linear": _linear,
    "rotary_embedding": _rotary_embedding,
    "scaled_dot_product_attention": _scaled_dot_product_attention,
    "embedding": _embedding,
    "cat": _cat,
}


def _schema_arguments(schema):
    """[(type, name, has_default, keyword_only)] of a schema string such as
    'ns::op(Tensor x, *, float a=1.0) -> Tensor'."""
    inside = schema[schema.index("(") + 1 : schema.rindex(")", 0, schema.index("->"))]
    arguments, keyword_only = [], False
    for part in (p.strip() for p in inside.split(",")):
        if not part:
            continue
        if part == "*":
            keyword_only = True
            continue
        declaration, _, default = part.partition("=")
        type_, _, name = declaration.strip().rpartition(" ")
        arguments.append((type_.strip(), name.strip(), bool(default), keyword_only))
    return arguments


def schema_generator(schema, alias_ok=False):
    """A generator for an op from its schema alone: every tensor of one shape
    (the first expanded with stride 0 in the broadcast kind), a Tensor[] of
    two, numbers for scalars; arguments with defaults keep them."""
    arguments = _schema_arguments(schema)
    scalars = {"float": 1.5, "int": 2, "bool": True, "Scalar": 2}

    def gen(kind, make):
        shape = _shape(kind)
        args, kwargs, first = [], {}, None
        for type_, name, has_default, keyword_only in arguments:
            base = type_.rstrip("?")
            if base.startswith("Tensor["):
                value = [make(shape), make(shape)]
            elif base.startswith("Tensor"):
                value = expanded(make, shape) if kind == "broadcast" and first is None else make(shape)
                first = value if first is None else first
            elif has_default:
                continue
            elif base in scalars:
                value = scalars[base]
            else:
                return None  # a type this generator cannot make up
            if keyword_only:
                kwargs[name] = value
            else:
                args.append(value)
        if kind == "alias":
            if not alias_ok or first is None:
                return None
            kwargs["out"] = first
        return [(tuple(args), kwargs)]

    return gen
