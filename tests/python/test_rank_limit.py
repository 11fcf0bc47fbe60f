"""One rank limit: every tensor of up to TF_MAX_NDIM (64) dims reaches a
kernel that serves it, and a deeper one is refused by the host, naming the
limit, before any kernel sees the call. Ranks between the old limits of the
CPU kernels (8) and the core (16) and the ABI's (64) are the cases that used
to reach a kernel that refused them; they are compared with torch here."""

import pytest
import torch
import torch.nn.functional as F

from torchferry import _C, ops
from conftest import assert_matches, path, rms_norm_ref, run_python  # noqa: F401  (fixture)

# abi/torchferry.h's TF_MAX_NDIM, as the host was built with it.
TF_MAX_NDIM = _C.MAX_NDIM


def test_the_limit_is_the_abis():
    """The contract's number (abi/ABI.md): a change to it is an ABI change."""
    assert TF_MAX_NDIM == 64


def deep(rank, dtype=torch.float32, twos=8, seed=0):
    """A rank-`rank` tensor with `twos` dims of size 2 spread among 1s, its
    dims reversed in memory so that no two of them merge: the kernels' strided
    walk, not a contiguous shortcut."""
    shape = [1] * rank
    for i in range(min(twos, rank)):
        shape[(i * 7) % rank] = 2
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(list(reversed(shape)), generator=g) * 4
    return base.to(dtype).permute(*reversed(range(rank)))


RANKS = [9, 10, 17, 33, TF_MAX_NDIM]


@pytest.mark.parametrize("rank", RANKS)
def test_elementwise_at_every_rank(path, rank):
    x, y = deep(rank, seed=1), deep(rank, seed=2)
    assert_matches(ops.abs(x), torch.abs(x))
    assert_matches(ops.add(x, y), x + y)
    assert_matches(ops.mul(x, 0.5), x * 0.5)
    assert_matches(ops.clamp(x, -1.0, 1.0), torch.clamp(x, -1.0, 1.0))
    assert_matches(ops.cast(x, out=torch.empty(x.shape, dtype=torch.float16)), x.to(torch.float16))


@pytest.mark.parametrize("rank", RANKS)
def test_reductions_at_every_rank(path, rank):
    x = deep(rank, seed=3)
    w = torch.randn(x.shape[-1])
    assert_matches(ops.softmax(x, 0), torch.softmax(x, 0), reduce=True)
    assert_matches(ops.rms_norm(x, w), rms_norm_ref(x, (x.shape[-1],), w, eps=1e-6), reduce=True)


@pytest.mark.parametrize("rank", [10, 17, TF_MAX_NDIM - 1])
@pytest.mark.parametrize("table_dtype", [torch.uint8, torch.float32, torch.bfloat16])
def test_embedding_ids_at_every_rank(path, rank, table_dtype):
    """The fuzzer's find: ids of rank 10 on a uint8 table were accepted by the
    host and refused by the CPU kernel (8 dims at most)."""
    ids = (deep(rank, seed=4).abs() * 2).to(torch.int64) % 5
    table = (torch.arange(15) % 7).to(table_dtype).reshape(5, 3)
    assert_matches(ops.embedding(ids, table), F.embedding(ids, table))


@pytest.mark.parametrize("rank", [10, 17, TF_MAX_NDIM - 1])
def test_cat_and_stack_at_every_rank(path, rank):
    a, b = deep(rank, seed=5), deep(rank, seed=6)
    assert_matches(ops.cat([a, b], 3), torch.cat([a, b], 3))
    assert_matches(ops.stack([a, b], 1), torch.stack([a, b], 1))


@pytest.mark.parametrize("rank", [10, 17, TF_MAX_NDIM])
def test_matmul_at_every_rank(path, rank):
    a = deep(rank, seed=7)
    b = torch.randn(a.shape[-1], 3)
    assert_matches(ops.matmul(a, b), torch.matmul(a, b), reduce=True)


def refused(call, rank):
    with pytest.raises(ValueError) as e:
        call()
    text = str(e.value)
    assert f"has {rank} dims" in text and f"at most {TF_MAX_NDIM} dims" in text, text


def test_deeper_than_the_limit_is_refused_by_the_host(path):
    x = torch.ones([1] * (TF_MAX_NDIM + 1))
    refused(lambda: ops.abs(x), TF_MAX_NDIM + 1)
    refused(lambda: ops.add(torch.ones(1), x), TF_MAX_NDIM + 1)
    refused(lambda: ops.abs(torch.ones(1), out=x), TF_MAX_NDIM + 1)
    refused(lambda: ops.cat([torch.ones([1] * 3), x]), TF_MAX_NDIM + 1)
    ids = torch.zeros([1] * (TF_MAX_NDIM + 1), dtype=torch.long)
    refused(lambda: ops.embedding(ids, torch.ones(2, 2)), TF_MAX_NDIM + 1)
    refused(lambda: ops.noop(x), TF_MAX_NDIM + 1)
    # ids of TF_MAX_NDIM dims make an out of one more: refused with the limit
    # named too.
    with pytest.raises(ValueError, match=str(TF_MAX_NDIM)):
        ops.embedding(torch.zeros([1] * TF_MAX_NDIM, dtype=torch.long), torch.ones(2, 2))


def test_the_fuzz_find_in_its_own_process():
    """Ids of rank 10 on a uint8 table, in a fresh interpreter."""
    r = run_python(
        """
        import torch, torch.nn.functional as F, torchferry
        ids = torch.randint(0, 4, [1, 2, 1, 2, 1, 1, 2, 1, 1, 2]).permute(*reversed(range(10)))
        table = torch.arange(12, dtype=torch.uint8).reshape(4, 3)
        assert torch.equal(torchferry.ops.embedding(ids, table), F.embedding(ids, table))
        print("OK")
        """
    )
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr
