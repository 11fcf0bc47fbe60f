"""`python -m torchferry check`, the conformance kit: it passes on the
project's own plugins and fails, naming the op, dtype and case kind, on the
deliberately wrong plugins of tests/plugins/wrong/wrong.c (one flaw each), on
a plugin the loader refuses, and on a declared op whose kernel or infer
disagrees with the vendor's reference."""

import json
import os
import re
import subprocess

import pytest

from torchferry import check_cases, plugins
from conftest import HERE, clean_env, run_child

ROOT = os.path.dirname(os.path.dirname(HERE))
WRONG_SRC = os.path.join(ROOT, "tests", "plugins", "wrong", "wrong.c")

pytestmark = pytest.mark.subprocess

# FLAW in wrong.c -> (plugin name, the (op, dtype, kind) that must fail first,
# the status, a substring of its detail).
WRONG = {
    1: ("wrong_strided", ("add", "float32", "transposed"), "fail", "Tensor-likes are not close"),
    2: ("wrong_offset", ("add", "float32", "offset"), "fail", "Tensor-likes are not close"),
    3: ("wrong_broadcast", ("add", "float32", "broadcast"), "fail", "Tensor-likes are not close"),
    4: ("wrong_nan", ("add", "float32", "special"), "fail", "Tensor-likes are not close"),
    5: ("wrong_dtype", ("abs", "float64", "contiguous"), "fail", "Tensor-likes are not close"),
    6: ("wrong_empty", ("add", "float32", "empty"), "crash", "the process died of SIGSEGV"),
    7: ("wrong_stdout", ("add", "float32", "special"), "fail", "Tensor-likes are not close"),
    8: ("wrong_overrun", ("add", "float32", "contiguous"), "fail",
        "output 0 (allocated by the host): 4 byte(s) written where no write was allowed, the first right after "
        "its end (byte offset 96, element offset 24, of a [4, 6] float32 view"),
    9: ("wrong_underrun", ("add", "float32", "contiguous"), "fail",
        "output 0 (allocated by the host): 4 byte(s) written where no write was allowed, the first 4 bytes "
        "before its first element (byte offset -4, element offset -1,"),
    10: ("wrong_gap", ("add", "float32", "offset"), "fail",
         "argument 'input': 4 byte(s) written where no write was allowed, the first in a gap of its extent "
         "(a byte it does not cover) (byte offset 28, element offset 7, of a [5, 7] float32 view with strides "
         "[9, 1])"),
    11: ("wrong_input", ("add", "float32", "contiguous"), "fail",
         "argument 'input': 4 byte(s) written where no write was allowed, the first right after its end "
         "(byte offset 96, element offset 24,"),
}

# The flaws that write out of bounds, and what each does to an out= argument
# (the alias kind passes out=, the other kinds leave the output to the host).
STRAY_OUT = {
    8: "argument 'out': 4 byte(s) written where no write was allowed, the first right after its end",
    9: "argument 'out': 4 byte(s) written where no write was allowed, the first 4 bytes before its first element",
}


def check(*args, timeout=900, **env):
    r = run_child(["-m", "torchferry", "check", *args], clean_env(PYTHONPATH=HERE, **env), timeout=timeout, text=True)
    return r


def check_wrong(*args):
    """check() on a deliberately wrong plugin. Under the sanitizers (the
    hardening stage) a sanitizer report goes to the child's stderr, where the
    check quotes it, rather than to the stage's report files: wrong_empty's
    SIGSEGV is a report there, and the test wants that crash."""
    env = {}
    for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if name in os.environ:
            env[name] = ":".join(o for o in os.environ[name].split(":") if not o.startswith("log_path="))
    return check(*args, **env)


@pytest.fixture(scope="module")
def wrong_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("wrong")
    cc = os.environ.get("CC", "cc")
    for flaw, (name, *_rest) in WRONG.items():
        subprocess.run([cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1",
                        f"-I{ROOT}", f"-DFLAW={flaw}", f"-DNAME={name}", WRONG_SRC,
                        "-o", str(out / f"torchferry_{name}.so"), "-lm"],
                       check=True, capture_output=True, timeout=120)
    return out


def kernels_of(name):
    (p,) = [p for p in plugins.loaded() if p["name"] == name]
    return {tuple(k) for k in p["kernels"] if k[1] == "cpu"}


@pytest.mark.parametrize("plugin", ["cpu", "example_c", "aten"])
def test_our_plugins_pass(plugin, tmp_path):
    if plugin not in {p["name"] for p in plugins.loaded()}:
        pytest.skip(f"the {plugin} plugin is not built here")
    report_path = tmp_path / "report.json"
    extra = ["--reference", "check_references:axpby"] if plugin == "example_c" else []
    r = check(plugin, "--json", str(report_path), *extra)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert "PASSED" in r.stdout
    report = json.loads(report_path.read_text())
    assert report["ok"] and report["name"] == plugin
    # Every kernel the plugin registers on the CPU was run, in every kind.
    assert {tuple(k) for k in report["kernels"]} == kernels_of(plugin)
    seen = {(r["op"], r["dtype"]) for r in report["results"]}
    assert seen == {(op, dt) for op, _, dt in kernels_of(plugin)}
    statuses = {r["status"] for r in report["results"]}
    assert statuses <= {"pass", "unsupported", "n/a"}, statuses
    assert sum(r["status"] == "pass" for r in report["results"]) > len(seen)


