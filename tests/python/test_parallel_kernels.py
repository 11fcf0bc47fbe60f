"""The CPU plugin's kernels split large calls over the host's threads
(tf_host_api.parallel_for) only over independent outputs, so a call gives
bit-identical results at 1, 2 and 3 threads (3 oversubscribes a 2-core
machine) and still matches torch. Every shape here is above the plugin's
grain (plugins/cpu/parallel.h: 1 << 16 element steps) and not a multiple of
any share count, so a split that dropped or repeated a share, or cut a
vector loop differently, would show. With torch.set_num_threads(1) the
kernels run on the calling thread alone."""

import os
import subprocess
import sys
import threading
import time

import pytest
import torch

from torchferry import ops
from torchferry.reference import REFERENCES
from conftest import make

THREADS = (1, 2, 3)
ROWS, COLS = 257, 1031  # 264967 elements, a prime number of columns


def elementwise(op, dt):
    x, y = make((ROWS, COLS), dt), make((ROWS, COLS), dt)
    if op in ("abs", "neg", "exp", "silu"):
        return (lambda: getattr(ops, op)(x)), REFERENCES[op](x), op in ("abs", "neg")
    if op == "add":
        return (lambda: ops.add(x, y)), torch.add(x, y), True
    if op == "mul":
        return (lambda: ops.mul(x, y)), torch.mul(x, y), True
    if op == "add_strided":  # the strided walk, split mid-run
        xt = make((COLS, ROWS), dt).t()
        return (lambda: ops.add(xt, y)), torch.add(xt, y), True
    if op == "add_broadcast":
        row = make((1, COLS), dt)
        return (lambda: ops.add(x, row)), torch.add(x, row), True
    if op == "clamp":
        lo, hi = make((ROWS, COLS), dt), make((1, COLS), dt)
        return (lambda: ops.clamp(x, lo, hi)), torch.minimum(torch.maximum(x, lo), hi), True
    raise AssertionError(op)


