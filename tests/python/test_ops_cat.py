"""cat: torch.cat's rules on one dtype (every dim, every carried dtype, mixed
layouts, empty and legacy 1-D empty tensors), and every refusal with its
message."""

import json

import pytest
import torch

from torchferry import ops
from conftest import needs_aten, MyT, assert_matches, conversions, cpu_kernel_dtypes, dtype_id, make, plain, run_python


def dtypes():
    return [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes("cat")]


def test_cat_carries_every_dtype():
    assert len(cpu_kernel_dtypes("cat")) == 13


CASES = [
    pytest.param(shape, dim, id=f"{'x'.join(map(str, shape))}-dim{dim}")
    for shape in [(5,), (3, 4), (2, 3, 4), (0, 3)]
    for dim in range(-len(shape), len(shape))
]


@pytest.mark.parametrize("shape,dim", CASES)
@pytest.mark.parametrize("dtype", dtypes())
def test_cat_every_dim(path, dtype, shape, dim):
    # sizes at dim differ between the inputs: 1, 2 and 0
    xs = []
    for size in (1, 2, 0):
        s = list(shape)
        s[dim] = size
        xs.append(make(s, dtype))
    with conversions(path, 4):
        out = ops.cat(xs, dim)
    assert_matches(out, torch.cat(xs, dim))
    with conversions(path, 4):
        out = ops.cat(tuple(xs), dim=dim)
    assert_matches(out, torch.cat(xs, dim))


def test_cat_default_dim_and_single_tensor(path):
    x = make((2, 3))
    with conversions(path, 2):
        assert_matches(ops.cat([x]), torch.cat([x]))
    with conversions(path, 3):
        assert_matches(ops.cat(tensors=[x, x]), torch.cat([x, x]))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_cat_mixed_layouts_into_strided_out(path, dtype, dim):
    def sized(shape, n):
        s = list(shape)
        s[dim] = n
        return s

    xs = [
        make(sized((3, 4), 2), dtype),
        make(sized((3, 4), 2)[::-1], dtype).t(),
        make((6, 7), dtype)[1:, 2:][: sized((3, 4), 3)[0], : sized((3, 4), 3)[1]],
        make((1, 1), dtype).expand(*sized((3, 4), 1)),
        make(sized((3, 4), 2), dtype).as_subclass(MyT),
    ]
    expected = torch.cat([plain(x) for x in xs], dim)
    out = torch.empty(expected.shape[::-1], dtype=dtype).t()
    with conversions(path, len(xs) + 1):
        assert ops.cat(xs, dim, out=out) is out
    assert_matches(out, expected)


def test_cat_many_tensors_and_a_large_call(path):
    xs = [make((4096, 2)) for _ in range(40)]
    with conversions(path, 41):
        assert_matches(ops.cat(xs, 1), torch.cat(xs, 1))
    with conversions(path, 41):
        assert_matches(ops.cat(xs, 0), torch.cat(xs, 0))


def test_cat_the_same_tensor_twice(path):
    x = make((2, 3), torch.int32)
    with conversions(path, 3):
        assert_matches(ops.cat([x, x], 1), torch.cat([x, x], 1))


def test_cat_legacy_empty_tensors_are_left_out(path):
    # torch lets a 1-D tensor of size 0 sit beside tensors of any rank.
    x = make((2, 3))
    e = torch.empty(0)
    for xs, dim in [([e, x], 1), ([x, e, x], 0), ([e, e], 0), ([e, make((3,))], 0), ([e, x, e], -1)]:
        assert_matches(ops.cat(xs, dim), torch.cat(xs, dim))


def test_cat_empty_result(path):
    xs = [make((0, 3)), make((0, 3))]
    assert_matches(ops.cat(xs, 0), torch.cat(xs, 0))
    xs = [make((2, 0)), make((2, 0))]
    assert_matches(ops.cat(xs, 1), torch.cat(xs, 1))


@pytest.mark.parametrize(
    "xs,dim,error,message",
    [
        ([], 0, ValueError, r"cat\(\): expected a non-empty list of tensors"),
        (torch.randn(3), 0, TypeError, r"cat\(\): expected tensors to be a list or tuple of tensors, got Tensor"),
        ([torch.randn(2), torch.randn(2, dtype=torch.float64)], 0, TypeError, r"tensors\[1\].*dtype"),
        ([torch.randn(())], 0, ValueError,
         r"cat\(\): zero-dimensional tensor \(at position 0\) cannot be concatenated"),
        ([torch.randn(2, 3), torch.randn(())], 0, ValueError, r"zero-dimensional tensor \(at position 1\)"),
        ([torch.randn(2, 3), torch.randn(2, 3, 1)], 0, ValueError,
         r"cat\(\): tensors must have the same number of dimensions: got 2 and 3 "
         r"\(tensors\[1\] has shape \[2, 3, 1\]\)"),
        ([torch.randn(2, 3), torch.randn(2, 4)], 0, ValueError,
         r"cat\(\): sizes of tensors must match except in dimension 0; expected size 3 but got size 4 "
         r"for tensors\[1\] \(shape \[2, 4\]\) at dimension 1"),
        ([torch.randn(2, 3)], 2, IndexError,
         r"cat\(\): dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
        ([torch.randn(2, 3)], -3, IndexError, r"but got -3"),
        ([torch.randn(2), 3], 0, TypeError, "tensors\\[1\\]"),
    ],
)
def test_cat_refusals(xs, dim, error, message):
    with pytest.raises(error, match=message):
        ops.cat(xs, dim)
    if "dtype" not in message:  # torch promotes dtypes; it refuses the rest too
        with pytest.raises(Exception):
            torch.cat(xs, dim)


def test_cat_checks_out():
    x = torch.randn(2, 3)
    with pytest.raises(ValueError, match=r"expected out of shape \[4, 3\], got \[2, 3\]"):
        ops.cat([x, x], out=torch.empty(2, 3))
    big = torch.randn(4, 3)
    with pytest.raises(ValueError, match="overlaps an input"):
        ops.cat([big[:1], big[1:2]], out=big[:2])
    out = torch.empty(4, 3)
    v = out._version
    ops.cat([x, x], out=out)
    assert out._version == v + 1
    with pytest.raises(RuntimeError, match="requires grad"):
        ops.cat([x, x.clone().requires_grad_()])


@pytest.mark.subprocess
@needs_aten
def test_cat_on_the_aten_fallback():
    r = run_python(
        """
        import json, torch
        from torchferry import ops, plugins
        assert plugins.kernel_for("cat", "cpu", "float32") == "aten"
        x, y = torch.randn(2, 3), torch.randn(4, 3).t()
        ok = [torch.equal(ops.cat([x, y[:, :2].t()], 0), torch.cat([x, y[:, :2].t()], 0)),
              torch.equal(ops.cat([x, x, torch.empty(0)], 1), torch.cat([x, x, torch.empty(0)], 1))]
        out = torch.empty(3, 4).t()
        ops.cat([x, x], 0, out=out)
        ok.append(torch.equal(out, torch.cat([x, x])))
        print(json.dumps(ok))
        """,
        TORCHFERRY_PLUGINS="aten",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [True] * 3
