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
    9: ("dbad_plugin_v1_0_size", "is 72 but the plugin says ABI 1.2, whose tf_plugin is at least 88 bytes"),
    10: ("dbad_null_ops", "has num_ops = 2 but ops is NULL"),
    11: ("dbad_undeclared_kernel", "op 'dbad::g' is not declared by this plugin"),
    12: ("dbad_first_not_tensor", "the first argument must be a Tensor"),
    13: ("dbad_taken_namespace", "the namespace 'abs' is taken by torchferry.ops.abs"),
    14: ("dbad_tensor_list", "argument 'ys' is a Tensor[]; declared ops take tensors one by one"),
    15: ("decl_other", "declares op 'decl::twice' as 'decl::twice(Tensor x, *, float scale) -> Tensor', but "
         "plugin 'decl_good'"),
    16: ("dbad_out_with_two_returns", "returns 2 tensors and declares 'out'"),
    17: ("decl_same", None),
    18: ("dbad_out_not_out", "the output 'result' after '*' must be called 'out'"),
    19: ("dbad_too_many_writes", "writes 9 tensors (4 returned, 5 in place); expected at most 8"),
    20: ("dbad_optional_in_place", "'acc' is written (Tensor(x!)): expected a Tensor without a default"),
    21: ("dbad_ns_name", "the namespace '__name__' is a dunder name"),
    22: ("dbad_ns_spec", "the namespace '__spec__' is a dunder name"),
    23: ("dbad_ns_builtins", "the namespace '__builtins__' is a dunder name"),
    24: ("dbad_ns_all", "the namespace '__all__' is a dunder name"),
    25: ("dbad_op_class", "the op name '__class__' is a dunder name"),
    26: ("dbad_op_keyword", "the op name 'lambda' is a Python keyword"),
    27: ("dbad_ns_keyword", "the namespace 'lambda' is a Python keyword"),
    28: ("dbad_arg_keyword", "the argument name 'lambda' is a Python keyword"),
    29: ("dbad_doc_latin1", "doc is not UTF-8 (byte 3 is 0xe9); expected UTF-8 text"),
    30: ("decl_long_doc", None),
    31: ("decl_shadow", None),
    32: ("decl_many", None),
    33: ("dbad_too_many_args", "more than 16 arguments"),
    34: ("dbad_too_many_ops", "has num_ops = 257; expected at most 256 (TF_MAX_DECLARED_OPS)"),
}  # fmt: skip
# The variants whose names Python cannot reach (or that every object has),
# and whose doc Python cannot decode.
NAME_FLAWS = [VARIANTS[flaw][0] for flaw in range(21, 30)]
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
    with pytest.raises(ValueError, match="out overlaps x in memory"):
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
    assert example["abi"] == torchferry._C.ABI_VERSION


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
        [os.sys.executable, "-m", "torchferry", "info", "--verbose"],  # kernels too
        env={**os.environ, "TORCHFERRY_PLUGIN_PATH": plugin_dir},
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "torchferry.ops.decl.twice: decl::twice(Tensor x, *, float scale=2.0) -> Tensor" in r.stdout
    assert "declares: decl::twice, decl::infer_fails" in r.stdout
    assert "decl::twice [cpu]: float32" in r.stdout
    assert "dbad_null_infer" in r.stdout


