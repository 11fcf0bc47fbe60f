"""Everything derived from the op table (loader/op_table.h) agrees with it:
the functions and their signatures, schemas(), the stubs and ABI.md's table."""

import inspect
import os

import pytest
import torch

import torchferry
from torchferry import op_docs, ops

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCHEMAS = [s for s in ops.schemas() if s["declared_by"] is None]
NAMES = [s["name"] for s in SCHEMAS]


def test_every_op_is_a_function_of_ops():
    namespaces = {s["name"].split("::")[0] for s in ops.schemas() if s["declared_by"]}
    assert sorted(NAMES + ["schemas"] + list(namespaces)) == sorted(ops.__all__)
    assert len(set(NAMES)) == len(NAMES)
    for name in NAMES:
        fn = getattr(ops, name)
        assert callable(fn)
        assert fn.__module__ == "torchferry.ops"
        assert fn.__name__ == name


@pytest.mark.parametrize("schema", SCHEMAS, ids=NAMES)
def test_signature_follows_the_schema(schema):
    sig = inspect.signature(getattr(ops, schema["name"]))
    assert f"{schema['name']}{sig}" == schema["signature"]
    params = list(sig.parameters.values())
    if schema["signature"].startswith(schema["name"] + "(*"):
        assert [p.kind for p in params] == [inspect.Parameter.VAR_POSITIONAL]
        return
    by_name = {p.name: p for p in params}
    for a in schema["args"]:
        p = by_name[a["name"]]
        expected_kind = (
            inspect.Parameter.KEYWORD_ONLY if a["kwarg_only"] else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        assert p.kind == expected_kind, a
        if a["default"] is None:
            assert p.default is inspect.Parameter.empty, a
        else:
            assert repr(p.default) == a["default"], a
    assert by_name["stream"].default is None
    assert by_name["stream"].kind == inspect.Parameter.KEYWORD_ONLY
    assert by_name["out"].kind == inspect.Parameter.KEYWORD_ONLY


def test_defaults_in_the_signature_are_the_defaults_the_op_uses():
    x = torch.randn(3, 5)
    w = torch.rand(5) + 0.5
    eps = inspect.signature(ops.rms_norm).parameters["eps"].default
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    torch.testing.assert_close(ops.rms_norm(x, w), ref)
    dim = inspect.signature(ops.softmax).parameters["dim"].default
    torch.testing.assert_close(ops.softmax(x), torch.softmax(x, dim))
    alpha = inspect.signature(ops.add).parameters["alpha"].default
    torch.testing.assert_close(ops.add(x, x), x + alpha * x)
    dim = inspect.signature(ops.stack).parameters["dim"].default
    torch.testing.assert_close(ops.stack([x, x]), torch.stack([x, x], dim))


def test_schemas_describe_each_op():
    for s in SCHEMAS:
        assert s["schema"].startswith(s["name"] + "(")
        assert s["dtypes"] and set(s["dtypes"]) <= set(op_docs._DTYPE_GROUPS[0][1])
        assert s["aliasing"] in ("exact", "none")
        assert s["doc"] and s["contract"]
        assert getattr(ops, s["name"]).__doc__ == s["doc"]
    assert [s for s in ops.schemas() if s["declared_by"] is None] == SCHEMAS
    assert [s["name"] for s in ops.schemas()][: len(NAMES)] == NAMES  # built-in first
    assert ops.schemas() is not ops.schemas()  # a fresh list: callers may mutate it


def test_a_required_out_is_required():
    cast = next(s for s in SCHEMAS if s["name"] == "cast")
    assert "out" in [a["name"] for a in cast["args"] if a["written"]]
    with pytest.raises(TypeError, match="missing required argument 'out'"):
        ops.cast(torch.ones(2))


def test_the_stubs_are_generated_from_the_table():
    with open(os.path.join(ROOT, "python", "torchferry", "ops.pyi"), encoding="utf-8") as f:
        committed = f.read()
    assert committed == op_docs.stub_text(), "python/torchferry/ops.pyi is stale: run ./dev generate"
    installed = os.path.join(os.path.dirname(torchferry.__file__), "ops.pyi")
    with open(installed, encoding="utf-8") as f:
        assert f.read() == committed


def test_the_stubs_are_valid_python_that_names_every_op():
    namespace = {}
    exec(compile(op_docs.stub_text(), "ops.pyi", "exec"), namespace)
    for name in NAMES:
        stub = inspect.signature(namespace[name])
        real = inspect.signature(getattr(ops, name))
        assert list(stub.parameters) == list(real.parameters), name


def test_abi_md_carries_the_generated_table():
    with open(os.path.join(ROOT, "abi", "ABI.md"), encoding="utf-8") as f:
        text = f.read()
    assert op_docs.abi_table() in text, "abi/ABI.md's op table is stale: run ./dev generate"
    for name in NAMES:
        assert f"| `{name}` |" in text


def test_accumulates_comes_from_the_op_table():
    # check's looser tolerance follows the table, not a list of its own.
    from torchferry import check_cases

    accumulating = {s["name"] for s in ops.schemas() if s["accumulates"]}
    assert {"softmax", "rms_norm", "add_rms_norm", "matmul", "linear"} <= accumulating
    assert not {"add", "mul", "abs", "cat"} & accumulating
    assert not any(s["accumulates"] for s in ops.schemas() if s["declared_by"])
    for name in ("softmax", "add"):
        assert check_cases.accumulates(name) == (name in accumulating)
