"""What the installed package's plugins need at run time: the C and C++
runtimes, and what the package carries beside them (the CPU plugin's
libhwy.so.1, found through its $ORIGIN run path), so that the wheel works on
a machine with none of the build's libraries."""

import os
import re
import shutil
import subprocess
import textwrap

import pytest

import torchferry
from conftest import HERE, clean_env, run_child

PLUGINS = os.path.join(os.path.dirname(torchferry.__file__), "plugins")
# glibc, the GCC runtimes, and what torch's own wheel brings for the plugins
# that link torch (aten, cuda).
BASE = re.compile(r"^(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so\.\d+$")
TORCH_LIBS = re.compile(r"^lib(c10|torch|torch_cpu|torch_cuda|c10_cuda|torch_python|cudart|cuda)(\.so.*)?$")


def dynamic(path):
    r = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]+)\]", r.stdout)
    return needed, runpath


def plugin_files():
    return sorted(f for f in os.listdir(PLUGINS) if f.startswith("torchferry_") and f.endswith(".so"))


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
@pytest.mark.parametrize("name", plugin_files())
def test_each_plugin_needs_only_the_runtimes_and_what_the_package_carries(name):
    needed, runpath = dynamic(os.path.join(PLUGINS, name))
    for lib in needed:
        if BASE.match(lib) or TORCH_LIBS.match(lib):
            continue
        assert os.path.isfile(os.path.join(PLUGINS, lib)), (
            f"{name} needs {lib}, which is neither a C/C++ runtime nor carried in {PLUGINS}")
        assert "$ORIGIN" in ":".join(runpath), f"{name} needs the carried {lib} but has no $ORIGIN run path: {runpath}"


def test_the_cpu_plugin_loads_the_carried_highway():
    # In a fresh process the run path comes before the system's folders, so
    # the copy beside the plugin is the one mapped, whatever the system has.
    code = """
        import torch, torchferry
        from torchferry import ops
        assert ops.abs(torch.tensor([-1.5])).item() == 1.5
        print([l.split()[-1] for l in open('/proc/self/maps') if 'libhwy' in l][0])
    """
    r = run_child(["-c", textwrap.dedent(code)], clean_env(PYTHONPATH=HERE), timeout=120, text=True)
    assert r.returncode == 0, r.stderr
    assert os.path.realpath(r.stdout.strip()) == os.path.realpath(os.path.join(PLUGINS, "libhwy.so.1"))
