"""`python -m torchferry build-aten`: what it needs is named when missing, the
package carries what it compiles, and its folder is searched after the
package's own plugins. (The build itself runs in `./dev test wheel`, against
the wheel in a venv that holds only torch: it takes minutes.)"""

import os
import shutil
import subprocess
import sys

import pytest
import torch

import torchferry
from torchferry import aten_build
from conftest import clean_env, run_python

CHECKOUT_ATEN = os.path.join(os.path.dirname(__file__), "..", "..", "plugins", "aten")


def build_aten(tmp_path, **env):
    return subprocess.run(
        [sys.executable, "-m", "torchferry", "build-aten", "--out", str(tmp_path / "out")],
        env=clean_env(TORCHFERRY_CACHE=tmp_path / "cache", **env),
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )


@pytest.mark.subprocess
def test_a_missing_compiler_is_named(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    r = build_aten(tmp_path, PATH=empty, CXX=None)
    assert r.returncode == 2
    assert "found no C++ compiler (looked for $CXX, c++, g++ and clang++ on PATH)" in r.stderr
    assert "apt install g++" in r.stderr
    assert not (tmp_path / "out" / aten_build.PLUGIN_FILE).exists()


@pytest.mark.subprocess
def test_a_cxx_that_is_not_there_is_named(tmp_path):
    r = build_aten(tmp_path, CXX="no-such-compiler-here")
    assert r.returncode == 2
    assert "CXX names 'no-such-compiler-here', which is not on PATH" in r.stderr


def test_the_package_carries_every_source_of_the_plugin():
    # The sources, the link map, and what the in-tree build probes with: the
    # probe files and find_torch.py (pip may add its __pycache__).
    carried = sorted(f for f in os.listdir(aten_build.source_dir()) if f != "__pycache__")
    wanted = sorted(
        f
        for f in os.listdir(CHECKOUT_ATEN)
        if f.endswith((".cc", ".h")) or f in ("exports.map", "find_torch.py", "probes")
    )
    assert carried == wanted
    probes = os.path.join(CHECKOUT_ATEN, "probes")
    assert sorted(os.listdir(os.path.join(aten_build.source_dir(), "probes"))) == sorted(os.listdir(probes))


def test_the_folder_is_per_torch_and_follows_the_cache_setting(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHFERRY_CACHE", str(tmp_path))
    assert aten_build.user_plugin_dir("2.6.0") == str(tmp_path / "aten" / "torch-2.6.0")
    monkeypatch.delenv("TORCHFERRY_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert aten_build.cache_root() == str(tmp_path / "xdg" / "torchferry")
    assert torchferry.BUILT_PLUGIN_DIR.endswith(os.path.join("aten", f"torch-{torch.__version__}"))


@pytest.mark.subprocess
def test_the_folder_is_searched_after_the_package_and_info_says_so(tmp_path):
    built = tmp_path / "aten" / f"torch-{torch.__version__}"
    built.mkdir(parents=True)
    packaged = os.path.join(torchferry.PLUGIN_DIR, aten_build.PLUGIN_FILE)
    have_packaged = os.path.exists(packaged)
    if have_packaged:
        shutil.copy(packaged, built / aten_build.PLUGIN_FILE)
    r = run_python(
        """
        import torchferry
        from torchferry import info, plugins
        loaded = {p["name"]: p["path"] for p in plugins.loaded()}
        print("ATEN", loaded.get("aten"))
        for s in plugins.skipped():
            print("SKIPPED", s["path"], s["reason"])
        print(info.render(info.collect(), verbose=False))
        """,
        TORCHFERRY_CACHE=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert f"then {torchferry.PLUGIN_DIR}, then {built};" in r.stdout
    if have_packaged:
        # Both load under this torch: the package's keeps its place, and the
        # copy is listed as skipped, with the one it would have shadowed.
        assert f"ATEN {packaged}" in r.stdout
        assert f"SKIPPED {built / aten_build.PLUGIN_FILE}" in r.stdout


@pytest.mark.subprocess
def test_without_the_folder_nothing_is_searched(tmp_path):
    r = run_python(
        "from torchferry import info; print(info.render(info.collect(), verbose=False))",
        TORCHFERRY_CACHE=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert str(tmp_path) not in r.stdout
