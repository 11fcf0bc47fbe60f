"""Ops that plugins declare (ABI 1.1): the example plugin's example::axpby,
and tests/plugins/declared/declare.c built once per variant: a correct plugin
whose infer functions misbehave at call time, a second plugin that declares
the same schema, and plugins that each break one rule of ABI.md "Declared
ops". Each broken one is skipped with its own reason while the others keep
working, and a misbehaving infer is a Python exception, never a crash."""

import inspect
import json
import os
import subprocess

import pytest
import torch

import torchferry
from torchferry import ops, plugins
from conftest import HERE, run_python

ROOT = os.path.dirname(os.path.dirname(HERE))
DECLARE_SRC = os.path.join(ROOT, "tests", "plugins", "declared", "declare.c")

# FLAW number in declare.c -> (plugin stem, a substring of its skip reason
# that no other flaw's reason has). None: the plugin loads.
VARIANTS = {
    0: ("decl_good", None),
    1: ("dbad_schema_syntax", "the schema 'dbad::f(Tensr x) -> Tensor' is malformed at column 9: expected an "
        "argument type (Tensor, Tensor?, Tensor[], int, float, bool, Scalar), found 'Tensr'"),
    2: ("dbad_schema_default", "the default of 'k' does not fit its type int"),
    3: ("dbad_name_mismatch", "the schema declares 'dbad::g'; expected the declaration's name"),
    4: ("dbad_no_namespace", 'ops[0] (\'f\'): expected a name "namespace::name"'),
    5: ("dbad_null_infer", "infer is NULL"),
    6: ("dbad_null_schema", "schema is NULL"),
    7: ("dbad_duplicate", "ops[1] ('dbad::f'): declared twice (also ops[0])"),
    8: ("dbad_small_decl", "ops[0].struct_size is 24; expected at least ABI 1.1's 40"),
    9: ("dbad_plugin_v1_0_size", "but the plugin says ABI 1.1, whose tf_plugin is at least"),
    10: ("dbad_null_ops", "has num_ops = 2 but ops is NULL"),
    11: ("dbad_undeclared_kernel", "op 'dbad::g' is not declared by this plugin"),
    12: ("dbad_first_not_tensor", "the first argument must be a Tensor"),
    13: ("dbad_taken_namespace", "the namespace 'abs' is taken by torchferry.ops.abs"),
    14: ("dbad_tensor_list", "argument 'ys' is a Tensor[]; declared ops take tensors one by one"),
    15: ("decl_other", "declares op 'decl::twice' as 'decl::twice(Tensor x, *, float scale) -> Tensor', but "
         "plugin 'decl_good'"),
    16: ("dbad_two_returns", "returns 2 tensors; a declared op returns at most one"),
    17: ("decl_same", None),
}  # fmt: skip
BROKEN = {stem: reason for stem, reason in VARIANTS.values() if reason}

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("declared")
    cc = os.environ.get("CC", "cc")
    for flaw, (stem, _) in VARIANTS.items():
        subprocess.run(
            [cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1",
             f"-I{ROOT}", f"-DFLAW={flaw}", f"-DNAME={stem}", DECLARE_SRC,
             "-o", str(out / f"torchferry_{stem}.so")],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    return str(out)


def run(plugin_dir, code, **env):
    r = run_python(code, TORCHFERRY_PLUGIN_PATH=plugin_dir, **env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return json.loads(r.stdout.split("REPORT", 1)[1])


# --- the example plugin's op, in this process ---------------------------------


def test_example_axpby_is_an_op_like_the_others():
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    torch.testing.assert_close(ops.example.axpby(x, y, a=2.0, b=-0.5), 2 * x - 0.5 * y)
    # Any strides, ints where a float is asked, out= given.
    out = torch.empty(5, 3)
    got = ops.example.axpby(x.t(), y.t(), a=3, b=1, out=out)
    assert got is out
    torch.testing.assert_close(out, 3 * x.t() + y.t())
    assert str(inspect.signature(ops.example.axpby)) == "(x, y, *, a, b, out=None, stream=None)"
    assert ops.example.axpby.__doc__ == "a * x + b * y for x and y of one shape"
    assert plugins.kernel_for("example::axpby", "cpu", "float32") == "example_c"


def test_example_axpby_checks_like_the_others():
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    with pytest.raises(ValueError, match=r"example_c: example::axpby\(\): x and y must have one shape"):
        ops.example.axpby(x, torch.randn(5, 3), a=1.0, b=1.0)
    with pytest.raises(TypeError, match=r"missing required argument 'b'"):
        ops.example.axpby(x, y, a=1.0)
    with pytest.raises(TypeError, match=r"expected a to be a float, got str"):
        ops.example.axpby(x, y, a="2", b=1.0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'c'"):
        ops.example.axpby(x, y, a=1.0, b=1.0, c=2.0)
    with pytest.raises(ValueError, match=r"expected out of shape \[3, 5\], got \[2\]"):
        ops.example.axpby(x, y, a=1.0, b=1.0, out=torch.empty(2))
    with pytest.raises(ValueError, match="out overlaps an input"):
        ops.example.axpby(x, y, a=1.0, b=1.0, out=x)
    with pytest.raises(NotImplementedError, match="no loaded plugin has a kernel for float64"):
        ops.example.axpby(x.double(), y.double(), a=1.0, b=1.0)
    with pytest.raises(ValueError, match="stream= applies to CUDA tensors only"):
        ops.example.axpby(x, y, a=1.0, b=1.0, stream=1)
    w = torch.randn(3, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad") as e:
        ops.example.axpby(w, y, a=1.0, b=1.0)
    assert "out=" not in str(e.value)  # no out= was passed


def test_example_axpby_bumps_the_version_of_out():
    x, y, out = torch.randn(4), torch.randn(4), torch.empty(4)
    before = out._version
    ops.example.axpby(x, y, a=1.0, b=1.0, out=out)
    assert out._version == before + 1


def test_declared_ops_are_listed():
    declared = [s for s in ops.schemas() if s["declared_by"]]
    axpby = next(s for s in declared if s["name"] == "example::axpby")
    assert axpby["schema"] == "example::axpby(Tensor x, Tensor y, *, float a, float b) -> Tensor"
    assert axpby["declared_by"] == "example_c"
    assert "example" in ops.__all__
    example = next(p for p in plugins.loaded() if p["name"] == "example_c")
    assert example["declared_ops"] == ["example::axpby"]
    assert example["abi"] == "1.1"


# --- plugins built here, in a fresh interpreter -------------------------------

REPORT = """
import inspect, json, torch, torchferry
from torchferry import ops, plugins

def outcome(fn):
    try:
        fn()
        return "ok"
    except Exception as e:
        return f"{type(e).__name__}: {e}"

x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
out = torch.full((3, 4), 7.0)
report = {
    "loaded": [p["name"] for p in plugins.loaded()],
    "skipped": {s["path"].rsplit("/torchferry_", 1)[-1][:-3]: s["reason"] for s in plugins.skipped()},
    "twice": ops.decl.twice(x).tolist(),
    "twice_scale": ops.decl.twice(x, scale=3.0).tolist(),
    "signature": str(inspect.signature(ops.decl.twice)),
    "serves": plugins.kernel_for("decl::twice", "cpu", "float32"),
    "schemas": {s["name"]: s["declared_by"] for s in ops.schemas() if s["declared_by"]},
    "errors": {name: outcome(lambda name=name: getattr(ops.decl, name)(x))
               for name in ("infer_fails", "infer_silent", "negative", "huge", "rank", "bad_dtype")},
    "wrong_shape_out": outcome(lambda: ops.decl.wrong_shape(x, out=out)),
    "out_untouched": bool((out == 7.0).all()),
    "axpby_after": ops.example.axpby(x, x, a=1.0, b=1.0).tolist(),
    "twice_after": ops.decl.twice(x).tolist(),
}
print("REPORT" + json.dumps(report))
"""


def test_each_broken_declaration_is_skipped_with_its_own_reason(plugin_dir):
    r = run(plugin_dir, REPORT)
    assert "decl_good" in r["loaded"] and "decl_same" in r["loaded"] and "example_c" in r["loaded"]
    for stem, reason in BROKEN.items():
        assert stem not in r["loaded"]
        got = r["skipped"][stem]
        assert got.split(": ")[0].endswith(f"torchferry_{stem}.so"), got  # names the file
        assert reason in got, (stem, got)
        for other, other_reason in BROKEN.items():
            if other != stem:
                assert other_reason not in got, (stem, other)
    assert len(BROKEN) >= 10


def test_a_declared_op_runs_with_checks_precedence_and_listing(plugin_dir):
    r = run(plugin_dir, REPORT)
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert r["twice"] == (2 * x).tolist()
    assert r["twice_scale"] == (3 * x).tolist()
    assert r["signature"] == "(x, *, scale=2.0, out=None, stream=None)"
    # Both declare the same schema; the native one wins, the fallback waits.
    assert r["serves"] == "decl_good"
    assert r["schemas"]["decl::twice"] == "decl_good"
    assert r["schemas"]["example::axpby"] == "example_c"


def test_a_misbehaving_infer_is_an_exception(plugin_dir):
    r = run(plugin_dir, REPORT)
    e = r["errors"]
    assert e["infer_fails"] == "ValueError: decl_good: decl::infer_fails(): x must be square"
    assert e["infer_silent"].endswith("decl_good: decl::infer_silent(): infer failed with status 2 and no message")
    assert e["negative"] == (
        "RuntimeError: decl_good: decl::negative(): infer gave shape [-3, 4]; expected sizes >= 0 whose tensor "
        "fits in 2**48 bytes"
    )
    assert e["huge"].startswith("RuntimeError: decl_good: decl::huge(): infer gave shape [1099511627776, ")
    assert e["rank"] == "RuntimeError: decl_good: decl::rank(): infer gave ndim 65; expected 0 to 64"
    assert e["bad_dtype"].startswith("RuntimeError: decl_good: decl::bad_dtype(): infer gave an unknown dtype (code 9")
    assert r["wrong_shape_out"] == "ValueError: decl::wrong_shape(): expected out of shape [5], got [3, 4]"
    assert r["out_untouched"]
    # Everything still works afterwards.
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert r["axpby_after"] == (2 * x).tolist()
    assert r["twice_after"] == (2 * x).tolist()


def test_a_second_plugin_with_the_same_schema_serves_when_the_first_is_gone(plugin_dir):
    r = run(plugin_dir, REPORT, TORCHFERRY_PLUGINS="-decl_good,-decl_other")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert r["serves"] == "decl_same"
    assert r["twice"] == (2 * x + 1).tolist()
    assert r["schemas"]["decl::twice"] == "decl_same"


def test_info_lists_declared_ops(plugin_dir):
    r = subprocess.run(
        [os.sys.executable, "-m", "torchferry", "info"],
        env={**os.environ, "TORCHFERRY_PLUGIN_PATH": plugin_dir},
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "torchferry.ops.decl.twice: decl::twice(Tensor x, *, float scale=2.0) -> Tensor" in r.stdout
    assert "declares: decl::twice, decl::infer_fails" in r.stdout
    assert "decl::twice [cpu]: float32" in r.stdout
    assert "dbad_null_infer" in r.stdout