@pytest.mark.parametrize("flaw", list(WRONG))
def test_a_wrong_plugin_fails_naming_the_case(flaw, wrong_dir, tmp_path):
    name, (op, dtype, kind), status, detail = WRONG[flaw]
    path = str(wrong_dir / f"torchferry_{name}.so")
    report_path = tmp_path / "report.json"
    r = check_wrong(path, "--json", str(report_path))
    assert r.returncode == 1, r.stdout[-4000:] + r.stderr[-2000:]
    report = json.loads(report_path.read_text())
    failures = [x for x in report["results"] if x["status"] in ("fail", "crash", "hang")]
    first = failures[0]
    assert (first["op"], first["dtype"], first["kind"], first["status"]) == (op, dtype, kind, status), failures
    # Under AddressSanitizer a crash is its report and exit status 1, not the
    # signal itself.
    crashed_under_asan = status == "crash" and "AddressSanitizer" in first["detail"]
    assert detail in first["detail"] or crashed_under_asan
    assert f"{op} {dtype} {kind}: {status}" in r.stdout
    # The repro line runs that one case again, from its seed, and fails the
    # same way.
    repro = re.search(r"again: python -m torchferry check (.*)$", r.stdout, re.M).group(1).split()
    assert repro[:1] == [path] and ["--cases", kind] == repro[-2:]
    again = check_wrong(*repro)
    assert again.returncode == 1 and f"{op} {dtype} {kind}: {status}" in again.stdout


@pytest.mark.parametrize("flaw", list(STRAY_OUT))
def test_a_stray_write_through_out_is_named(flaw, wrong_dir):
    name = WRONG[flaw][0]
    # A check's first call of a case leaves the output to the host, and fails
    # there; run_calls, the check's own judge, takes a call with out= alone.
    code = f"""
import json, torch, torchferry
from torchferry import check
x, y = torch.randn(4, 6), torch.randn(4, 6)
print(json.dumps(check.run_calls("add", [((x, y), {{"out": torch.empty(4, 6)}})])))
"""
    env = clean_env(PYTHONPATH=HERE, TORCHFERRY_PLUGIN_PATH=wrong_dir / f"torchferry_{name}.so", TORCHFERRY_PLUGINS=name)
    r = run_child(["-c", code], env, timeout=300, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    status, detail = json.loads(r.stdout.strip().splitlines()[-1])
    assert status == "fail" and STRAY_OUT[flaw] in detail, detail


def test_a_wrong_plugin_passes_the_cases_it_gets_right(wrong_dir):
    # Strided is wrong on strided input only: contiguous and 0-dim pass.
    r = check_wrong(str(wrong_dir / "torchferry_wrong_strided.so"), "--ops", "add",
                    "--cases", "contiguous,zero_dim,odd")
    assert r.returncode == 0, r.stdout
    # A crash is reported and the kernels after it still run.
    r = check_wrong(str(wrong_dir / "torchferry_wrong_empty.so"), "--json", "/dev/stdout")
    statuses = {(x["op"], x["kind"]): x["status"] for x in json.loads(r.stdout[r.stdout.index("{"):])["results"]}
    assert statuses[("add", "empty")] == "crash" and statuses[("abs", "contiguous")] == "pass"
    assert statuses[("abs", "empty")] == "crash"


def test_a_kernel_writing_to_stdout_drops_no_report(wrong_dir, tmp_path):
    # Its dots, without a newline, ran into the reports when they shared
    # stdout: every case was lost and the run "passed" with 0 cases.
    report_path = tmp_path / "report.json"
    r = check_wrong(str(wrong_dir / "torchferry_wrong_stdout.so"), "--json", str(report_path))
    assert r.returncode == 1, r.stdout[-4000:] + r.stderr[-2000:]
    report = json.loads(report_path.read_text())
    heard = {(x["op"], x["dtype"], x["kind"]) for x in report["results"]}
    assert heard == {(op, dt, kind) for op, _, dt in report["kernels"] for kind in report["kinds"]}
    assert all(x["detail"] != "no result came back for this case" for x in report["results"])
    assert sum(x["status"] == "pass" for x in report["results"]) > 2
    assert "add float32 special: fail" in r.stdout and "PASSED" not in r.stdout


def test_a_case_whose_report_never_came_is_a_failure():
    from torchferry import check as check_module

    kernels = [("add", "cpu", "float32"), ("abs", "cpu", "float32")]
    report = {"results": [
        {"index": 0, "op": "add", "device": "cpu", "dtype": "float32", "kind": "contiguous", "status": "pass"},
        {"index": 1, "op": "abs", "device": "cpu", "dtype": "float32", "kind": "(loading)", "status": "crash"},
    ]}
    check_module._add_missing(report, kernels, ["contiguous", "empty"])
    missing = [(x["op"], x["kind"], x["status"]) for x in report["results"][2:]]
    # abs crashed: its cases are the crash's; add's empty case never came.
    assert missing == [("add", "empty", "fail")]
    assert report["results"][2]["detail"] == "no result came back for this case"


def test_a_run_that_checks_no_case_fails():
    # softmax has no alias case (out= may not be its input): every cell is n/a.
    r = check("cpu", "--ops", "softmax", "--dtypes", "float32", "--cases", "alias")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert "FAILED: no case was checked (0 passed" in r.stdout and "PASSED" not in r.stdout


def test_a_plugin_the_loader_refuses_fails_the_check(tmp_path):
    so = tmp_path / "torchferry_nullfn.so"
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-shared", "-fPIC", f"-I{ROOT}",
                    os.path.join(ROOT, "tests", "plugins", "nullfn.c"), "-o", str(so)], check=True)
    r = check(str(so))
    assert r.returncode == 1
    assert "the loader refused the plugin" in r.stdout and "fn is NULL" in r.stdout, r.stdout