def case(op, dt):
    """(call, torch's result, exact?) for a call above the grain."""
    if op in ("abs", "neg", "exp", "silu", "add", "mul", "add_strided", "add_broadcast", "clamp"):
        return elementwise(op, dt)
    if op == "cast":
        x = make((ROWS, COLS), dt)
        return (lambda: ops.cast(x, out=torch.empty(x.shape, dtype=torch.float64))), x.double(), True
    if op == "silu_and_mul":
        x = make((ROWS, 2 * COLS), dt)
        return (lambda: ops.silu_and_mul(x)), REFERENCES[op](x), False
    if op == "rms_norm":
        x, w = make((COLS, ROWS), dt), make((ROWS,), dt)
        return (lambda: ops.rms_norm(x, w)), REFERENCES[op](x, w), False
    if op == "add_rms_norm":
        x, r, w = make((COLS, ROWS), dt), make((COLS, ROWS), dt), make((ROWS,), dt)
        expected = REFERENCES[op](x, r.clone(), w)
        return (lambda: ops.add_rms_norm(x, r.clone(), w)), expected, False
    if op == "softmax":
        x = make((COLS, ROWS), dt)
        return (lambda: ops.softmax(x)), REFERENCES[op](x), False
    if op == "softmax_dim0":  # lines across rows: several columns at once
        x = make((ROWS, COLS), dt)
        return (lambda: ops.softmax(x, 0)), torch.softmax(x.float(), 0).to(dt), False
    if op == "linear_1":  # one row: split over columns of the weight
        x, w, b = make((1, 1024), dt), make((4099, 1024), dt), make((4099,), dt)
        return (lambda: ops.linear(x, w, b)), REFERENCES["linear"](x, w, b), False
    if op == "linear_8":
        x, w = make((8, 1024), dt), make((1031, 1024), dt)
        return (lambda: ops.linear(x, w, None)), REFERENCES["linear"](x, w, None), False
    if op == "linear_64":
        x, w = make((64, 512), dt), make((1031, 512), dt)
        return (lambda: ops.linear(x, w, None)), REFERENCES["linear"](x, w, None), False
    if op == "matmul_kn_batch":  # shares that span two products' columns
        a, b = make((2, 8, 1024), dt), make((2, 1024, 1031), dt)
        return (lambda: ops.matmul(a, b)), REFERENCES["matmul"](a, b), False
    if op == "matmul_kn_out_t":  # each share's private columns copied to a strided out
        a, b = make((8, 1024), dt), make((1024, 1031), dt)

        def call():
            out = torch.empty(1031, 8, dtype=dt).t()
            return ops.matmul(a, b, out=out)

        return call, REFERENCES["matmul"](a, b), False
    if op.startswith("matmul_kn_"):  # a few rows @ a contiguous [K, N]: GemmRows' tiles
        m = int(op.rsplit("_", 1)[1])
        a, b = make((m, 1024), dt), make((1024, 4099), dt)
        return (lambda: ops.matmul(a, b)), REFERENCES["matmul"](a, b), False
    if op == "matmul_rows":  # more rows than columns: split over rows
        a, b = make((1031, 256), dt), make((256, 200), dt)
        return (lambda: ops.matmul(a, b)), REFERENCES["matmul"](a, b), False
    if op == "matmul_batch":
        a, b = make((3, 100, 256), dt), make((3, 256, 301), dt)
        return (lambda: ops.matmul(a, b)), REFERENCES["matmul"](a, b), False
    if op.startswith("matmul_rows_"):  # row blocks of 96 and a last one of 1 or 8
        m = {"matmul_rows_97": 97, "matmul_rows_200": 200}[op]
        a, b = make((m, 256), dt), make((256, 61), dt)
        return (lambda: ops.matmul(a, b)), REFERENCES["matmul"](a, b), False
    if op in ("rotary", "rotary_interleaved"):  # rows of a [B, H, L, D] x
        x = make((2, 13, 97, 130), dt)  # 2522 rows, a partial rotary dim
        cos, sin = make((1, 1, 97, 61), dt), make((1, 1, 97, 61), dt)
        inter = op == "rotary_interleaved"
        expected = REFERENCES["rotary_embedding"](x, cos, sin, interleaved=inter)
        return (lambda: ops.rotary_embedding(x, cos, sin, interleaved=inter)), expected, False
    if op == "rotary_strided":  # x a transposed view: strided rows and dims
        x = make((2, 97, 13, 130), dt).transpose(1, 2)
        cos, sin = make((2, 1, 97, 65), dt), make((2, 1, 97, 65), dt)
        expected = REFERENCES["rotary_embedding"](x, cos, sin)
        return (lambda: ops.rotary_embedding(x, cos, sin)), expected, False
    if op.endswith("_streamed"):  # out of 16.8M elements, past every
        # dtype's threshold for non-temporal stores (plugins/cpu/stream_copy.h),
        # mostly at an odd element offset and with rows of 4099 elements, so that
        # the copies start and end off the 64-byte lines
        n = 4099
        out = torch.empty(1 + n * n, dtype=dt)[1:]
        if op == "embedding_streamed":
            table, ids = make((61, n), dt), torch.randint(0, 61, (n,))
            y = out.view(n, n)
            return (lambda: ops.embedding(ids, table, out=y).clone()), table[ids], True
        if op in ("abs_streamed", "add_streamed", "clamp_streamed"):  # the flat loops
            x, z, y = make((n, n), dt), make((n, n), dt), out.view(n, n)
            if op == "abs_streamed":
                return (lambda: ops.abs(x, out=y).clone()), x.abs(), True
            if op == "add_streamed":
                return (lambda: ops.add(x, z, out=y).clone()), x + z, True
            hi = z.abs()
            return (lambda: ops.clamp(x, -hi, hi, out=y).clone()), torch.clamp(x, -hi, hi), True
        if op == "add_broadcast_streamed":  # rows of the strided walk, a fresh out
            x, row = make((n, n), dt), make((1, n), dt)
            return (lambda: ops.add(x, row)), x + row, True
        xs = [make((2049, n), dt), make((2049, n), dt)]
        if op == "cat_streamed":
            y = out[: 2049 * n * 2].view(2049, 2 * n)
            return (lambda: ops.cat(xs, -1, out=y).clone()), torch.cat(xs, -1), True
        y = out[: 2049 * 2 * n].view(2049, 2, n)
        return (lambda: ops.stack(xs, 1, out=y).clone()), torch.stack(xs, 1), True
    if op in ("embedding", "embedding_strided"):  # 2 x 1031 ids of 67 columns
        table = make((509, 67), dt)
        if op == "embedding_strided":  # strided ids and table columns
            table = make((67, 509), dt).t()
        ids = torch.randint(0, 509, (1031, 2), dtype=torch.int32).t()
        return (lambda: ops.embedding(ids, table)), table[ids.long()], True
    if op.startswith("cat"):  # blocks of 3 inputs, one of them empty
        a, b, e = make((131, 7, 97), dt), make((131, 5, 97), dt), make((131, 0, 97), dt)
        xs = [a, e, b, a]
        if op == "cat_dim0":  # one row of blocks: the split cuts inside blocks
            xs = [t.transpose(0, 1).contiguous() for t in xs]
            return (lambda: ops.cat(xs, 0)), torch.cat(xs, 0), True
        if op == "cat_strided":  # a transposed input: the elementwise copy
            xs = [a, a.transpose(0, 2).contiguous().transpose(0, 2)]
        return (lambda: ops.cat(xs, 1)), torch.cat(xs, 1), True
    if op.startswith("stack"):
        xs = [make((131, 97, 3), dt) for _ in range(3)]
        if op == "stack_strided":
            xs[1] = make((3, 97, 131), dt).transpose(0, 2)
        return (lambda: ops.stack(xs, 1)), torch.stack(xs, 1), True
    if op.startswith("attention"):  # 2 x 7 heads, GQA, rows and blocks
        L = 5 if op == "attention_decode" else 131  # rows; blocked prefill
        q = make((2, 7, L, 64), dt)
        k, v = make((2, 1, 97, 64), dt), make((2, 1, 97, 48), dt)
        kw = {"enable_gqa": True}
        if op == "attention_causal":
            kw["is_causal"] = True
        ref = REFERENCES["scaled_dot_product_attention"]
        expected = ref(q, k, v, **kw)
        return (lambda: ops.scaled_dot_product_attention(q, k, v, **kw)), expected, False
    raise AssertionError(op)


