"""embedding: int32/int64 ids of any shape and layout pick rows of a 2-D table
of any carried dtype, as torch.nn.functional.embedding does; an id outside
the table is an IndexError that names it, its index and the table size, and
leaves out untouched."""

import json
import re

import pytest
import torch
import torch.nn.functional as F

from torchferry import ops
from conftest import needs_aten, assert_matches, conversions, cpu_kernel_dtypes, dtype_id, make, run_python


def dtypes():
    return [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes("embedding")]


ID_DTYPES = [pytest.param(torch.int64, id="int64"), pytest.param(torch.int32, id="int32")]

ID_SHAPES = [(), (5,), (3, 4), (2, 3, 2), (0,), (2, 0, 3)]


def test_embedding_carries_every_dtype():
    assert len(cpu_kernel_dtypes("embedding")) == 13


@pytest.mark.parametrize("shape", ID_SHAPES, ids=lambda s: "x".join(map(str, s)) or "scalar")
@pytest.mark.parametrize("id_dtype", ID_DTYPES)
@pytest.mark.parametrize("dtype", dtypes())
def test_embedding_matches_torch(path, dtype, id_dtype, shape):
    table = make((7, 5), dtype)
    ids = torch.randint(0, 7, shape, dtype=id_dtype)
    with conversions(path, 3):
        out = ops.embedding(ids, table)
    assert_matches(out, F.embedding(ids.long(), table))


IDS_LAYOUTS = {
    "transposed": lambda: torch.randint(0, 9, (4, 3)).t(),
    "offset": lambda: torch.randint(0, 9, (5, 6))[1:4, 2:5],
    "step": lambda: torch.randint(0, 9, (12,))[::3],
    "expanded": lambda: torch.randint(0, 9, (1, 4)).expand(3, 4),
}
TABLE_LAYOUTS = {
    "contiguous": lambda dt: make((9, 6), dt),
    "transposed": lambda dt: make((6, 9), dt).t(),
    "offset": lambda dt: make((11, 8), dt)[1:10, 2:8],
    "expanded_rows": lambda dt: make((1, 6), dt).expand(9, 6),
}


@pytest.mark.parametrize("ids_layout", list(IDS_LAYOUTS))
@pytest.mark.parametrize("table_layout", list(TABLE_LAYOUTS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int8])
def test_embedding_strided_inputs_and_out(path, dtype, ids_layout, table_layout):
    ids = IDS_LAYOUTS[ids_layout]()
    table = TABLE_LAYOUTS[table_layout](dtype)
    expected = F.embedding(ids, table)
    with conversions(path, 3):
        assert_matches(ops.embedding(ids, table), expected)
    # into a strided out: the last dim not the innermost
    out = torch.empty(expected.shape[::-1], dtype=dtype).permute(*range(expected.dim() - 1, -1, -1))
    with conversions(path, 3):
        assert ops.embedding(ids, table, out=out) is out
    assert_matches(out, expected)


def test_embedding_keywords_and_a_large_call(path):
    table = make((1000, 256))
    ids = torch.randint(0, 1000, (4, 128))
    with conversions(path, 3):
        out = ops.embedding(input=ids, weight=table)
    assert_matches(out, F.embedding(ids, table))


def test_embedding_empty_table_dim(path):
    table = make((4, 0))
    ids = torch.tensor([1, 3])
    assert_matches(ops.embedding(ids, table), F.embedding(ids, table))


@pytest.mark.parametrize("id_dtype", ID_DTYPES)
@pytest.mark.parametrize(
    "ids,bad,where",
    [
        ([0, 7, 2], 7, "[1]"),
        ([[0, 1], [2, -1]], -1, "[1, 1]"),
        ([[3, 9], [12, 0]], 9, "[0, 1]"),
        (8, 8, "[]"),
    ],
)
def test_embedding_out_of_range_id_names_it(id_dtype, ids, bad, where):
    table = make((7, 3))
    ids = torch.tensor(ids, dtype=id_dtype)
    out = torch.full(ids.shape + (3,), 5.0)
    message = (
        f"embedding: id {bad} at index {re.escape(where)} is out of range for a table of 7 rows "
        r"\(expected 0 <= id < 7\)"
    )
    with pytest.raises(IndexError, match=message):
        ops.embedding(ids, table, out=out)
    assert torch.equal(out, torch.full_like(out, 5.0)), "a bad id wrote out"
    with pytest.raises(IndexError, match="out of range"):
        F.embedding(ids.long(), table)  # torch agrees it is an IndexError


