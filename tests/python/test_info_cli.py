"""`python -m torchferry info` tells the truth, and the plugin environment
variables (TORCHFERRY_PLUGINS, TORCHFERRY_PLUGIN_PATH) do what they say."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch

import torchferry
from torchferry import bridge, info, plugins
from conftest import HERE, assert_matches, clean_env, conversions, make, run_child, run_python

SHIM = bridge.shim_available()
AUTO_PATH = "shim" if SHIM else "offset"
V1_OPS = {s["name"] for s in torchferry.ops.schemas() if s["declared_by"] is None}


def cli(*args, **env):
    r = run_child(["-m", "torchferry", "info", *args], clean_env(PYTHONPATH=HERE, **env), text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


@pytest.fixture(scope="module")
def cli_json():
    return json.loads(cli("--json"))


@pytest.fixture(scope="module")
def cli_text():
    return cli("--verbose")


@pytest.fixture(scope="module")
def cli_summary():
    return cli()


def by_name(plugin_list):
    return {p["name"]: p for p in plugin_list}


@pytest.mark.subprocess
def test_json_names_this_torch_and_the_bridge_path(cli_json):
    assert cli_json["torch"] == torch.__version__
    assert cli_json["torch_path"] == os.path.dirname(torch.__file__)
    assert cli_json["torchferry"] == torchferry.__version__
    assert cli_json["python"] == sys.version.split()[0]
    b = cli_json["bridge"]
    assert b["path"] == AUTO_PATH  # what a fresh process picks
    assert b["shim_available"] is SHIM
    assert b["offset_calibration"]["ok"] is True
    assert b["libtorch"].startswith(os.path.dirname(torch.__file__))
    # a fresh process converted nothing yet
    assert set(cli_json["path_counts"].values()) == {0}


@pytest.mark.subprocess
def test_json_lists_the_cpu_plugin_with_its_kernels(cli_json):
    loaded = by_name(cli_json["plugins"])
    cpu = loaded["cpu"]
    assert cpu["kind"] == "native" and cpu["abi"] == torchferry._C.ABI_VERSION == "1.2"
    assert cpu["path"] == os.path.join(torchferry.PLUGIN_DIR, "torchferry_cpu.so")
    kernels = {tuple(k) for k in cpu["kernels"]}
    assert {op for op, _, _ in kernels} == V1_OPS
    assert {("abs", "cpu", "float32"), ("matmul", "cpu", "bfloat16"), ("cast", "cpu", "bool")} <= kernels
    assert ("exp", "cpu", "int32") not in kernels
    # the same list this process sees
    assert {tuple(k) for k in by_name(plugins.loaded())["cpu"]["kernels"]} == kernels


@pytest.mark.subprocess
def test_json_shows_example_c_shadowed_by_cpu(cli_json):
    example = by_name(cli_json["plugins"])["example_c"]
    assert {tuple(k) for k in example["kernels"]} == {
        ("abs", "cpu", "float32"),
        ("add", "cpu", "float32"),
        ("example::axpby", "cpu", "float32"),
    }
    shadowed = {(s["op"], s["device"], s["dtype"], s["loser"], s["winner"]) for s in cli_json["shadowed"]}
    assert ("abs", "cpu", "float32", "example_c", "cpu") in shadowed
    assert ("add", "cpu", "float32", "example_c", "cpu") in shadowed
    assert plugins.kernel_for("abs", "cpu", "float32") == "cpu"
    assert plugins.kernel_for("add", "cpu", "float32") == "cpu"
    # Its own op has no rival: it serves it.
    assert ("example::axpby", "cpu", "float32", "example_c", "cpu") not in shadowed
    assert plugins.kernel_for("example::axpby", "cpu", "float32") == "example_c"
    assert cli_json["declared_ops"] == [
        {
            "name": "example::axpby",
            "schema": "example::axpby(Tensor x, Tensor y, *, float a, float b) -> Tensor",
            "declared_by": "example_c",
        }
    ]


@pytest.mark.subprocess
def test_json_skips_are_explained(cli_json):
    for s in cli_json["skipped"]:
        assert s["reason"] and os.path.basename(s["path"]) in s["reason"], s
    assert cli_json["plugin_search"]["package_dir"] == torchferry.PLUGIN_DIR


@pytest.mark.subprocess
def test_text_says_the_same(cli_text, cli_json):
    assert f"torch {torch.__version__} at {os.path.dirname(torch.__file__)}" in cli_text
    assert f"bridge path: {AUTO_PATH}" in cli_text
    assert f"shim (torch_tensor_from_pyobject): {'available' if SHIM else 'absent'}" in cli_text
    assert "offset calibration: ok" in cli_text
    cpu_version = by_name(cli_json["plugins"])["cpu"]["version"]
    assert cpu_version.startswith("0.1.0 (") and cpu_version.endswith(" kernels)")  # the tier
    assert f"cpu {cpu_version} (native, ABI {torchferry._C.ABI_VERSION}" in cli_text
    assert f"plugins (host ABI {torchferry._C.ABI_VERSION}; loaded in" in cli_text
    for op in ("abs", "matmul", "cast"):
        dtypes = [dt for o, dev, dt in by_name(cli_json["plugins"])["cpu"]["kernels"] if o == op]
        assert f"{op} [cpu]: {' '.join(dtypes)}" in cli_text
    assert "abs [cpu] float32: example_c loses to cpu" in cli_text
    assert f"skipped plugins: {len(cli_json['skipped']) or 'none'}" in cli_text


def test_verbose_text_measures_each_path(cli_text):
    # Every path this torch offers, with a cost in ns, and torch's own pair
    # beside the shim; the reads leave the process on the path it chose.
    line = next(l for l in cli_text.splitlines() if l.startswith("  cost per tensor, measured now"))
    offered = ["offset"] + (["shim"] if SHIM else []) + (["exchange"] if bridge.info()["exchange"]["available"] else [])
    for name in offered:
        assert re.search(rf"\b{name} \d+ ns", line), line
    assert ("torch's shim pair alone" in line) is SHIM, line
    costs = bridge.path_costs(iterations=2000, rounds=1)
    assert set(costs) == set(offered) | ({"torch's shim pair"} if SHIM else set())
    assert all(0 < ns < 1e6 for ns in costs.values()), costs
    assert bridge.path() == AUTO_PATH


def test_summary_comes_first_and_is_short(cli_summary, cli_json):
    """Without --verbose: what a person came for, not 137 kernel lines."""
    lines = cli_summary.splitlines()
    assert len(lines) <= 40, cli_summary
    assert lines[2] == f"bridge path: {AUTO_PATH}" and lines[3].startswith("  why: ")
    for p in cli_json["plugins"]:
        assert f"  {p['name']} {p['version']} ({p['kind']}, ABI {p['abi']}, {len(p['kernels'])} kernels)" in cli_summary
    for s in cli_json["skipped"]:
        assert f"  {s['path']}: {s['reason']}" in cli_summary  # whole, never cut
    n = len(cli_json["shadowed"])
    assert f"shadowed kernels: {n} (" in cli_summary
    assert " loses to " not in cli_summary and "--verbose" in cli_summary
    pairs = {}
    for s in cli_json["shadowed"]:
        pairs[(s["winner"], s["loser"])] = pairs.get((s["winner"], s["loser"]), 0) + 1
    for (winner, loser), count in pairs.items():
        assert f"{winner} over {loser}: {count}" in cli_summary


def test_collect_in_process_follows_the_forced_path(path):
    data = info.collect()
    assert data["bridge"]["path"] == path == bridge.path()
    assert data["torch"] == torch.__version__
    text = info.render(data)
    assert f"bridge path: {path}" in text


def test_kernel_for_refuses_an_unknown_device():
    with pytest.raises(ValueError, match="tpu"):
        plugins.kernel_for("abs", "tpu", "float32")


@pytest.mark.subprocess
def test_excluding_cpu_falls_back_to_example_c():
    r = run_python(
        """
        import json, torch, torchferry
        from torchferry import ops, plugins, bridge
        x = torch.randn(257) * 3
        y = ops.abs(x)
        z = ops.add(x, y, alpha=2.0)
        try:
            ops.abs(x.double())
            f64 = "served by " + str(plugins.kernel_for("abs", "cpu", "float64"))
        except NotImplementedError as e:
            f64 = "NotImplementedError: " + str(e)
        print(json.dumps({
            "abs": plugins.kernel_for("abs", "cpu", "float32"),
            "add": plugins.kernel_for("add", "cpu", "float32"),
            "exp": plugins.kernel_for("exp", "cpu", "float32"),
            "abs_ok": bool(torch.equal(y, torch.abs(x))),
            "add_ok": bool(torch.allclose(z, x + 2 * torch.abs(x))),
            "f64": f64,
            "loaded": [p["name"] for p in plugins.loaded()],
            "skipped": plugins.skipped(),
            "shadowed": plugins.shadowed(),
        }))
        """,
        TORCHFERRY_PLUGINS="-cpu",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert d["abs"] == "example_c" and d["add"] == "example_c"
    assert d["abs_ok"] and d["add_ok"]
    assert "cpu" not in d["loaded"] and "example_c" in d["loaded"]
    assert d["exp"] != "cpu"
    assert not [s for s in d["shadowed"] if s["winner"] == "cpu"]
    cpu_skip = [s for s in d["skipped"] if s["path"].endswith("torchferry_cpu.so")]
    assert cpu_skip and "TORCHFERRY_PLUGINS" in cpu_skip[0]["reason"]
    assert d["f64"].startswith("NotImplementedError: abs(): no loaded plugin has a kernel for float64") or d[
        "f64"
    ] == "served by aten"


@pytest.mark.subprocess
def test_broken_file_on_the_plugin_path_is_skipped_with_a_reason(tmp_path):
    junk = tmp_path / "torchferry_junk.so"
    junk.write_text("this is not a shared library\n")
    data = json.loads(cli("--json", TORCHFERRY_PLUGIN_PATH=tmp_path))
    assert data["plugin_search"]["TORCHFERRY_PLUGIN_PATH"] == str(tmp_path)
    skipped = [s for s in data["skipped"] if s["path"] == str(junk)]
    assert len(skipped) == 1, data["skipped"]
    assert "torchferry_junk.so" in skipped[0]["reason"] and "cannot load" in skipped[0]["reason"]
    assert "cpu" in by_name(data["plugins"])
    # ... and a process with it on the path keeps working
    r = run_python(
        """
        import torch, torchferry
        from torchferry import ops, plugins
        x = torch.randn(100)
        assert torch.equal(ops.neg(x), -x)
        assert torch.allclose(ops.softmax(x, 0), torch.softmax(x, 0))
        print("skipped:", [s["path"] for s in plugins.skipped()])
        print("working")
        """,
        TORCHFERRY_PLUGIN_PATH=tmp_path,
        TORCHFERRY_LOG="debug",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert str(junk) in r.stdout and r.stdout.strip().endswith("working")
    # TORCHFERRY_LOG=debug tells the same story on stderr
    assert "torchferry: [loader] skipped torchferry_junk.so: cannot load" in r.stderr
    assert "loaded native plugin 'cpu'" in r.stderr


def test_in_process_ops_still_come_from_cpu(path):
    x = make((5,))
    with conversions(path, 2):
        assert_matches(torchferry.ops.abs(x), torch.abs(x))
    assert plugins.kernel_for("abs", "cpu", "float32") == "cpu"


def test_info_says_when_the_plugin_variables_were_ignored():
    data = info.collect()
    assert data["plugin_search"]["ignored"] == [] and data["plugin_search"]["privileged"] is False
    assert "(ignored)" not in info.render(data) and "ignored TORCHFERRY" not in info.render(data)
    data["plugin_search"].update(TORCHFERRY_PLUGIN_PATH="/elsewhere", TORCHFERRY_PLUGINS="x",
                                 ignored=["TORCHFERRY_PLUGIN_PATH", "TORCHFERRY_PLUGINS"], privileged=True)
    text = info.render(data)
    assert "TORCHFERRY_PLUGIN_PATH=/elsewhere (ignored)" in text and "TORCHFERRY_PLUGINS=x (ignored)" in text
    assert "ignored TORCHFERRY_PLUGIN_PATH, TORCHFERRY_PLUGINS: this process runs with privileges" in text


@pytest.mark.subprocess
@pytest.mark.skipif(os.geteuid() != 0, reason="making a process whose real and effective uids differ needs root")
@pytest.mark.skipif("LD_PRELOAD" in os.environ or "ASAN_OPTIONS" in os.environ,
                    reason="a privileged process drops LD_PRELOAD, which the sanitizer runtime needs")
def test_a_privileged_process_ignores_the_plugin_variables(tmp_path):
    # Real uid nobody, effective uid root: what a setuid-root program runs
    # as. The environment must not choose the code such a process loads.
    junk = tmp_path / "torchferry_junk.so"
    junk.write_text("this is not a shared library\n")
    os.chmod(tmp_path, 0o755)
    env = clean_env(TORCHFERRY_PLUGIN_PATH=tmp_path, TORCHFERRY_PLUGINS="-cpu", TORCHFERRY_BRIDGE="offset")

    def as_setuid_root():
        os.setresuid(65534, 0, 0)

    def info_of(*args, **kwargs):
        r = subprocess.run([sys.executable, "-m", "torchferry", "info", *args], env=env, capture_output=True,
                           text=True, timeout=180, **kwargs)
        assert r.returncode == 0, r.stderr[-3000:]
        return r

    plain = json.loads(info_of("--json").stdout)
    assert plain["plugin_search"]["ignored"] == [] and "cpu" not in by_name(plain["plugins"])
    assert any(s["path"] == str(junk) for s in plain["skipped"])
    assert plain["bridge"]["reason"] == "forced by TORCHFERRY_BRIDGE=offset"

    r = info_of("--json", preexec_fn=as_setuid_root)
    data = json.loads(r.stdout)
    assert data["plugin_search"]["privileged"] is True
    assert data["plugin_search"]["ignored"] == ["TORCHFERRY_PLUGIN_PATH", "TORCHFERRY_PLUGINS", "TORCHFERRY_BRIDGE"]
    assert not data["bridge"]["reason"].startswith("forced")
    assert "cpu" in by_name(data["plugins"])  # TORCHFERRY_PLUGINS=-cpu was not read
    assert not any(str(tmp_path) in s["path"] for s in data["skipped"])  # nor the path
    assert "TORCHFERRY_PLUGIN_PATH is set but ignored: this process runs with privileges" in r.stderr
    text = info_of(preexec_fn=as_setuid_root).stdout
    assert f"TORCHFERRY_PLUGIN_PATH={tmp_path} (ignored)" in text
    assert ("ignored TORCHFERRY_PLUGIN_PATH, TORCHFERRY_PLUGINS, TORCHFERRY_BRIDGE: this process runs with "
            "privileges") in text
