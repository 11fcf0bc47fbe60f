"""torch.compile and eager agree on Python numbers: where an eager call
refuses a number (a float on an int tensor, an int on a bool tensor, an int
that does not fit the dtype), the compiled call raises the same error, never
a result computed on the number truncated to the tensor's dtype; where eager
computes, compiled code gives the same bits. Dynamo traces with the
aot_eager backend here: the question is what the traced substitute does, not
what inductor generates."""

import pytest
import torch

from torchferry import ops


def ints(dtype=torch.int32):
    return torch.arange(-3, 5, dtype=dtype)


CASES = {
    "add_float_on_int32": (lambda t: ops.add(t, 0.5), lambda: ints()),
    "add_float_alpha_number_on_int64": (lambda t: ops.add(t, 2.5), lambda: ints(torch.int64)),
    "clamp_float_min_on_int32": (lambda t: ops.clamp(t, min=1.5), lambda: ints()),
    "clamp_float_max_on_uint8": (lambda t: ops.clamp(t, max=2.5), lambda: ints().abs().to(torch.uint8)),
    "mul_int_on_bool": (lambda t: ops.mul(t, 2), lambda: ints() > 0),
    "add_float_on_bool": (lambda t: ops.add(t, 1.0), lambda: ints() > 0),
    "add_int_past_int8": (lambda t: ops.add(t, 300), lambda: ints(torch.int8)),
    "mul_negative_on_uint8": (lambda t: ops.mul(t, -3), lambda: ints().abs().to(torch.uint8)),
    "mul_int_on_int16": (lambda t: ops.mul(t, 7), lambda: ints(torch.int16)),
    "mul_bool_on_bool": (lambda t: ops.mul(t, True), lambda: ints() > 0),
    "mul_float_on_float32": (lambda t: ops.mul(t, 0.3), lambda: torch.linspace(-2, 2, 9)),
    "add_int_on_float64": (lambda t: ops.add(t, 3), lambda: torch.linspace(-2, 2, 9, dtype=torch.float64)),
    "clamp_ints_on_int64": (lambda t: ops.clamp(t, -1, 2), lambda: ints(torch.int64)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_and_eager_agree(name):
    fn, make = CASES[name]
    x = make()
    try:
        want = fn(x)
    except Exception as e:  # noqa: BLE001  (whatever eager raises, compiled must too)
        want = e
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
    if isinstance(want, Exception):
        with pytest.raises(Exception) as got:
            compiled(make())
        # Dynamo may wrap what the traced code raised; the error is eager's.
        chain, e = [], got.value
        while e is not None:
            chain.append(e)
            e = e.__cause__ or e.__context__
        assert any(type(e) is type(want) and str(want) in str(e) for e in chain) or str(want) in str(
            got.value
        ), f"eager: {want!r}\ncompiled: {got.value!r}"
        return
    result = compiled(make())
    assert result.dtype == want.dtype and torch.equal(result, want), (result, want)
