"""bench/gpu/check_ops.py, the GPU check, run on CPU tensors: the conformance
check it runs first, its sizes and extra cases and its error check stay right
between the runs that have a GPU, through the CPU plugin and the same
references and tolerances as `python -m torchferry check`. The parts only a
GPU runs (streams, a second GPU, more than 2^31 elements) are proved
importable and skipped cleanly where torch sees no GPU."""

import json
import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECK = os.path.join(ROOT, "bench", "gpu", "check_ops.py")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """The CPU dry run, once for the module: (return code, stdout, report)."""
    path = tmp_path_factory.mktemp("ops") / "report.json"
    proc = subprocess.run([sys.executable, CHECK, "--device", "cpu", "--json", str(path)],
                          capture_output=True, text=True, timeout=600)
    assert path.exists(), proc.stdout + proc.stderr
    return proc.returncode, proc.stdout, json.loads(path.read_text())


def test_every_case_passes_on_cpu(dry_run):
    code, stdout, report = dry_run
    assert code == 0 and report["status"] == "pass", stdout[-4000:]
    bad = [c for c in report["cases"] if c["status"] in ("fail", "error")]
    assert not bad, bad[:5]


def test_the_conformance_is_the_check_s_own(dry_run):
    """Every built-in op's cases come from `torchferry check`, each case kind
    among them, and the wide unsigned dtypes with them."""
    _, _, report = dry_run
    import torchferry
    from torchferry import check_cases

    checked = [c for c in report["cases"] if c["case"].startswith("check ") and c["status"] == "pass"]
    ops = {c["op"] for c in checked}
    schema_ops = {s["name"] for s in torchferry._C._schemas() if s["declared_by"] is None}
    assert schema_ops <= ops, f"no conformance case for {sorted(schema_ops - ops)}"
    kinds = {c["case"].split()[1] for c in checked}
    assert kinds == set(check_cases.CASE_KINDS), kinds
    covered = {(c["op"], c["dtype"]) for c in checked}
    for dtype in ("uint16", "uint32", "uint64"):
        for op in ("mul", "cast", "cat", "embedding"):
            assert (op, dtype) in covered, (op, dtype)


def test_the_sizes_extras_and_errors_ran(dry_run):
    _, _, report = dry_run
    own = [c for c in report["cases"] if not c["case"].startswith("check ")]
    passed = {(c["op"], c["dtype"], c["case"]) for c in own if c["status"] == "pass"}
    for dt in ("float32", "float16", "bfloat16", "float64"):
        assert ("softmax", dt, "[4, 5000] dim=-1 (a block per row)") in passed
        assert ("matmul", dt, "512x1024 @ 1024x768") in passed
        assert ("matmul", dt, "column-major out=") in passed
    for dt in ("uint16", "uint32", "uint64"):
        assert ("cast", dt, "to float32") in passed and ("cast", "float32", f"to {dt}") in passed
    assert ("cast", "uint64", "beyond int64 to float64") in passed
    assert ("embedding", "float32", "id 50 of a 50-row table") in passed


def test_a_wrong_result_fails_a_size_case(monkeypatch):
    """run_calls, which judges the sizes, fails a kernel whose result is off:
    a reference one rounding too far off stands in for a wrong kernel."""
    from torchferry import check, reference

    x = torch.randn(8, 4096)
    w = torch.randn(4096)
    assert check.run_calls("rms_norm", [((x, w), {"eps": 1e-6})])[0] == "pass"
    monkeypatch.setitem(reference.REFERENCES, "rms_norm", lambda x, w, eps=1e-6: torch.zeros_like(x) + 1)
    status, detail = check.run_calls("rms_norm", [((x, w), {"eps": 1e-6})])
    assert status == "fail" and "not close" in detail, (status, detail)


def test_the_gpu_only_parts_import_and_skip_without_a_gpu(tmp_path):
    sys.path.insert(0, os.path.dirname(CHECK))
    try:
        import check_ops
    finally:
        sys.path.remove(os.path.dirname(CHECK))
    for name in ("stream_checks", "other_device_check", "big_index_check", "stream_probes"):
        assert callable(getattr(check_ops, name))
    # The stream checks' calls, as they make them (out=, stream=None: the
    # current stream), right on CPU tensors.
    from torchferry import check, ops, reference

    for op, args, kwargs, out in check_ops.stream_probes(torch, "cpu"):
        got = getattr(ops, op)(*args, **kwargs, out=out, stream=None)
        assert got is out
        assert check.compare(op, out, reference.REFERENCES[op](*args, **kwargs)) is None, op
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the skip without one is not what this machine shows")
    path = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, CHECK, "--json", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(path.read_text())
    assert report["status"] == "skipped" and "no CUDA device" in report["reason"], report
