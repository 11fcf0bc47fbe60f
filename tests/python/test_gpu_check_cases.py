"""bench/gpu/check_ops.py, the GPU check, run on CPU tensors: its case list
and references stay right between the runs that have a GPU. Through
torchferry the cases reach the CPU plugin; through torch they check the
references against torch's own results."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECK = os.path.join(ROOT, "bench", "gpu", "check_ops.py")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each backend's run, once for the module: (return code, stdout, report)."""
    out = {}
    for backend in ("torchferry", "torch"):
        path = tmp_path_factory.mktemp(backend) / "report.json"
        proc = subprocess.run(
            [sys.executable, CHECK, "--device", "cpu", "--backend", backend, "--json", str(path)],
            capture_output=True, text=True, timeout=600)
        assert path.exists(), proc.stdout + proc.stderr
        out[backend] = (proc.returncode, proc.stdout, json.loads(path.read_text()))
    return out


@pytest.mark.parametrize("backend", ["torchferry", "torch"])
def test_every_case_passes_on_cpu(reports, backend):
    code, stdout, report = reports[backend]
    assert code == 0 and report["status"] == "pass", stdout[-4000:]
    bad = [c for c in report["cases"] if c["status"] not in ("pass", "refused")]
    assert not bad, bad[:5]
    # Only the cases named "may be refused" may be.
    refused = [c for c in report["cases"] if c["status"] == "refused"]
    assert all("may be refused" in c["case"] for c in refused), refused[:5]


def test_the_cases_cover_every_op_and_the_wide_unsigned_dtypes(reports):
    _, _, report = reports["torchferry"]
    covered = {(c["op"], c["dtype"]) for c in report["cases"] if c["status"] == "pass"}
    ops = {op for op, _ in covered}
    import torchferry

    schema_ops = {s["name"] for s in torchferry._C._schemas() if s["declared_by"] is None}
    assert schema_ops <= ops, f"no GPU check case for {sorted(schema_ops - ops)}"
    for dtype in ("uint16", "uint32", "uint64"):
        for op in ("mul", "cast", "cat", "embedding"):
            assert (op, dtype) in covered, (op, dtype)
    assert any(c["case"].startswith("id 50") and c["status"] == "pass" for c in report["cases"])