SEVERAL = """
import inspect, json, torch, torchferry
from torchferry import ops

def outcome(fn):
    try:
        r = fn()
        return "ok" if r is None else type(r).__name__
    except Exception as e:
        return f"{type(e).__name__}: {e}"

x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
r = {}
scaled, total = ops.decl.scaled_and_sum(x, scale=3.0)
r["scaled"], r["sum"], r["sum_shape"] = scaled.tolist(), total.item(), list(total.shape)
o0, o1 = torch.empty(3, 4), torch.empty(())
got = ops.decl.scaled_and_sum(x, out=(o0, o1))
r["out_tuple_is_out"] = type(got) is tuple and got[0] is o0 and got[1] is o1
r["out_values"] = [o0.tolist(), o1.item()]
got = ops.decl.scaled_and_sum(x, out=[o0, o1])
r["out_list_is_out"] = got[0] is o0 and got[1] is o1
r["out_one"] = outcome(lambda: ops.decl.scaled_and_sum(x, out=o0))
r["out_three"] = outcome(lambda: ops.decl.scaled_and_sum(x, out=(o0, o1, o1)))
keep = torch.full((3, 4), 7.0)
r["out_bad_shape"] = outcome(lambda: ops.decl.scaled_and_sum(x, out=(keep, torch.empty(2))))
r["kept"] = bool((keep == 7.0).all())
buf = torch.empty(3, 4)
r["outs_overlap"] = outcome(lambda: ops.decl.scaled_and_sum(x, out=(buf, buf[0, 0])))
r["out_overlaps_input"] = outcome(lambda: ops.decl.scaled_and_sum(x, out=(x, o1)))
r["signature"] = str(inspect.signature(ops.decl.scaled_and_sum))
r["infer_two"] = torchferry._C._infer("decl::scaled_and_sum", "cpu", (((3, 4), "float32"), 2.0), None)

acc = torch.ones(3, 4)
v = acc._version
r["accumulate"] = outcome(lambda: ops.decl.accumulate(x, acc, scale=2.0))
r["acc"] = acc.tolist()
r["acc_version_bumped"] = acc._version > v
r["accumulate_alias"] = outcome(lambda: ops.decl.accumulate(x, x))
r["accumulate_overlap"] = outcome(lambda: ops.decl.accumulate(x[:, :2], x[:, 1:3]))
r["accumulate_expanded"] = outcome(lambda: ops.decl.accumulate(x[0], torch.zeros(1).expand(4)))
r["accumulate_shape"] = outcome(lambda: ops.decl.accumulate(x, torch.zeros(4, 3)))
r["accumulate_out"] = outcome(lambda: ops.decl.accumulate(x, acc, out=torch.empty(3, 4)))
g = torch.zeros(3, 4, requires_grad=True)
r["accumulate_grad"] = outcome(lambda: ops.decl.accumulate(x, g))
with torch.no_grad():
    r["accumulate_no_grad"] = outcome(lambda: ops.decl.accumulate(x, g))
r["g"] = g.detach().tolist()
with torch.inference_mode():
    inference_acc, inference_out = torch.ones(3, 4), torch.empty(())
r["accumulate_inference"] = outcome(lambda: ops.decl.accumulate(x, inference_acc))
r["out_inference"] = outcome(lambda: ops.decl.scaled_and_sum(x, out=(o0, inference_out)))
r["infer_in_place"] = torchferry._C._infer(
    "decl::accumulate", "cpu", (((3, 4), "float32"), ((3, 4), "float32"), 1.0), None)

acc2 = torch.ones(3, 4)
twice = ops.decl.accumulate_twice(x, acc2)
r["twice"], r["acc2"] = twice.tolist(), acc2.tolist()
r["twice_out_is_acc"] = outcome(lambda: ops.decl.accumulate_twice(x, acc2, out=acc2))

def step(x, acc, o0, o1):
    s, t = ops.decl.scaled_and_sum(x)
    ops.decl.accumulate(s, acc, scale=0.5)
    ops.decl.scaled_and_sum(acc, scale=1.0, out=(o0, o1))
    return s, t, ops.decl.accumulate_twice(x, acc)

def run_step(fn):
    acc, o0, o1 = torch.ones(3, 4), torch.empty(3, 4), torch.empty(())
    s, t, u = fn(x, acc, o0, o1)
    return [v.tolist() for v in (s, t, u, acc, o0, o1)]

r["step_eager"] = run_step(step)
r["step_compiled"] = run_step(torch.compile(step, fullgraph=True, backend="aot_eager"))
r["torch_schemas"] = [str(getattr(torch.ops.torchferry, n).default._schema)
                      for n in ("decl__scaled_and_sum", "decl__accumulate")]
r["torch_out_schema"] = str(torch.ops.torchferry.decl__scaled_and_sum.out._schema)
print("REPORT" + json.dumps(r))
"""


