"""The host's parallel_for service (tf_host_api, ABI 1.2) as a plugin sees it:
tests/plugins/declared/parallel.c declares ptest::mark, which adds 1 to each
element of an int32 tensor inside host->parallel_for and records, per
element, host->thread_index() and the OS thread that ran it. Each backend
(TORCHFERRY_PARALLEL=torch, host, serial) runs in a fresh interpreter: every
index exactly once, torch.set_num_threads followed, a forked child served
(not hung), and eight Python threads calling at once."""

import json
import os
import subprocess

import pytest
import torch

from conftest import HERE, run_python

ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, "tests", "plugins", "declared", "parallel.c")
# torch_parallel_for and friends: torch >= 2.10.
HAS_TORCH_POOL = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 10)
BACKENDS = ["torch", "host", "serial"] if HAS_TORCH_POOL else ["host", "serial"]

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("parallel")
    cc = os.environ.get("CC", "cc")
    subprocess.run(
        [cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1", "-pthread",
         f"-I{ROOT}", SRC, "-o", str(out / "torchferry_ptest.so")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return str(out)


# Runs in the fresh interpreter: each case's summary, the service's info, the
# forked child's verdict and the threaded callers' verdict, as JSON.
SCRIPT = r"""
import json, os, threading, time
import torch, torchferry
from torchferry import _C, ops

def mark(n, grain=1):
    acc = torch.zeros(n, dtype=torch.int32)
    ids, threads = ops.ptest.mark(torch.empty(n, dtype=torch.int32), acc, grain=grain)
    return {"once": bool((acc == 1).all()), "ids": sorted(set(ids.tolist())),
            "os_threads": len(set(threads.tolist()))}

report = {"info": _C._parallel_info(), "cases": {}}
for threads, n, grain in [(2, 1, 1), (2, 7, 3), (2, 1000, 1), (2, 1_000_003, 1000), (2, 10, 100),
                          (2, 2_000_000, 2_000_000), (1, 2_000_000, 1), (3, 2_000_000, 1),
                          (2, 2_000_000, 1)]:
    torch.set_num_threads(threads)
    report["cases"][f"{threads}:{n}:{grain}"] = mark(n, grain)
report["threads_after_set_2"] = _C._parallel_info()["threads"]
report["bad_range"] = ops.ptest.bad_range(torch.arange(4, dtype=torch.int32)).tolist()

# Eight Python threads at once, each checking its own results.
failures = []
def caller(k):
    for _ in range(20):
        r = mark(200_000 + k)
        if not r["once"]:
            failures.append(k)
ts = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
for t in ts: t.start()
for t in ts: t.join()
report["threaded_failures"] = failures

# A forked child, after the parent's regions: it must finish, correct, on
# as many threads. Below torch's own grain (32768): torch's OpenMP regions
# hang in a forked child, its zeros() and comparisons included.
pid = os.fork()
if pid == 0:
    r = mark(20_000)
    os._exit(10 + len(r["ids"]) if r["once"] and len(r["ids"]) == r["os_threads"] else 3)
deadline = time.monotonic() + 60
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        report["fork_child"] = os.waitstatus_to_exitcode(status)
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        report["fork_child"] = "hung"
        break
    time.sleep(0.05)
report["counts"] = _C._parallel_info()["counts"]
print("REPORT" + json.dumps(report))
"""


def run(plugin_dir, backend):
    r = run_python(SCRIPT, TORCHFERRY_PLUGIN_PATH=plugin_dir, TORCHFERRY_PARALLEL=backend)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return json.loads(r.stdout.split("REPORT", 1)[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_serves_the_contract(plugin_dir, backend):
    rep = run(plugin_dir, backend)
    assert rep["info"]["backend"] == backend
    assert rep["info"]["reason"] == f"forced to '{backend}'"
    cases = rep["cases"]
    for key, case in cases.items():
        assert case["once"], f"{backend} {key}: an index ran twice or never"
        threads = int(key.split(":")[0])
        assert max(case["ids"]) < threads, (key, case)
        # One OS thread per thread index: the indices name the threads.
        assert case["os_threads"] == len(case["ids"]), (key, case)
    # Within one grain, and one thread: inline, one thread.
    for key in ("2:1:1", "2:10:100", "2:2000000:2000000", "1:2000000:1"):
        assert cases[key]["ids"] == [0], key
    parallel = backend != "serial"
    # A large range over torch.set_num_threads(k) threads uses k of them.
    assert cases["2:2000000:1"]["ids"] == ([0, 1] if parallel else [0])
    assert cases["3:2000000:1"]["ids"] == ([0, 1, 2] if parallel else [0])
    # ceil(7 / 3) = 3 shares at most, over 2 threads.
    assert len(cases["2:7:3"]["ids"]) == (2 if parallel else 1)
    assert rep["threads_after_set_2"] == (2 if parallel else 1)
    assert rep["bad_range"] == [0, 1, 2, 3]
    assert rep["threaded_failures"] == []
    assert rep["fork_child"] == 10 + (2 if parallel else 1)
    counts = rep["counts"]
    assert counts["inline"] > 0
    if backend == "serial":
        assert counts["torch"] == counts["host"] == 0
    else:
        assert counts[backend] > 0
        other = "host" if backend == "torch" else "torch"
        assert counts[other] == 0


def test_auto_takes_torch_where_it_exports_its_pool(plugin_dir):
    rep = run(plugin_dir, "auto")
    assert rep["info"]["backend"] == ("torch" if HAS_TORCH_POOL else "host")
    assert "torch_parallel_for" in rep["info"]["reason"]
    assert rep["cases"]["2:2000000:1"]["ids"] == [0, 1]
    assert rep["fork_child"] == 12


def test_a_bad_choice_is_a_clear_error_at_import():
    code = "import torchferry; print('ERR', torchferry.STARTUP_ERROR)"
    r = run_python(code, TORCHFERRY_PARALLEL="threads")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (
        "TORCHFERRY_PARALLEL='threads' cannot be honoured (unknown parallel backend 'threads'; "
        "expected 'auto', 'torch', 'host' or 'serial')" in r.stdout
    )


@pytest.mark.skipif(HAS_TORCH_POOL, reason="this torch exports torch_parallel_for")
def test_forcing_torch_without_its_pool_is_a_clear_error():
    r = run_python("import torchferry; print('ERR', torchferry.STARTUP_ERROR)", TORCHFERRY_PARALLEL="torch")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "TORCHFERRY_PARALLEL='torch' cannot be honoured" in r.stdout
    assert "does not export torch_parallel_for" in r.stdout
