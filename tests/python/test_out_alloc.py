"""Outputs the caller leaves out: both allocation routes give the tensor
torch.empty would (dtype, device, shape, contiguous strides, resizable
storage, no autograd), hold exactly one reference to it, and report
themselves."""

import gc
import sys
import weakref

import pytest
import torch

from torchferry import bridge, ops
from conftest import FLOAT_DTYPES, assert_matches, cpu_kernel_dtypes, dtype_id, make, same

ROUTES = ["torch.empty"] + (["direct"] if bridge.info()["out_alloc"]["reason"].startswith("CPU") else [])


@pytest.fixture(params=ROUTES)
def route(request):
    before = bridge.out_alloc()
    bridge.set_out_alloc(request.param)
    yield request.param
    bridge.set_out_alloc("auto" if before == "direct" else before)


# op -> (arguments from a dtype, the torchferry call, torch's).
CASES = {
    "add": (lambda dt: (make((3, 5), dt), make((3, 5), dt)), ops.add, torch.add),
    "abs": (lambda dt: (make((2, 3, 4), dt),), ops.abs, torch.abs),
    "matmul": (lambda dt: (make((4, 6), dt), make((6, 3), dt)), ops.matmul, torch.matmul),
    "linear": (lambda dt: (make((2, 4, 6), dt), make((5, 6), dt)), ops.linear, torch.nn.functional.linear),
    "softmax": (lambda dt: (make((3, 7), dt),), ops.softmax, lambda x: torch.softmax(x, -1)),
    "cat": (lambda dt: ([make((2, 3), dt), make((4, 3), dt)],), ops.cat, torch.cat),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", list(CASES))
def test_allocated_outputs_are_what_torch_empty_gives(route, op, dtype):
    build, call, ref = CASES[op]
    args = build(dtype)
    expected = ref(*args)
    out = call(*args)
    assert type(out) is torch.Tensor
    assert out.dtype == dtype and out.device.type == "cpu"
    assert out.shape == expected.shape and out.stride() == expected.contiguous().stride()
    assert not out.requires_grad and out.grad_fn is None
    assert bridge.out_alloc() == route
    assert_matches(out, expected, reduce=op in ("matmul", "linear", "softmax"))


@pytest.mark.parametrize(
    "shape", [(), (0,), (3, 0), (2, 1, 3), (1,) * 12, (2,) * 10], ids=str
)
def test_every_rank_and_empty_shapes(route, shape):
    x = make(shape)
    out = ops.add(x, x)
    assert out.shape == x.shape and out.stride() == torch.empty(shape).stride()
    assert same(out, x + x)


def test_integer_dtypes(route):
    # The dtypes this build's CPU plugin carries (the sanitizer builds fewer).
    added = [d for d in (torch.int8, torch.int32, torch.int64, torch.uint8, torch.bool) if d in cpu_kernel_dtypes("add")]
    joined = [d for d in (torch.uint16, torch.uint32, torch.uint64) if d in cpu_kernel_dtypes("cat")]
    assert added and joined
    for dt in added:
        x = make((4, 4), dt)
        out = ops.add(x, x)
        assert out.dtype == dt and same(out, x + x)
    for dt in joined:  # torch adds none of these
        x = make((4, 4), dt)
        out = ops.cat([x, x])
        assert out.dtype == dt and same(out, torch.cat([x, x]))


def test_the_storage_resizes_and_is_freed_with_the_tensor(route):
    x = make((1, 4096))
    out = ops.add(x, x)
    out.resize_(8, 4096)  # torch's own storage: resizable, as torch.empty's is
    out.fill_(2.0)
    assert out.sum().item() == 2.0 * 8 * 4096
    out = ops.add(x, x)
    # The name and the call's argument; CPython 3.14 on borrows the argument
    # from the frame's stack, so there only the name counts.
    assert sys.getrefcount(out) == (1 if sys.version_info >= (3, 14) else 2)
    # no at::Tensor left behind (Tensor._use_count: torch >= 2.4)
    assert getattr(out, "_use_count", lambda: 1)() == 1
    gone = weakref.ref(out)
    del out
    gc.collect()
    assert gone() is None


def test_many_large_allocations_do_not_accumulate(route):
    # 64 MiB each: a reference kept by the allocation would hold gigabytes.
    x = torch.ones(16 * 1024 * 1024)
    for _ in range(64):
        out = ops.abs(x)
        assert getattr(out, "_use_count", lambda: 1)() == 1
    assert out[-1].item() == 1.0


def test_the_route_is_reported_and_forcible():
    info = bridge.info()["out_alloc"]
    assert info["route"] == bridge.out_alloc() and info["reason"]
    before = bridge.out_alloc()
    try:
        bridge.set_out_alloc("torch.empty")
        assert bridge.out_alloc() == "torch.empty"
        bridge.set_out_alloc("auto")
        assert bridge.out_alloc() == ROUTES[-1]
    finally:
        bridge.set_out_alloc("auto" if before == "direct" else before)


@pytest.mark.parametrize("name", ["fast", "", "Direct"])
def test_unknown_route_is_a_value_error(name):
    with pytest.raises(ValueError, match="expected 'auto', 'direct' or 'torch.empty'"):
        bridge.set_out_alloc(name)


def test_a_route_that_is_not_a_str_is_a_type_error():
    with pytest.raises(TypeError, match="expected a str"):
        bridge.set_out_alloc(1)
