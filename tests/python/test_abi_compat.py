"""The compatibility matrix in Python: tests/plugins/compat/compat.c built
against each frozen ABI header (tests/abi/v1_N) and today's, each loaded alone
in today's host, its kernels answering as torch does; and a plugin of a newer
minor, whose kernels this host's minor lacks, listed by `info` with what was
skipped and why. tests/loader/compat_test.cc runs the older hosts' side."""

import json
import os
import subprocess

import pytest

from conftest import HERE, run_python

ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, "tests", "plugins", "compat", "compat.c")
HEADERS = {
    "v1_0": "tests/abi/v1_0/torchferry.h",
    "v1_1": "tests/abi/v1_1/torchferry.h",
    "v1_2": "tests/abi/v1_2/torchferry.h",
    "current": "abi/torchferry.h",
}

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("compat")
    cc = os.environ.get("CC", "cc")
    paths = {}
    for label, header in HEADERS.items():
        so = out / f"torchferry_compat_{label}.so"
        subprocess.run(
            [cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1",
             "-fvisibility=hidden", f"-I{ROOT}", f'-DTF_COMPAT_HEADER="{header}"',
             f"-DTF_COMPAT_NAME=compat_{label}", SRC, "-o", str(so)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        paths[label] = str(so)
    return paths


SERVE = """
import json, torch, torch.nn.functional as F
import torchferry
from torchferry import info, ops, plugins
name = {name!r}
minor = {minor}
(p,) = plugins.loaded()
x = torch.randn(4, 6)[:, ::2]  # any strides
assert plugins.kernel_for("neg", "cpu", "float32") == name
assert torch.equal(ops.neg(x), torch.neg(x))
served = ["neg"]
if minor >= 1:
    twice = getattr(ops, name).twice
    assert torch.equal(twice(x), 2 * x)
    served.append(name + "::twice")
if minor >= 2:
    table = torch.randn(5, 3).t().contiguous().t()
    ids = torch.tensor([[4, 0], [2, 2]])
    assert torch.equal(ops.embedding(ids, table), F.embedding(ids, table))
    try:
        ops.embedding(torch.tensor([5]), table)
        raise AssertionError("no error for id 5")
    except IndexError as e:
        assert "id 5 at index 0 is outside [0, 5)" in str(e), e
    served.append("embedding")
print("REPORT" + json.dumps({{"abi": p["abi"], "host": info.collect()["abi"], "served": served,
                              "skipped_kernels": p["skipped_kernels"],
                              "refused": [s for s in plugins.skipped() if "not selected" not in s["reason"]]}}))
"""


@pytest.mark.parametrize("label", list(HEADERS))
def test_a_plugin_of_each_minor_loads_and_serves_in_this_host(built, label):
    name = f"compat_{label}"
    minor = 2 if label == "current" else int(label[-1])
    r = run_python(SERVE.format(name=name, minor=minor), TORCHFERRY_PLUGIN_PATH=built[label],
                   TORCHFERRY_PLUGINS=name)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    report = json.loads(r.stdout.split("REPORT", 1)[1])
    assert report["abi"] == f"1.{minor}" and report["host"] == "1.2"
    assert report["skipped_kernels"] == [] and report["refused"] == []


def test_info_lists_the_kernels_a_newer_plugin_brings_beyond_this_host(tmp_path):
    from torchferry import _C

    # The synthetic plugin of the next minor: one op this host lacks.
    path = tmp_path / "torchferry_newerminor.so"
    subprocess.run(
        [os.environ.get("CC", "cc"), "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden", f"-I{ROOT}",
         f"-I{os.path.join(ROOT, 'tests', 'plugins')}", os.path.join(ROOT, "tests", "plugins", "newerminor.c"),
         "-o", str(path)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    host = _C.ABI_VERSION
    plugin = f"1.{int(host.split('.')[1]) + 1}"
    r = run_python("from torchferry import info; info.main(verbose=True)", TORCHFERRY_PLUGIN_PATH=str(path),
                   TORCHFERRY_PLUGINS="newerminor")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  newerminor "))
    assert lines[at].startswith(f"  newerminor 0.0.1 (native, ABI {plugin}, 2 kernels) {path}; ")
    assert lines[at].endswith(
        f"; 1 kernel skipped, newer than this host's ABI {host}: op_from_the_future (cpu, float32) (--verbose: why)"
    ), lines[at]
    assert lines[at + 1] == (
        f"    skipped op_from_the_future (cpu, float32): op 'op_from_the_future' is unknown to this host "
        f"(ABI {host}, plugin {plugin})"
    )
    assert f"plugins (host ABI {host}; loaded in" in r.stdout