def test_a_declared_op_returns_several_tensors_and_writes_in_place(plugin_dir):
    r = run(plugin_dir, SEVERAL)
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert r["scaled"] == (3 * x).tolist() and r["sum"] == 66.0 and r["sum_shape"] == []
    assert r["out_tuple_is_out"] and r["out_list_is_out"]
    assert r["out_values"] == [(2 * x).tolist(), 66.0]
    assert r["out_one"] == "TypeError: decl::scaled_and_sum(): expected out to be a tuple of 2 tensors, got Tensor"
    assert r["out_three"] == "TypeError: decl::scaled_and_sum(): expected out to be a tuple of 2 tensors, got a tuple of 3"
    assert r["out_bad_shape"] == "ValueError: decl::scaled_and_sum(): expected out[1] of shape [], got [2]"
    assert r["kept"]
    assert "out[0]" in r["outs_overlap"] and "out[1]" in r["outs_overlap"], r["outs_overlap"]
    assert r["out_overlaps_input"].startswith("ValueError: decl::scaled_and_sum(): "), r["out_overlaps_input"]
    assert "x" in r["out_overlaps_input"] and "out[0]" in r["out_overlaps_input"]
    assert r["signature"] == "(x, *, scale=2.0, out=None, stream=None)"
    assert r["infer_two"] == [[[3, 4], "float32"], [[], "float32"]]

    assert r["accumulate"] == "ok"
    assert r["acc"] == (1 + 2 * x).tolist() and r["acc_version_bumped"]
    for key in ("accumulate_alias", "accumulate_overlap"):
        assert r[key].startswith("ValueError: decl::accumulate(): "), r[key]
        assert "acc" in r[key], r[key]
    assert r["accumulate_expanded"].startswith("ValueError: decl::accumulate(): "), r["accumulate_expanded"]
    assert "acc" in r["accumulate_expanded"]
    assert r["accumulate_shape"] == "ValueError: decl_good: decl::accumulate(): x and acc differ in shape or dtype"
    assert r["accumulate_out"] == "TypeError: decl::accumulate(): returns nothing, so it takes no out="
    assert r["accumulate_grad"] == (
        "RuntimeError: decl::accumulate(): torchferry ops don't support automatic differentiation, but one of "
        "the arguments requires grad; call it under torch.no_grad() or pass detached tensors"
    )
    assert r["accumulate_no_grad"] == "ok" and r["g"] == x.tolist()
    assert r["infer_in_place"] is None
    # A tensor torch will not write outside inference mode is named, in
    # place or as one of several outs.
    assert "Inplace update to inference tensor" in r["accumulate_inference"], r["accumulate_inference"]
    assert "acc is an inference tensor" in r["accumulate_inference"], r["accumulate_inference"]
    assert "out[1] is an inference tensor" in r["out_inference"], r["out_inference"]

    assert r["acc2"] == (1 + x).tolist() and r["twice"] == (2 * (1 + x)).tolist()
    assert r["twice_out_is_acc"].startswith("ValueError: decl::accumulate_twice(): "), r["twice_out_is_acc"]

    # torch.compile sees the same op: several returns, out=(...) and the
    # in-place write, through functionalization, with eager's results.
    assert r["step_compiled"] == r["step_eager"]
    assert r["step_eager"][3] == (1 + x + x).tolist()  # acc: += 0.5 * 2x, then += x
    assert r["torch_schemas"] == [
        "torchferry::decl__scaled_and_sum(Tensor x, *, float scale=2.) -> (Tensor, Tensor)",
        "torchferry::decl__accumulate(Tensor x, Tensor(b!) acc, *, float scale=1.) -> ()",
    ]
    assert r["torch_out_schema"] == (
        "torchferry::decl__scaled_and_sum.out(Tensor x, *, float scale=2., Tensor(a!) out0, Tensor(b!) out1) -> ()"
    )


SHADOW = """
import json, torch
from torchferry import ops

def mix(x):
    return (ops.shadow.mix(x, 2.0, _op=3.0, _tf_call=4.0, _tf_op=5.0), ops.shadow.mix(x, 0.5),
            ops.shadow.mix(x, _call=3.0, _tf_op=1.0), ops.shadow.scale(x), ops.shadow.scale(x, _op=-1.0))

x = torch.arange(6, dtype=torch.float32)
r = {"eager": [t.tolist() for t in mix(x)]}
compiled = torch.compile(mix, fullgraph=True, backend="aot_eager")
r["compiled"] = [t.tolist() for t in compiled(x)]
print("REPORT" + json.dumps(r))
"""


