"""Declared ops of random schemas, with a fixed seed: any number of tensor
arguments up to the schema's 16, optional tensors given or None, ints,
floats and bools among them, keyword-only arguments, up to 4 returns and
arguments written in place (at most 8 written tensors), with and without
out=. One plugin (tests/plugins/declared/from_env.c) declares whatever the
test hands it and serves every op with one kernel: output o is (o + 1) times
the sum of the tensor inputs. Each op is called eagerly and through
torchferry._C._infer (torch.compile's path), in a fresh interpreter, and
must give exactly the expected tensors; a schema the host refuses must skip
the plugin with a reason, never crash."""

import json
import os
import random
import subprocess

import pytest

from conftest import run_python

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(ROOT, "tests", "plugins", "declared", "from_env.c")

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("from_env")
    subprocess.run(
        [os.environ.get("CC", "cc"), "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared",
         "-fPIC", "-O1", f"-I{ROOT}", SOURCE, "-o", str(out / "torchferry_from_env.so")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return str(out)


def random_op(rng, index):
    """(name, schema, spec): spec says how to call it and what it returns."""
    n_tensors = rng.randint(1, 16)
    n_returns = rng.randint(0, 4)
    n_written = rng.randint(0, min(4, n_tensors - 1, 8 - n_returns))
    if n_returns == 0 and n_written == 0:
        n_returns = 1
    use_out = n_returns == 1 and n_written == 0 and n_tensors < 16 and rng.random() < 0.3
    n_scalars = rng.randint(0, 16 - n_tensors - (1 if use_out else 0))
    args = [{"name": "x0", "type": "Tensor"}]
    for t in range(1, n_tensors - n_written):
        optional = rng.random() < 0.25
        args.append({"name": f"t{t}", "type": "Tensor?" if optional else "Tensor",
                     "default": "None" if optional and rng.random() < 0.5 else None})
    for s in range(n_scalars):
        kind = rng.choice(["float", "int", "bool"])
        default = None
        if rng.random() < 0.4:
            default = {"float": "0.5", "int": "3", "bool": "True"}[kind]
        args.append({"name": f"{kind[0]}{s}", "type": kind, "default": default})
    rest = args[1:]  # the first stays the key tensor
    rng.shuffle(rest)
    letters = iter("abcdefgh")
    # Written in place: positional (a keyword-only written tensor is out=).
    written = [{"name": f"w{w}", "type": f"Tensor({next(letters)}!)", "written": True} for w in range(n_written)]
    args = args[:1] + written + rest
    # Keyword-only from a random point after them on; defaults only there,
    # so that no positional argument without one follows one with one.
    split = rng.randint(1 + n_written, len(args))
    for i, a in enumerate(args):
        a["kwarg_only"] = i >= split
        if i < split and a.get("default") is not None:
            a["default"] = None  # a positional argument before others without
    parts, star = [], False
    for a in args:
        if a["kwarg_only"] and not star:
            parts.append("*")
            star = True
        text = f"{a['type']} {a['name']}"
        if a.get("default") is not None:
            text += f"={a['default']}"
        parts.append(text)
    if use_out:
        if not star:
            parts.append("*")
        parts.append(f"Tensor({next(letters)}!) out")
        returns = f"Tensor({'abcdefgh'[n_written]}!)"
    else:
        returns = "()" if n_returns == 0 else "Tensor" if n_returns == 1 else \
            "(" + ", ".join(["Tensor"] * n_returns) + ")"
    name = f"fz::op{index}"
    schema = f"{name}({', '.join(parts)}) -> {returns}"
    return name, schema, {"args": args, "returns": n_returns, "out": use_out}


CALLER = r"""
import json, os, random, torch, torchferry
from torchferry import ops, plugins

specs = json.loads(os.environ["TF_TEST_SPECS"])
rng = random.Random(SEED)
skipped = {s["path"].rsplit("/", 1)[-1]: s["reason"] for s in plugins.skipped()}
assert "torchferry_from_env.so" not in skipped, skipped
checked = 0
for name, spec in specs:
    fn = getattr(ops.fz, name.split("::")[1])
    positional, keywords, tensors, written, given = [], {}, [], [], {}
    for a in spec["args"]:
        if a["type"].startswith("Tensor"):
            if a["type"] == "Tensor?" and rng.random() < 0.4:
                if a.get("default") == "None" and rng.random() < 0.5:
                    continue  # left out: its default, None
                value = None
            else:
                value = torch.full((2, 3), float(rng.randint(-4, 4)))
                tensors.append(value.clone())
                if a.get("written"):
                    written.append(value)
        else:
            if a.get("default") is not None and rng.random() < 0.5:
                continue
            value = {"f": rng.uniform(-2, 2), "i": rng.randint(-5, 5), "b": rng.random() < 0.5}[a["name"][0]]
        given[a["name"]] = value
        (keywords.__setitem__(a["name"], value) if a["kwarg_only"] else positional.append(value))
    total = sum(tensors, torch.zeros(2, 3))
    out = torch.empty(2, 3) if spec["out"] else None
    result = fn(*positional, **keywords, **({"out": out} if out is not None else {}))
    results = [] if result is None else list(result) if isinstance(result, tuple) else [result]
    if out is not None:
        assert results[0] is out
    outputs = results + written
    assert len(outputs) == spec["returns"] + len(written), (name, len(outputs))
    for o, t in enumerate(outputs):
        assert torch.equal(t, (o + 1) * total), (name, o, t, total)
    # torch.compile's path: the same preparation on specs, every argument
    # in the schema's order, a left-out one as its default.
    defaults = {"None": None, "0.5": 0.5, "3": 3, "True": True}
    values = tuple(
        ((2, 3), "float32") if isinstance(v, torch.Tensor) else v
        for v in (given[a["name"]] if a["name"] in given else defaults[a["default"]] for a in spec["args"])
    )
    inferred = torchferry._C._infer(name, "cpu", values, ((2, 3), "float32") if out is not None else None)
    one = [[2, 3], "float32"]
    want = None if spec["returns"] == 0 else one if spec["returns"] == 1 else [one] * spec["returns"]
    assert json.loads(json.dumps(inferred)) == want, (name, inferred)
    checked += 1
print("REPORT" + json.dumps({"checked": checked}))
"""


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_declared_schemas(plugin_dir, seed):
    rng = random.Random(seed)
    ops = [random_op(rng, i) for i in range(24)]
    declared = ";".join(f"{name}|{schema}" for name, schema, _ in ops)
    r = run_python(
        f"SEED = {seed}\n" + CALLER,
        timeout=300,
        TORCHFERRY_PLUGIN_PATH=plugin_dir,
        TF_TEST_DECLARED=declared,
        TF_TEST_SPECS=json.dumps([[name, spec] for name, _, spec in ops]),
    )
    assert r.returncode == 0 and "REPORT" in r.stdout, (
        "\n".join(schema for _, schema, _ in ops) + f"\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    )
    assert json.loads(r.stdout.split("REPORT", 1)[1])["checked"] == len(ops)


def test_a_schema_past_the_limits_skips_the_plugin_with_its_reason(plugin_dir):
    """17 tensor arguments, 5 returns, 9 written tensors: each refused at
    load, naming the limit, and the process goes on."""
    too_many = ", ".join(f"Tensor a{i}" for i in range(17))
    five = ", ".join(["Tensor"] * 5)
    nine = ", ".join(f"Tensor({c}!) w{i}" for i, c in enumerate("abcdefghi"))
    for schema in (
        f"fz::f(Tensor x, {too_many}) -> Tensor",
        f"fz::f(Tensor x) -> ({five})",
        f"fz::f(Tensor x, {nine}) -> ()",
    ):
        r = run_python(
            """
            import json, torchferry
            from torchferry import plugins
            print("REPORT" + json.dumps([s["reason"] for s in plugins.skipped()
                                         if s["path"].endswith("torchferry_from_env.so")]))
            """,
            TORCHFERRY_PLUGIN_PATH=plugin_dir,
            TF_TEST_DECLARED=f"fz::f|{schema}",
        )
        assert r.returncode == 0, r.stderr[-3000:]
        reasons = json.loads(r.stdout.split("REPORT", 1)[1])
        assert len(reasons) == 1 and "fz::f" in reasons[0], (schema, reasons)
