"""The vendor's path end to end, as `./dev test kit` runs it: the template
(templates/vendor_plugin) copied out of the tree, built into a wheel against
the installed torchferry alone (its pkg-config file), installed into a fresh
venv beside torchferry, found there through its entry point with no
environment variable, its declared op and its built-in op called, and
`python -m torchferry check` run on it.

The fresh venv holds the vendor's wheel only and sees this venv's
site-packages (torch, torchferry) through a .pth file: a venv that installed
torch again would take minutes and prove nothing more."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

import torchferry
from conftest import HERE, clean_env, exported_symbols

ROOT = os.path.dirname(os.path.dirname(HERE))
TEMPLATE = os.path.join(ROOT, "templates", "vendor_plugin")

pytestmark = pytest.mark.subprocess


def sh(cmd, **kwargs):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kit")
    src = tmp / "vendor_plugin"
    shutil.copytree(TEMPLATE, src, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    # pip wheel, as the template's README says: the SDK found through
    # pkg-config, nothing of the source tree on any path.
    env = clean_env(PKG_CONFIG_PATH=torchferry.pkgconfig_dir())
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    sh([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp / "dist"),
        str(src)], env=env, cwd=str(tmp))
    (wheel,) = (tmp / "dist").glob("torchferry_vendor_plugin-0.1.0-*.whl")
    venv = tmp / "venv"
    sh([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = sh([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    with open(os.path.join(site, "torchferry_host.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
        if sysconfig.get_paths()["platlib"] != sysconfig.get_paths()["purelib"]:
            f.write(sysconfig.get_paths()["platlib"] + "\n")
    sh([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
        str(wheel)], env=clean_env())
    return {"python": str(python), "site": site, "tmp": tmp}


def in_venv(venv, *args, **kwargs):
    # No TORCHFERRY_* variable, and a folder that holds nothing of the tree.
    return subprocess.run([venv["python"], *args], capture_output=True, text=True, timeout=900,
                          env=clean_env(PYTHONPATH=None), cwd=str(venv["tmp"]), **kwargs)


def test_the_wheel_is_found_through_its_entry_point(fresh_venv):
    r = in_venv(fresh_venv, "-c", """
import json, os, torch, torchferry
from torchferry import ops, plugins
x, y = torch.randn(5, 3), torch.randn(3)
assert torch.equal(ops.vendor_plugin.scale(x.t(), factor=2.0), x.t() * 2.0)
torch.testing.assert_close(ops.add(x, y, alpha=0.5), x + 0.5 * y)
print("REPORT" + json.dumps({"loaded": {p["name"]: p["path"] for p in plugins.loaded()},
                              "entry_points": plugins.entry_points(),
                              "add": plugins.kernel_for("add", "cpu", "float32"),
                              "env": sorted(k for k in os.environ if k.startswith("TORCHFERRY"))}))
""")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.split("REPORT", 1)[1])
    assert report["env"] == []
    assert report["loaded"]["vendor_plugin"] == os.path.join(fresh_venv["site"], "torchferry_vendor_plugin",
                                                             "torchferry_vendor_plugin.so")
    (entry,) = report["entry_points"]
    assert entry["name"] == "vendor_plugin" and entry["distribution"] == "torchferry-vendor-plugin 0.1.0"
    assert report["add"] == "vendor_plugin"  # its add is searched before the package's
    # The wheel's plugin, built by meson through pkg-config: its entry alone.
    assert exported_symbols(report["loaded"]["vendor_plugin"]) == ["torchferry_plugin_entry"]


def test_check_passes_on_the_installed_plugin(fresh_venv):
    r = in_venv(fresh_venv, "-m", "torchferry", "check", "vendor_plugin", "--reference",
                "torchferry_vendor_plugin.reference:scale")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "check vendor_plugin 0.1.0" in r.stdout and "PASSED" in r.stdout
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in r.stdout.splitlines() if len(line.split()) > 2}
    assert set(rows[("vendor_plugin::scale", "float32")]) <= {"ok", "-"}
    assert set(rows[("add", "float32")]) <= {"ok", "-"} and "ok" in rows[("add", "float32")]


def test_the_host_venv_does_not_see_the_vendor_plugin():
    # The wheel went into the fresh venv only.
    assert "vendor_plugin" not in {p["name"] for p in torchferry.plugins.loaded()}
