"""The ATen fallback plugin seen from Python: it serves what the native plugins
lack, loses to them where they have a kernel, computes what torch computes
under each wrapper strategy, and keeps no caller memory after a call.

The plugin is built per torch by ./dev, compat torches included; a build
without it (-Daten=disabled) skips this file, but a plugin that is installed
and then skipped fails it.
"""

import json
import os

import pytest
import torch
import torch.nn.functional as F

import torchferry
from torchferry import ops, plugins
from conftest import run_python, rms_norm_ref

INSTALLED = os.path.exists(os.path.join(torchferry.PLUGIN_DIR, "torchferry_aten.so"))
pytestmark = pytest.mark.skipif(not INSTALLED, reason="this build has no ATen plugin (-Daten=disabled)")

STRATEGIES = ("from_blob", "source", "pool")


@pytest.fixture
def strategy(request):
    """Runs the test under each strategy and restores the default after."""
    yield from _with_strategy(request.param)


def _with_strategy(name):
    plugins.set_option("aten", "strategy", name)
    try:
        yield name
    finally:
        plugins.set_option("aten", "strategy", "source")


def test_aten_plugin_loads_as_a_fallback():
    loaded = {p["name"]: p for p in plugins.loaded()}
    skipped = [s["reason"] for s in plugins.skipped() if "aten" in s["path"]]
    assert "aten" in loaded, skipped
    assert loaded["aten"]["kind"] == "fallback"


def test_native_plugins_win_and_aten_serves_the_rest():
    assert plugins.kernel_for("abs", "cpu", "float32") == "cpu"
    assert plugins.kernel_for("abs", "cpu", "int8") == "aten"
    assert plugins.kernel_for("clamp", "cpu", "uint8") == "aten"
    x = torch.tensor([-3, 4, -128, 127], dtype=torch.int8)
    assert torch.equal(ops.abs(x), torch.abs(x))


@pytest.mark.parametrize("strategy", STRATEGIES, indirect=True)
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8])
def test_int_ops_the_cpu_plugin_lacks(strategy, dtype):
    x = torch.randint(-20 if dtype != torch.uint8 else 0, 20, (5, 7), dtype=dtype)
    y = torch.randint(0, 5, (7,), dtype=dtype)
    assert torch.equal(ops.add(x, y, alpha=2), torch.add(x, y, alpha=2))
    assert torch.equal(ops.mul(x.t(), x.t()), x.t() * x.t())
    assert torch.equal(ops.clamp(x, min=1, max=9), x.clamp(1, 9))
    if dtype != torch.uint8:
        assert torch.equal(ops.neg(x[:, 1:]), -x[:, 1:])