def test_arguments_named_like_host_internals_compile(plugin_dir):
    # shadow::mix's arguments are called _call, _op, _tf_call and _tf_op, and
    # shadow::scale's _op: names the compiled substitute must not confuse
    # with its own.
    r = run(plugin_dir, SHADOW)
    x = torch.arange(6, dtype=torch.float32)
    expected = [(2 * x + 3 + 40 + 500).tolist(), (0.5 * x + 1).tolist(), (3 * x + 1 + 100).tolist(),
                (2 * x).tolist(), (-x).tolist()]
    assert r["eager"] == expected
    assert r["compiled"] == expected
# --- as many tensors as a schema allows ----------------------------------------

# decl_many's ops: each output o (returns, then the arguments written in
# place) is (o + 1) times the sum of every tensor argument.
MANY = """
import json, torch, torchferry
from torchferry import ops, plugins

x = [torch.full((2, 3), float(i + 1)) for i in range({n})]
kwargs = {{"out": torch.empty(2, 3)}} if "{op}" == "f15_out" else {{}}
result = getattr(ops.many, "{op}")(*x, **kwargs)
results = list(result) if isinstance(result, tuple) else [result]
if "{op}" == "f12w4x4":
    results += x[12:]  # written in place, after the returns
skipped = {{s["path"].rsplit("/torchferry_", 1)[-1][:-3]: s["reason"] for s in plugins.skipped()}}
# torch.compile's path: the same preparation on specs, without tensors.
spec = ((2, 3), "float32")
infer = torchferry._C._infer("many::{op}", "cpu", (spec,) * {n},
                             spec if "{op}" == "f15_out" else None)
print("REPORT" + json.dumps({{"results": [r.tolist() for r in results], "infer": infer,
                             "too_many": skipped["dbad_too_many_args"]}}))
"""


@pytest.mark.parametrize(
    "op, n, outputs",
    [
        ("f13", 13, 1),  # one past the tensors a call holds without Reserve
        ("f15_out", 15, 1),  # 16 arguments: 15 tensors and out=
        ("f16", 16, 1),  # the most tensor arguments a schema may have
        ("f16x4", 16, 4),  # and the most returns: 20 tensors in one call
        ("f12w4x4", 16, 8),  # 4 written in place and 4 returns
    ],
)
def test_a_declared_op_takes_every_tensor_count_a_schema_allows(plugin_dir, op, n, outputs):
    # Each count in its own process: writing past the call's room for
    # tensors was a segfault or a heap corruption.
    r = run(plugin_dir, MANY.format(op=op, n=n))
    total = float(sum(range(1, n + 1)))
    assert len(r["results"]) == outputs
    for o, got in enumerate(r["results"]):
        assert got == torch.full((2, 3), (o + 1) * total).tolist(), (op, o)
    returns = 4 if outputs > 1 else 1
    assert r["infer"] == ([[[2, 3], "float32"]] * returns if returns > 1 else [[2, 3], "float32"])
    # Past the counts above, a schema (20 tensors here) is refused at load,
    # naming the limit.
    assert "more than 16 arguments" in r["too_many"], r["too_many"]
# --- names: what one plugin names never breaks the import or torch.compile ----

NAMES_REPORT = """
import json, torch, torchferry
from torchferry import ops, plugins

x = torch.tensor([-1.0, 2.0, -3.0])
report = {
    "loaded": [p["name"] for p in plugins.loaded()],
    "skipped": {s["path"].rsplit("/torchferry_", 1)[-1][:-3]: s["reason"] for s in plugins.skipped()},
    "all": ops.__all__,
    "schemas": [s["name"] for s in ops.schemas()],
    "abs": ops.abs(x).tolist(),
    "twice": ops.decl.twice(x).tolist(),
    "long_doc": ops.dlong.f.__doc__,
    "long_doc_listed": next(s["doc"] for s in ops.schemas() if s["name"] == "dlong::f"),
}
print("REPORT" + json.dumps(report))
"""