OPS = [
    "abs", "neg", "exp", "silu", "add", "mul", "add_strided", "add_broadcast", "clamp", "cast",
    "silu_and_mul", "rms_norm", "add_rms_norm", "softmax", "softmax_dim0",
    "linear_1", "linear_8", "linear_64", "matmul_kn_1", "matmul_kn_3", "matmul_kn_8",
    "matmul_kn_13", "matmul_kn_batch", "matmul_kn_out_t", "matmul_rows", "matmul_batch", "matmul_rows_97", "matmul_rows_200",
    "rotary", "rotary_interleaved", "rotary_strided", "embedding", "embedding_strided",
    "cat", "cat_dim0", "cat_strided", "stack", "stack_strided",
    "embedding_streamed", "cat_streamed", "stack_streamed",
    "abs_streamed", "add_streamed", "clamp_streamed", "add_broadcast_streamed",
    "attention", "attention_causal", "attention_decode",
]  # fmt: skip
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_results_do_not_depend_on_the_thread_count(op, dtype, restore_threads):
    torch.manual_seed(0)
    call, expected, is_exact = case(op, dtype)
    results = []
    for n in THREADS:
        torch.set_num_threads(n)
        results.append(call())
    for n, got in zip(THREADS[1:], results[1:]):
        assert torch.equal(got, results[0]), f"{op} at {n} threads differs from 1 thread"
    got = results[-1]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if is_exact:
        assert torch.equal(got, expected)
    else:  # as tests/python/test_op_dtypes.py
        tol = 5e-2 if got.element_size() == 2 else 1e-5
        if op.startswith(("linear", "matmul")) and got.element_size() == 4:
            tol = 1e-4  # sums of 256 to 1024 products, in another order
        torch.testing.assert_close(got, expected, rtol=tol, atol=tol)


PRODUCTS = [op for op in OPS if op.startswith(("linear", "matmul", "attention"))]
PRODUCT_DTYPES = ["float32", "float64", "bfloat16", "float16"]
EVERY_TIER = '''
import sys, torch
sys.path.insert(0, sys.argv[1])
from test_parallel_kernels import PRODUCTS, PRODUCT_DTYPES, THREADS, case
for op in PRODUCTS:
    for name in PRODUCT_DTYPES:
        torch.manual_seed(0)
        call = case(op, getattr(torch, name))[0]
        results = []
        for n in THREADS:
            torch.set_num_threads(n)
            results.append(call())
        for n, got in zip(THREADS[1:], results[1:]):
            if not torch.equal(got, results[0]):
                differ = int((got != results[0]).sum())
                print(f"{op} {name}: {differ} of {got.numel()} elements differ at {n} threads")
print("done")
'''


@pytest.mark.parametrize("tier", ["baseline", "avx2", ""])
def test_products_do_not_depend_on_the_thread_count_at_every_tier(tier):
    """The products choose their path (BLIS, its gemv, the dot products
    and their streamed form, GemmRows' tiles) from the whole product, never
    from a thread's share of it, on every instruction-set tier this CPU can
    run (TORCHFERRY_CPU_ISA caps it; "" is the CPU's best) and in float64
    too: a choice made on the share showed only on some CPUs (AVX2 without
    AVX-512, BLIS's zen3 kernels)."""
    env = dict(os.environ, TORCHFERRY_CPU_ISA=tier)
    run = subprocess.run([sys.executable, "-c", EVERY_TIER, os.path.dirname(__file__)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and run.stdout.endswith("done\n"), run.stderr[-3000:]
    assert run.stdout == "done\n", f"at TORCHFERRY_CPU_ISA={tier!r}:\n{run.stdout}"


def cpu_seconds_by_thread():
    """{thread id: user + system CPU seconds} for this process's threads."""
    tick = os.sysconf("SC_CLK_TCK")
    times = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        times[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return times


def test_one_thread_means_the_calling_thread_alone(restore_threads):
    torch.set_num_threads(1)
    x = make((2048, 2048))
    w = make((2048, 2048))
    time.sleep(0.3)  # let any pool thread that spun after earlier work settle
    before = cpu_seconds_by_thread()
    me = threading.get_native_id()
    for _ in range(20):
        ops.add(x, x)
        ops.softmax(x)
        ops.linear(x[:8], w, None)
    after = cpu_seconds_by_thread()
    mine = after[me] - before[me]
    others = sum(t - before.get(tid, 0.0) for tid, t in after.items() if tid != me)
    assert others < 0.25 * max(mine, 0.05), f"other threads used {others:.3f} s beside this one's {mine:.3f} s"
    assert mine > 0.05, f"the calls took {mine:.3f} s of this thread's CPU"
