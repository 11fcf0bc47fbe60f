"""The plugin SDK inside the installed package: the header, ABI.md, the
pkg-config file and the CMake package, and `python -m torchferry config`
that points a build at them. Each build here uses the installed package
alone: the plugin source is copied out of the tree first, and no -I names
the source tree."""

import os
import shutil
import subprocess
import sys

import pytest

import torchferry
from torchferry import config
from conftest import HERE, clean_env, exported_symbols

ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLE_C = os.path.join(ROOT, "plugins", "example_c", "example_c.c")

pytestmark = pytest.mark.subprocess


def cli(*args):
    r = subprocess.run([sys.executable, "-m", "torchferry", "config", *args], capture_output=True, text=True,
                       env=clean_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_package_carries_the_sdk():
    package = os.path.dirname(torchferry.__file__)
    assert config.include_dir() == torchferry.include_dir() == os.path.join(package, "include")
    with open(os.path.join(config.include_dir(), "torchferry.h")) as f, open(
        os.path.join(ROOT, "abi", "torchferry.h")
    ) as g:
        assert f.read() == g.read()
    assert os.path.isfile(config.abi_doc())
    with open(os.path.join(os.path.dirname(config.abi_doc()), "plugin.map")) as f:
        assert "global: torchferry_plugin_entry;" in f.read()
    assert os.path.isfile(os.path.join(config.pkgconfig_dir(), "torchferry.pc"))
    assert os.path.isfile(os.path.join(config.cmake_dir(), "torchferryConfig.cmake"))
    assert os.path.isfile(os.path.join(config.cmake_dir(), "torchferryConfigVersion.cmake"))
    assert torchferry.plugin_dir() == torchferry.PLUGIN_DIR


def test_config_prints_each_answer_in_a_fixed_order():
    out = cli("--plugin-dir", "--include-dir", "--cflags").splitlines()
    assert out == [config.cflags(), config.include_dir(), config.plugin_dir()]
    assert cli("--cmake-dir").strip() == config.cmake_dir()
    assert cli("--pkgconfig-dir").strip() == config.pkgconfig_dir()
    everything = cli()
    for name in ("cflags", "include-dir", "plugin-dir", "cmake-dir", "pkgconfig-dir"):
        assert f"{name}: " in everything


def test_config_refuses_an_unknown_option():
    r = subprocess.run([sys.executable, "-m", "torchferry", "config", "--libs"], capture_output=True, text=True,
                       env=clean_env(), timeout=120)
    assert r.returncode == 2 and "unrecognized arguments: --libs" in r.stderr


def load_alone(path, name):
    """Loads the plugin file at `path` by itself in a fresh process; returns
    what plugins.loaded() says of it."""
    code = ("import json, torchferry; print('REPORT' + json.dumps(["
            "p for p in torchferry.plugins.loaded()]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=clean_env(TORCHFERRY_PLUGIN_PATH=path, TORCHFERRY_PLUGINS=name))
    assert r.returncode == 0, r.stderr
    import json

    return json.loads(r.stdout.split("REPORT", 1)[1])


def test_cflags_build_a_plugin_out_of_tree(tmp_path):
    # The plain-C example, copied away from the tree's abi/ folder.
    src = tmp_path / "example_c.c"
    shutil.copy(EXAMPLE_C, src)
    so = tmp_path / "torchferry_example_c.so"
    cc = os.environ.get("CC", "cc")
    flags = cli("--cflags").split()
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC", *flags, str(src), "-o", str(so),
                        "-lm"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # Hidden visibility: the entry is the one dynamic symbol it defines.
    assert exported_symbols(so) == ["torchferry_plugin_entry"]
    (loaded,) = load_alone(str(so), "example_c")
    assert loaded["path"] == str(so) and "example::axpby" in loaded["declared_ops"]


def test_pkg_config_finds_the_header(tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config is not installed")
    env = clean_env(PKG_CONFIG_PATH=config.pkgconfig_dir())
    r = subprocess.run(["pkg-config", "--cflags", "torchferry"], capture_output=True, text=True, env=env, check=True)
    include = [f for f in r.stdout.split() if f.startswith("-I")]
    assert len(include) == 1 and os.path.samefile(include[0][2:], config.include_dir())
    assert "-fvisibility=hidden" in r.stdout.split()
    version = subprocess.run(["pkg-config", "--modversion", "torchferry"], capture_output=True, text=True, env=env,
                             check=True)
    assert version.stdout.strip() == torchferry.__version__


def test_cmake_find_package_builds_the_template_plugin(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "templates", "vendor_plugin"), src)
    # A vendor's C++ instantiates std:: templates, whose weak symbols hidden
    # visibility alone leaves exported.
    with open(src / "src" / "vendor_plugin.cc", "a", encoding="utf-8") as f:
        f.write("\n#include <map>\n#include <string>\n"
                "std::map<std::string, int>& VendorRegistry() {\n"
                "  static std::map<std::string, int> registry;\n"
                "  registry[\"scale\"] += 1;\n"
                "  return registry;\n}\n")
    build = tmp_path / "build"
    configure = subprocess.run(["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja",
                                f"-Dtorchferry_DIR={cli('--cmake-dir').strip()}"],
                               capture_output=True, text=True, timeout=300)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    compile_ = subprocess.run(["cmake", "--build", str(build), "-v"], capture_output=True, text=True, timeout=300)
    assert compile_.returncode == 0, compile_.stdout + compile_.stderr
    # The imported target added the installed include folder and hidden
    # visibility, and nothing of the source tree.
    assert f"-isystem {config.include_dir()}" in compile_.stdout or f"-I{config.include_dir()}" in compile_.stdout
    assert "-fvisibility=hidden" in compile_.stdout
    assert os.path.join(ROOT, "abi") not in compile_.stdout
    so = build / "torchferry_vendor_plugin.so"
    # A C++ plugin exports its entry alone: nothing of the C++ runtime (a
    # template instance of std::, a typeinfo) that another plugin could bind.
    assert exported_symbols(so) == ["torchferry_plugin_entry"]
    (loaded,) = load_alone(str(so), "vendor_plugin")
    assert loaded["declared_ops"] == ["vendor_plugin::scale"]


def test_cmake_refuses_a_newer_version_than_installed(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p NONE)\nfind_package(torchferry 99 REQUIRED)\n")
    r = subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b"),
                        f"-Dtorchferry_DIR={config.cmake_dir()}"], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and torchferry.__version__ in r.stderr