def test_names_python_cannot_reach_skip_their_plugin_and_only_it(plugin_dir):
    r = run(plugin_dir, NAMES_REPORT)
    assert "decl_good" in r["loaded"] and "example_c" in r["loaded"] and "decl_long_doc" in r["loaded"]
    for stem in NAME_FLAWS:
        assert stem not in r["loaded"]
        assert BROKEN[stem] in r["skipped"][stem], (stem, r["skipped"][stem])
    for name in ("__name__::f", "__spec__::f", "__builtins__::f", "__all__::f", "dbad::__class__",
                 "dbad::lambda", "lambda::f"):
        assert name not in r["schemas"]
    assert "example" in r["all"] and "decl" in r["all"] and "__all__" not in r["all"]
    assert r["abs"] == [1.0, 2.0, 3.0] and r["twice"] == [-2.0, 4.0, -6.0]
    # Cut at the limit (1023 bytes) before the character it would split.
    assert r["long_doc"] == "a" * 1022
    assert r["long_doc_listed"] == "a" * 1022


COMPILE_REPORT = """
import json, torch, torchferry
from torchferry import ops, plugins

x = torch.tensor([-1.0, 2.0, -3.0])
compiled = torch.compile(lambda t: ops.mul(ops.abs(t), 2.0), backend="eager", fullgraph=True)
# Argument names that torchferry.library's own code might have used.
shadow = torch.compile(lambda t: ops.decl.shadow(t, _call=3.0, _op=1.0), backend="eager", fullgraph=True)
print("REPORT" + json.dumps({
    "loaded": [p["name"] for p in plugins.loaded()],
    "compiled": compiled(x).tolist(),
    "shadow": shadow(x).tolist(),
}))
"""


def test_keyword_names_do_not_break_torch_compile_of_other_ops(plugin_dir):
    # Only plugins that an import survived before names were checked: their
    # keyword names made Dynamo's import fail, and every torch.compile after.
    selected = "cpu,example_c,decl_good,dbad_op_keyword,dbad_ns_keyword,dbad_arg_keyword"
    r = run(plugin_dir, COMPILE_REPORT, TORCHFERRY_PLUGINS=selected)
    assert not {"dbad_op_keyword", "dbad_ns_keyword", "dbad_arg_keyword"} & set(r["loaded"])
    assert r["compiled"] == [2.0, 4.0, 6.0]
    assert r["shadow"] == [-3.0, 6.0, -9.0]


# --- a re-imported torchferry keeps the declared ops ---------------------------

REIMPORT_REPORT = """
import importlib, json, sys, torch
import torchferry

x, y = torch.randn(3, 4), torch.randn(3, 4)
want = (2 * x + y).tolist()
seen = {}

def check(label, tf):
    seen[label] = {
        "axpby": tf.ops.example.axpby(x, y, a=2.0, b=1.0).tolist() == want,
        "twice": tf.ops.decl.twice(x).tolist() == (2 * x).tolist(),
        "all": "example" in tf.ops.__all__ and "decl" in tf.ops.__all__,
        "c": getattr(tf._C, "example::axpby") is tf.ops.example.axpby,
        "custom_op": torch.ops.torchferry.example__axpby(x, y, a=2.0, b=1.0).tolist() == want,
    }

check("first", torchferry)
check("reloaded", importlib.reload(torchferry))
for name in [n for n in sys.modules if n == "torchferry" or n.startswith("torchferry.")]:
    del sys.modules[name]
import torchferry as again
check("reimported", again)
compiled = torch.compile(lambda a, b: again.ops.example.axpby(a, b, a=2.0, b=1.0), backend="eager",
                         fullgraph=True)
seen["compiled"] = compiled(x, y).tolist() == want
print("REPORT" + json.dumps(seen))
"""


def test_reload_and_reimport_keep_the_declared_ops(plugin_dir):
    r = run(plugin_dir, REIMPORT_REPORT, TORCHFERRY_PLUGINS="cpu,example_c,decl_good")
    everything = {"axpby": True, "twice": True, "all": True, "c": True, "custom_op": True}
    assert r == {"first": everything, "reloaded": everything, "reimported": everything, "compiled": True}
