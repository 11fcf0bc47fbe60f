"""Plugins that installed distributions register in the `torchferry.plugins`
entry point group: found with no environment variable, selected, shadowed,
listed and logged like any other plugin, and a broken entry point (its module
fails to import, its callable raises, a value of the wrong type, a path that
does not exist) is a skipped plugin with its reason, never an import
failure. Each distribution here is a dist-info folder on PYTHONPATH, as pip
would install it; the plugin is the template's, compiled against the
installed SDK."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import torchferry
from conftest import HERE, clean_env

ROOT = os.path.dirname(os.path.dirname(HERE))
TEMPLATE_SRC = os.path.join(ROOT, "templates", "vendor_plugin", "src", "vendor_plugin.cc")

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def plugin_so(tmp_path_factory):
    out = tmp_path_factory.mktemp("vendor_so") / "torchferry_vendor_plugin.so"
    cxx = os.environ.get("CXX", "c++")
    subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1",
                    *torchferry.cflags().split(), TEMPLATE_SRC, "-o", str(out)],
                   check=True, capture_output=True, timeout=300)
    return str(out)


def make_distribution(site, dist, entries, files=None):
    """A distribution `dist` installed in `site`: a dist-info folder with the
    entry points `entries` ({name: value}) and `files` ({relative path:
    text, or a path to copy})."""
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = ["[torchferry.plugins]"] + [f"{k} = {v}" for k, v in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for rel, content in (files or {}).items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str) and os.path.isfile(content):
            shutil.copy(content, target)
        else:
            target.write_text(textwrap.dedent(content))
    return site


REPORT = """
import json, torchferry
from torchferry import plugins
print("REPORT" + json.dumps({
    "loaded": {p["name"]: p["path"] for p in plugins.loaded()},
    "skipped": plugins.skipped(),
    "shadowed": plugins.shadowed(),
    "entry_points": plugins.entry_points(),
    "add": plugins.kernel_for("add", "cpu", "float32"),
}))
"""


def run(site, code=REPORT, **env):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180,
                       env=clean_env(PYTHONPATH=str(site), **env), cwd=str(site))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    report = json.loads(r.stdout.split("REPORT", 1)[1].splitlines()[0]) if "REPORT" in r.stdout else None
    return report, r


def vendor_site(tmp_path, plugin_so, init_code="raise RuntimeError('the package was imported')\n"):
    # The package's __init__ raises: naming a package must not run it.
    return make_distribution(tmp_path / "site", "vendor_dist", {"vendor": "vendorpkg"}, {
        "vendorpkg/__init__.py": init_code,
        "vendorpkg/torchferry_vendor_plugin.so": plugin_so,
    })


def test_a_package_entry_point_loads_its_folder_without_running_it(tmp_path, plugin_so):
    site = vendor_site(tmp_path, plugin_so)
    report, _ = run(site)
    folder = str(site / "vendorpkg")
    assert report["loaded"]["vendor_plugin"] == os.path.join(folder, "torchferry_vendor_plugin.so")
    (entry,) = report["entry_points"]
    assert entry == {"name": "vendor", "value": "vendorpkg", "distribution": "vendor_dist 0.1", "path": folder,
                     "error": None}
    # Searched before the package's own plugins: its add shadows the CPU
    # plugin's, as a TORCHFERRY_PLUGIN_PATH entry would.
    assert report["add"] == "vendor_plugin"
    assert {"op": "add", "device": "cpu", "dtype": "float32", "loser": "cpu", "winner": "vendor_plugin"} in \
        report["shadowed"]
    assert not [s for s in report["skipped"] if "vendor" in s["path"]]


def test_the_entry_point_plugin_serves_its_ops(tmp_path, plugin_so):
    site = vendor_site(tmp_path, plugin_so)
    _, r = run(site, """
        import torch, torchferry
        from torchferry import ops
        x, y = torch.randn(3, 4), torch.randn(4)
        torch.testing.assert_close(ops.vendor_plugin.scale(x.t(), factor=3.0), x.t() * 3)
        torch.testing.assert_close(ops.add(x, y, alpha=2.0), x + 2 * y)
        print("REPORT{}")
    """)


def test_info_and_the_debug_log_name_the_entry_point(tmp_path, plugin_so):
    site = vendor_site(tmp_path, plugin_so)
    r = subprocess.run([sys.executable, "-m", "torchferry", "info"], capture_output=True, text=True, timeout=180,
                       env=clean_env(PYTHONPATH=str(site), TORCHFERRY_LOG="debug"), cwd=str(site))
    assert r.returncode == 0, r.stderr
    assert f"then entry points (vendor={site / 'vendorpkg'})" in r.stdout
    assert "vendor_plugin 0.1.0 (native" in r.stdout
    assert f"entry point vendor = vendorpkg (vendor_dist 0.1): '{site / 'vendorpkg'}'" in r.stderr


def test_selection_and_precedence_treat_it_like_any_plugin(tmp_path, plugin_so):
    site = vendor_site(tmp_path, plugin_so)
    report, _ = run(site, TORCHFERRY_PLUGINS="-vendor_plugin")
    assert "vendor_plugin" not in report["loaded"] and report["add"] == "cpu"
    assert any("'vendor_plugin' is not selected by TORCHFERRY_PLUGINS='-vendor_plugin'" in s["reason"]
               for s in report["skipped"])
    # TORCHFERRY_PLUGIN_PATH comes first: its copy of the plugin wins and the
    # entry point's is a duplicate.
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(plugin_so, other / "torchferry_vendor_plugin.so")
    report, _ = run(site, TORCHFERRY_PLUGIN_PATH=str(other))
    assert report["loaded"]["vendor_plugin"] == str(other / "torchferry_vendor_plugin.so")
    (dup,) = [s for s in report["skipped"] if s["name"] == "vendor_plugin"]
    assert "is already loaded from" in dup["reason"] and dup["path"].startswith(str(site))


def test_module_attr_values_a_str_a_path_or_a_callable(tmp_path, plugin_so):
    for value, code in [
        ("vendorpaths:PLUGIN", "import os\nPLUGIN = os.path.join(os.path.dirname(__file__), 'lib', "
                               "'torchferry_vendor_plugin.so')\n"),
        ("vendorpaths:PLUGIN", "import os, pathlib\nPLUGIN = pathlib.Path(__file__).parent / 'lib'\n"),
        ("vendorpaths:plugin_dir", "import os\ndef plugin_dir():\n    return os.path.join(os.path.dirname("
                                   "__file__), 'lib')\n"),
    ]:
        site = tmp_path / f"site{abs(hash(code))}"
        make_distribution(site, "paths_dist", {"vendor": value}, {
            "vendorpaths.py": code, "lib/torchferry_vendor_plugin.so": plugin_so})
        report, _ = run(site)
        assert report["loaded"]["vendor_plugin"] == str(site / "lib" / "torchferry_vendor_plugin.so"), code
        assert report["entry_points"][0]["error"] is None


# Broken entry points: (value, module source, a substring of the reason).
BROKEN = {
    "import_error": ("no_such_module_tf:path", None, "ModuleNotFoundError: No module named 'no_such_module_tf'"),
    "raises_at_import": ("brokenmod:path", "raise ImportError('libvendor.so.3: cannot open shared object')\n",
                         "ImportError: libvendor.so.3: cannot open shared object"),
    "exits_at_import": ("brokenmod:path", "import sys\nsys.exit(3)\n", "SystemExit: 3"),
    "callable_raises": ("brokenmod:path", "def path():\n    raise OSError('no device')\n", "OSError: no device"),
    "wrong_type": ("brokenmod:path", "path = 42\n", "expected a str or os.PathLike naming a plugin folder or "
                   "file (or a callable returning one), got int"),
    "callable_wrong_type": ("brokenmod:path", "def path():\n    return [b'/x']\n", "got list"),
    "bytes": ("brokenmod:path", "path = b'/tmp'\n", "got bytes"),
    "missing_file": ("brokenmod:path", "path = '/nonexistent/torchferry_x.so'\n",
                     "it names /nonexistent/torchferry_x.so, which does not exist"),
    "relative": ("brokenmod:path", "path = 'lib/torchferry_x.so'\n", "expected an absolute path, got "
                 "'lib/torchferry_x.so'"),
    "nul": ("brokenmod:path", "path = '/tmp/a\\0b'\n", "holds a NUL character"),
    "missing_attr": ("brokenmod:nothing", "x = 1\n", "AttributeError"),
    "not_a_package": ("brokenmod", "x = 1\n", "'brokenmod' is a module, not a package"),
    "no_such_package": ("no_such_package_tf", None, "no module named 'no_such_package_tf' is installed"),
    "undecodable": ("brokenmod:path", "path = '/tmp/caf\\udce9'\n", "/tmp/caf\\udce9, which does not exist"),
    "base_exception": ("brokenmod:path", "class VendorAbort(BaseException):\n    pass\n"
                       "raise VendorAbort('licence server unreachable')\n",
                       "VendorAbort: licence server unreachable"),
    "generator_exit": ("brokenmod:path", "raise GeneratorExit('closed')\n", "GeneratorExit: closed"),
    "unprintable": ("brokenmod:path", "class E(BaseException):\n    def __str__(self):\n"
                    "        raise ValueError('no')\nraise E()\n", "E: (its message could not be read)"),
    "queries_while_loading": ("brokenmod:path", "def path():\n    import torchferry.plugins\n"
                              "    return torchferry.plugins.loaded()\n",
                              "RuntimeError: torchferry is still loading its plugins: this ran during "
                              "`import torchferry`"),
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_broken_entry_point_is_a_skipped_plugin(tmp_path, plugin_so, kind):
    value, source, reason = BROKEN[kind]
    files = {"brokenmod.py": source} if source else {}
    site = make_distribution(tmp_path / "site", "broken_dist", {"bad": value}, files)
    # A good distribution beside it still loads.
    make_distribution(site, "vendor_dist", {"vendor": "vendorpkg"}, {
        "vendorpkg/__init__.py": "", "vendorpkg/torchferry_vendor_plugin.so": plugin_so})
    report, r = run(site)
    assert "vendor_plugin" in report["loaded"] and "cpu" in report["loaded"]
    (skip,) = [s for s in report["skipped"] if s["path"] == f"entry point bad = {value}"]
    assert reason in skip["reason"], skip["reason"]
    assert "entry point bad = " + value + " of broken_dist 0.1 in group 'torchferry.plugins'" in skip["reason"]
    # Warned about once on stderr, as any skipped plugin is.
    assert r.stderr.count(f"entry point bad = {value}") == 1, r.stderr
    (entry,) = [e for e in report["entry_points"] if e["name"] == "bad"]
    assert entry["path"] is None and reason in entry["error"]


def test_info_lists_a_broken_entry_point(tmp_path):
    site = make_distribution(tmp_path / "site", "broken_dist", {"bad": "no_such_module_tf:path"})
    r = subprocess.run([sys.executable, "-m", "torchferry", "info", "--json"], capture_output=True, text=True,
                       timeout=180, env=clean_env(PYTHONPATH=str(site)), cwd=str(site))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["plugin_search"]["entry_points"][0]["error"].startswith("entry point bad = no_such_module_tf:path")
    assert any(s["path"] == "entry point bad = no_such_module_tf:path" for s in data["skipped"])



def test_an_entry_point_module_that_imports_torchferry_ops_keeps_every_op(tmp_path, plugin_so):
    # The vendor's module imports torchferry.ops (and the torch.compile
    # registration) while torchferry is still loading its plugins.
    site = make_distribution(tmp_path / "site", "paths_dist", {"vendor": "vendorpaths:plugin_dir"}, {
        "vendorpaths.py": "import os\nfrom torchferry import ops, library\n"
                          "def plugin_dir():\n    return os.path.join(os.path.dirname(__file__), 'lib')\n",
        "lib/torchferry_vendor_plugin.so": plugin_so})
    _, r = run(site, """
        import json, torch, torchferry
        from torchferry import ops
        x = torch.randn(3, 4)
        torch.testing.assert_close(ops.vendor_plugin.scale(x, factor=3.0), x * 3)
        torch.testing.assert_close(ops.example.axpby(x, x, a=1.0, b=1.0), 2 * x)
        assert {"example", "vendor_plugin", "abs"} <= set(ops.__all__), ops.__all__
        torch.testing.assert_close(torch.ops.torchferry.example__axpby(x, x, a=1.0, b=1.0), 2 * x)
        torch.testing.assert_close(torch.ops.torchferry.vendor_plugin__scale(x, factor=3.0), x * 3)
        print("REPORT{}")
    """)


def test_one_file_reached_twice_is_loaded_once(tmp_path, plugin_so):
    # The entry point names the package's folder, and TORCHFERRY_PLUGIN_PATH
    # that folder too, or a symlink to its plugin file.
    site = vendor_site(tmp_path, plugin_so)
    folder = site / "vendorpkg"
    link = tmp_path / "torchferry_vendor_link.so"
    link.symlink_to(folder / "torchferry_vendor_plugin.so")
    plugin = str(folder / "torchferry_vendor_plugin.so")
    for path, first in ((str(folder), plugin), (str(link), str(link))):
        report, r = run(site, TORCHFERRY_PLUGIN_PATH=path, TORCHFERRY_LOG="debug")
        assert "vendor_plugin" in report["loaded"], path
        assert not [s for s in report["skipped"] if "already loaded" in s["reason"]], report["skipped"]
        (again,) = [s for s in report["skipped"] if s["path"].startswith(str(folder))]
        assert again["reason"] == f"{plugin}: the file '{first}' reached again on the search path; loaded once"
        # Said at debug level only: nothing is wrong.
        assert "reached again on the search path; loaded once" in r.stderr, r.stderr[-3000:]
        _, quiet = run(site, TORCHFERRY_PLUGIN_PATH=path)
        assert "reached again" not in quiet.stderr and "already loaded" not in quiet.stderr