def test_embedding_any_id_is_out_of_range_for_an_empty_table():
    with pytest.raises(IndexError, match="id 0 at index \\[0\\] is out of range for a table of 0 rows"):
        ops.embedding(torch.tensor([0]), torch.empty(0, 4))


@pytest.mark.parametrize(
    "ids,table,error,message",
    [
        (torch.tensor([0.0]), torch.randn(3, 2), TypeError,
         r"embedding\(\): expected input \(the ids\) to have dtype int32 or int64, got float32"),
        (torch.tensor([0], dtype=torch.int16), torch.randn(3, 2), TypeError, "got int16"),
        (torch.tensor([0]), torch.randn(6), ValueError,
         r"expected weight to be 2-D \[num_embeddings, embedding_dim\], got shape \[6\]"),
        (torch.tensor([0]), torch.randn(2, 3, 4), ValueError, r"got shape \[2, 3, 4\]"),
        (torch.zeros((1,) * 64, dtype=torch.int64), torch.randn(3, 2), ValueError,
         "expected input of at most 63 dims, got 64"),
    ],
)
def test_embedding_bad_arguments(ids, table, error, message):
    with pytest.raises(error, match=message):
        ops.embedding(ids, table)


def test_embedding_checks_out():
    ids, table = torch.tensor([[1, 2]]), torch.randn(3, 4)
    with pytest.raises(ValueError, match=r"expected out of shape \[1, 2, 4\], got \[2, 4\]"):
        ops.embedding(ids, table, out=torch.empty(2, 4))
    with pytest.raises(TypeError, match="expected out to have dtype float32, got float64"):
        ops.embedding(ids, table, out=torch.empty(1, 2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="overlap"):
        ops.embedding(ids, table, out=table[:2].view(1, 2, 4))
    big = torch.randn(8, 4)
    with pytest.raises(ValueError, match="overlap"):
        ops.embedding(torch.tensor([[0, 1]]), big[:3], out=big[2:4].view(1, 2, 4))


def test_embedding_bumps_the_version_and_refuses_grad():
    ids, table = torch.tensor([0, 2]), torch.randn(3, 4)
    out = torch.empty(2, 4)
    v = out._version
    ops.embedding(ids, table, out=out)
    assert out._version == v + 1
    with pytest.raises(RuntimeError, match="requires grad"):
        ops.embedding(ids, table.requires_grad_())


@pytest.mark.subprocess
@needs_aten
def test_embedding_on_the_aten_fallback():
    r = run_python(
        """
        import json, torch, torch.nn.functional as F
        from torchferry import ops, plugins
        assert plugins.kernel_for("embedding", "cpu", "float32") == "aten"
        table = torch.randn(9, 6)
        ok = []
        for ids in (torch.randint(0, 9, (3, 4)), torch.randint(0, 9, (4, 3), dtype=torch.int32).t(),
                    torch.tensor(5), torch.empty(0, dtype=torch.int64)):
            ok.append(torch.equal(ops.embedding(ids, table), F.embedding(ids.long(), table)))
        out = torch.empty(6, 3).t()
        ops.embedding(torch.tensor([1, 2, 3]), table, out=out)
        ok.append(torch.equal(out, table[1:4]))
        out = torch.full((2, 2, 6), 5.0)
        try:
            ops.embedding(torch.tensor([[0, 1], [9, 2]]), table, out=out)
            error = None
        except IndexError as e:
            error = str(e)
        print(json.dumps({"ok": ok, "error": error, "untouched": bool((out == 5).all())}))
        """,
        TORCHFERRY_PLUGINS="aten",
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["ok"] == [True] * 5
    assert got["error"] == (
        "aten: embedding(): embedding on cpu: embedding: id 9 at index [1, 0] is out of range for a table of 9 rows "
        "(expected 0 <= id < 9)"
    )
    assert got["untouched"]