@pytest.mark.subprocess
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_op_through_aten_when_cpu_is_excluded(strategy):
    r = run_python(
        f"""
        import json, torch, torch.nn.functional as F, torchferry
        from torchferry import ops, plugins
        from conftest import rms_norm_ref
        plugins.set_option("aten", "strategy", "{strategy}")
        served = {{op: plugins.kernel_for(op, "cpu", "float32") for op in ["abs", "softmax", "matmul"]}}
        g = torch.Generator().manual_seed(0)
        checks = {{}}
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(6, 10, generator=g).to(dt)[:, 1:9]      # strided, storage offset
            w = torch.randn(8, generator=g).to(dt)
            a, b = torch.randn(3, 4, 5, generator=g).to(dt), torch.randn(5, 2, generator=g).to(dt)
            tol = dict(atol=1e-2, rtol=1e-2) if dt != torch.float32 else dict(atol=1e-5, rtol=1e-5)
            pairs = {{
                "abs": (ops.abs(x), x.abs()),
                "neg": (ops.neg(x), -x),
                "exp": (ops.exp(x), x.exp()),
                "silu": (ops.silu(x), F.silu(x)),
                "add": (ops.add(x, w, alpha=0.5), torch.add(x, w, alpha=0.5)),
                "mul": (ops.mul(x, w), x * w),
                "clamp": (ops.clamp(x, min=-0.5, max=w), x.clamp(-0.5).minimum(w)),
                "stack": (ops.stack([x, x], dim=1), torch.stack([x, x], 1)),
                "silu_and_mul": (ops.silu_and_mul(x), F.silu(x[:, :4]) * x[:, 4:]),
                "rms_norm": (ops.rms_norm(x, w, 1e-6), rms_norm_ref(x.float(), (8,), w.float(), 1e-6).to(dt)),
                "softmax": (ops.softmax(x, 0), x.float().softmax(0).to(dt)),
                "matmul": (ops.matmul(a, b), (a.float() @ b.float()).to(dt)),
            }}
            # torch.matmul's other rules: 1-D operands, and 4-D batch dims
            # that broadcast and, permuted, do not nest (the call repeats).
            v = torch.randn(5, generator=g).to(dt)
            q = torch.randn(2, 3, 4, 5, generator=g).to(dt).transpose(0, 1)
            k = torch.randn(3, 1, 5, 7, generator=g).to(dt)
            for name, (l, r) in {{"1-D @ 3-D": (v, a.transpose(1, 2)), "3-D @ 1-D": (a, v),
                                 "1-D @ 1-D": (v, v), "4-D @ 4-D": (q, k)}}.items():
                pairs[f"matmul {{name}}"] = (ops.matmul(l, r), (l.float() @ r.float()).to(dt))
            x4 = torch.randn(4, 2, 3, 5, generator=g).to(dt).permute(1, 0, 2, 3).transpose(0, 2)
            w4 = torch.randn(6, 5, generator=g).to(dt)
            pairs["linear 4-D permuted"] = (ops.linear(x4, w4), F.linear(x4.float(), w4.float()).to(dt))
            out = torch.empty(6, 8, dtype=torch.float64)
            pairs["cast"] = (ops.cast(x, out=out), x.to(torch.float64))
            for op, (got, want) in pairs.items():
                checks[f"{{op}} {{dt}}"] = bool(torch.allclose(got.float(), want.float(), **tol))
        print(json.dumps({{"served": served, "checks": checks}}))
        """,
        TORCHFERRY_PLUGINS="-cpu,-example_c",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(result["served"].values()) == {"aten"}, result["served"]
    failed = [k for k, ok in result["checks"].items() if not ok]
    assert not failed, failed


@pytest.mark.parametrize("strategy", STRATEGIES, indirect=True)
def test_alternating_buffers_and_empty_tensors(strategy):
    # The pool rebinds one wrapper per shape to each call's data pointer: the
    # result must follow the data, call after call.
    xs = [torch.randint(-9, 9, (4, 8), dtype=torch.int8) for _ in range(4)]
    out = torch.empty(4, 8, dtype=torch.int8)
    for _ in range(3):
        for x in xs:
            assert torch.equal(ops.abs(x, out=out), x.abs())
    empty = torch.empty(0, 8, dtype=torch.int8)
    assert ops.abs(empty).shape == (0, 8)


def test_unknown_strategy_is_refused_by_name():
    with pytest.raises(ValueError, match="strategy"):
        plugins.set_option("aten", "strategy", "bogus")


@pytest.mark.subprocess
def test_strategy_from_the_environment():
    r = run_python(
        """
        import torch, torchferry
        from torchferry import ops
        x = torch.tensor([-1, 2], dtype=torch.int8)
        print(torch.equal(ops.abs(x), x.abs()))
        """,
        TORCHFERRY_ATEN_STRATEGY="from_blob",
        TORCHFERRY_LOG="debug",
    )
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr[-2000:]


@pytest.mark.subprocess
def test_no_caller_memory_is_kept_under_any_strategy():
    # 32 MiB per call through every strategy; afterwards resident memory must
    # be back near where it started. A fixed mmap threshold makes glibc hand
    # every large block back to the OS on free, so what stays resident is
    # what someone still holds.
    r = run_python(
        """
        import gc, torch, torchferry
        from torchferry import ops, plugins

        def rss_mib():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096 / 2**20

        def push():
            x = torch.ones(16 * 2**20, dtype=torch.int8) * -3
            out = torch.empty_like(x)
            ops.abs(x, out=out)
            assert int(out[0]) == 3

        push()
        gc.collect()
        base = rss_mib()
        for s in ("from_blob", "source", "pool"):
            plugins.set_option("aten", "strategy", s)
            for _ in range(3):
                push()
                gc.collect()
        print(round(rss_mib() - base, 1))
        """,
        MALLOC_MMAP_THRESHOLD_="65536",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    grown = float(r.stdout.strip().splitlines()[-1])
    assert grown < 8, f"resident memory grew by {grown} MiB after 9 calls of 32 MiB each"