def test_an_unknown_plugin_or_op_is_named():
    r = check("no_such_plugin_tf")
    assert r.returncode == 1 and "a plugin named 'no_such_plugin_tf'" in r.stdout
    r = check("example_c", "--ops", "matmul")
    assert r.returncode == 2 and "example_c registers no kernel for matmul" in r.stderr
    r = check("example_c", "--cases", "sideways")
    assert r.returncode == 2 and "unknown case kind(s) sideways" in r.stderr


def test_declared_ops_are_held_to_the_vendors_reference():
    # Without a reference nothing is checked, and a run that checked nothing
    # fails, saying what to add.
    r = check("example_c", "--ops", "example::axpby")
    assert r.returncode == 1 and "noref" in r.stdout and "--reference example::axpby=module:function" in r.stdout
    assert "FAILED: no case was checked (0 passed, 0 unsupported, 10 without a reference" in r.stdout, r.stdout
    r = check("example_c", "--ops", "example::axpby", "--reference", "example::axpby=check_references:axpby")
    assert r.returncode == 0, r.stdout
    r = check("example_c", "--ops", "example::axpby", "--reference", "check_references:axpby_wrong_value")
    assert r.returncode == 1 and "example::axpby float32 contiguous: fail" in r.stdout
    # infer says [4, 6]; the reference returns [6]: infer is wrong (or the
    # reference), and the check says which shapes differ.
    r = check("example_c", "--ops", "example::axpby", "--reference", "check_references:axpby_wrong_shape")
    assert r.returncode == 1 and "result shape [4, 6], expected [6]" in r.stdout
    r = check("example_c", "--ops", "example::axpby", "--reference", "check_references:nothing")
    assert r.returncode == 2 and "--reference check_references:nothing: AttributeError" in r.stderr


def test_every_op_has_cases_and_a_reference():
    from torchferry import ops, reference

    for s in ops.schemas():
        if s["declared_by"]:
            continue
        assert s["name"] in reference.REFERENCES
        gen = check_cases.GENERATORS.get(s["name"]) or check_cases.schema_generator(s["schema"])
        import torch

        calls = gen("contiguous", check_cases.tensor_factory("contiguous", torch.float32, "cpu",
                                                             torch.Generator().manual_seed(0)))
        assert calls, s["name"]


# Hostile command lines: each is refused with a message, never a traceback.
HOSTILE = {
    "missing_file": (["/nonexistent/torchferry_x.so"], 1, "does not exist"),
    "a_folder": ([HERE], 1, "the loader found none"),
    "not_a_plugin": ([__file__], 1, "the loader refused the plugin"),
    "undecodable_path": (["/tmp/caf\udce9/torchferry_x.so"], 1, "/tmp/caf\\udce9/torchferry_x.so to load"),
    "bad_seed": (["cpu", "--seed", "x"], 2, "argument --seed: invalid int value"),
    "bad_device": (["cpu", "--device", "tpu"], 2, "invalid choice: 'tpu'"),
    "unwritable_json": (["example_c", "--ops", "abs", "--cases", "contiguous", "--json", "/nonexistent/r.json"], 2,
                        "--json '/nonexistent/r.json': its folder names '/nonexistent', which does not exist"),
    "bad_reference": (["example_c", "--reference", "no_such_module_tf:f"], 2,
                      "--reference no_such_module_tf:f: ModuleNotFoundError"),
    "reference_not_callable": (["example_c", "--reference", "os:sep"], 2, "is a str, expected a callable"),
    "no_kernels_on_device": (["example_c", "--device", "cuda"], 2, "registers no kernel for device cuda"),
}


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_command_lines(kind):
    args, code, message = HOSTILE[kind]
    r = check(*args)
    assert r.returncode == code, r.stdout[-2000:] + r.stderr[-2000:]
    assert message in r.stdout + r.stderr
    assert "Traceback" not in r.stderr
