"""Eight Python threads calling ops at once on shared inputs and private
outputs: large calls release the GIL, small ones keep it. Results must be
right and the path counters exact afterwards."""

import threading

import torch
import torch.nn.functional as F

from torchferry import bridge, ops
from conftest import assert_matches, counts_delta, make

THREADS = 8
ROUNDS = 6
BIG = 160 * 512  # above the 65536 elements at which a call drops the GIL


def run_threads(work):
    """Runs work(index) on THREADS threads released together; re-raises the
    first failure."""
    barrier = threading.Barrier(THREADS)
    errors = []

    def body(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


def expect_counts(path, before, tensors):
    d = counts_delta(before, bridge.path_counts())
    assert d[path] == tensors, d
    assert d["shim" if path == "offset" else "offset"] == 0, d
    shim = tensors if path == "shim" else 0
    assert d["shim_handles_created"] == d["shim_handles_deleted"] == shim, d


def test_large_calls_on_shared_inputs(path):
    x, y = make((BIG,)), make((BIG,))
    w = make((512,))
    xs = make((BIG // 512, 512))
    expected = {
        "add": torch.add(x, y, alpha=0.5),
        "mul": x * y,
        "silu": F.silu(x),
        "clamp": torch.clamp(x, -0.5, 0.5),
        "rms_norm": xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
        "softmax": torch.softmax(xs, -1),
    }
    outs = [{k: torch.empty_like(v) for k, v in expected.items()} for _ in range(THREADS)]

    def work(i):
        o = outs[i]
        for _ in range(ROUNDS):
            ops.add(x, y, 0.5, out=o["add"])
            ops.mul(x, y, out=o["mul"])
            ops.silu(x, out=o["silu"])
            ops.clamp(x, -0.5, 0.5, out=o["clamp"])
            ops.rms_norm(xs, w, out=o["rms_norm"])
            ops.softmax(xs, out=o["softmax"])

    before = bridge.path_counts()
    run_threads(work)
    # per round: add 3, mul 3, silu 2, clamp 2, rms_norm 3, softmax 2
    expect_counts(path, before, THREADS * ROUNDS * 15)
    for o in outs:
        for k, v in expected.items():
            assert_matches(o[k], v, reduce=k in ("rms_norm", "softmax"))


def test_small_and_large_calls_mixed(path):
    small_x = make((16,))
    big_x = make((BIG,))
    a, b = make((64, 96)), make((96, 64))
    results = [dict() for _ in range(THREADS)]

    def work(i):
        r = results[i]
        for n in range(ROUNDS * 4):
            r["neg"] = ops.neg(small_x)  # allocated out, GIL kept
            r["abs"] = ops.abs(big_x)  # allocated out, GIL released
            r["stack"] = ops.stack([small_x, small_x * 0 + i, small_x], 1)  # noqa: F841
            if n % 4 == 0:
                r["matmul"] = ops.matmul(a, b)

    before = bridge.path_counts()
    run_threads(work)
    per_thread = ROUNDS * 4 * (2 + 2 + 4) + ROUNDS * 3
    expect_counts(path, before, THREADS * per_thread)
    for i, r in enumerate(results):
        assert_matches(r["neg"], -small_x)
        assert_matches(r["abs"], big_x.abs())
        assert_matches(r["stack"], torch.stack([small_x, torch.full((16,), float(i)), small_x], 1))
        assert_matches(r["matmul"], a @ b, reduce=True)


def test_threads_on_one_in_place_tensor_each(path):
    # Every thread owns a slice of one buffer and updates it in place.
    buf = make((THREADS, BIG))
    start = buf.clone()

    def work(i):
        row = buf[i]
        for _ in range(ROUNDS):
            ops.neg(row, out=row)
        ops.add(row, row, out=row)

    before = bridge.path_counts()
    run_threads(work)
    expect_counts(path, before, THREADS * (ROUNDS * 2 + 3))
    assert_matches(buf, start * 2)  # an even number of negations
