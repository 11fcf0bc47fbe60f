"""torch.compile(fullgraph=True) of code that calls torchferry ops, with the
default inductor backend on CPU: no graph break, torchferry's kernels run
inside the compiled graph (the bridge's counters say so), results equal
eager, with and without out=, with dynamic shapes, and for an op a plugin
declared. Each behaviour compiles one function once (module-scoped): a
compiled graph costs tens of seconds of C++ on a small machine."""

import types

import pytest
import torch

import torchferry

if torchferry.COMPILE_UNAVAILABLE is not None and torchferry._release(torch.__version__) < torchferry.COMPILE_FLOOR:
    # test_torch_facts checks that such a torch says why.
    pytest.skip(torchferry.COMPILE_UNAVAILABLE, allow_module_level=True)

from torchferry import bridge, library, ops  # noqa: E402
from conftest import run_python  # noqa: E402

DIM, HIDDEN = 64, 96


def decode_step(x, w_norm, w_up, w_down, out=None):
    """One Llama-style MLP block of a decode step, from the ops there are:
    rms_norm, a gated up-projection, the down-projection, the residual add,
    and the next-token softmax."""
    h = ops.rms_norm(x, w_norm, 1e-6)
    gate_up = ops.matmul(h, w_up)
    act = ops.silu_and_mul(gate_up)
    y = ops.add(x, ops.matmul(act, w_down))
    return ops.softmax(ops.mul(y, 0.5), -1, out=out)


def decode_inputs(tokens=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(tokens, DIM, generator=g),
        torch.rand(DIM, generator=g) + 0.5,
        torch.randn(DIM, 2 * HIDDEN, generator=g) / DIM**0.5,
        torch.randn(HIDDEN, DIM, generator=g) / HIDDEN**0.5,
    )


def bridged():
    counts = bridge.path_counts()
    return sum(v for k, v in counts.items() if k in ("offset", "shim", "dlpack"))


@pytest.fixture(scope="module")
def compiled_decode():
    torch._dynamo.reset()
    return torch.compile(decode_step, fullgraph=True)


@pytest.fixture(scope="module")
def compiled_dynamic():
    return torch.compile(lambda x, w: ops.silu(ops.rms_norm(x, w)), fullgraph=True, dynamic=True)


def test_eager_door_stays_the_native_function():
    # No Python frame between the caller and C++: the function is the C one.
    assert type(ops.rms_norm) is types.BuiltinFunctionType
    assert ops.rms_norm is torchferry._C.rms_norm
    assert ops.example.axpby is getattr(torchferry._C, "example::axpby")


def test_every_op_is_a_torch_custom_op():
    for s in ops.schemas():
        packet = getattr(torch.ops.torchferry, library.torch_name(s["name"]))
        assert "default" in packet.overloads(), s["name"]
    assert str(torch.ops.torchferry.add.out._schema) == (
        "torchferry::add.out(Tensor input, Tensor other, Scalar alpha=1, *, Tensor(a!) out) -> ()"
    )
    assert str(torch.ops.torchferry.cast.default._schema) == (
        "torchferry::cast(Tensor input, *, Tensor(a!) out) -> ()"
    )
    assert str(torch.ops.torchferry.example__axpby.default._schema) == (
        "torchferry::example__axpby(Tensor x, Tensor y, *, float a, float b) -> Tensor"
    )


def test_decode_step_compiles_fullgraph_and_equals_eager(compiled_decode):
    args = decode_inputs()
    want = decode_step(*args)
    bridge.reset_path_counts()
    got = compiled_decode(*args)
    # Every op of the step ran a torchferry kernel: each bridged its tensors.
    assert bridged() >= 7 * 2
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_decode_step_with_out_compiles_and_writes_out(compiled_decode):
    args = decode_inputs(seed=1)
    want = decode_step(*args)
    out = torch.full_like(want, float("nan"))
    got = compiled_decode(*args, out=out)
    assert got is out or got.data_ptr() == out.data_ptr()
    torch.testing.assert_close(out, want, rtol=0, atol=0)


def test_explain_reports_no_graph_break():
    args = decode_inputs()
    explanation = torch._dynamo.explain(decode_step)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_dynamic_shapes(compiled_dynamic):
    g = torch.Generator().manual_seed(2)
    w = torch.rand(DIM, generator=g) + 0.5
    for tokens in (3, 5, 9):
        x = torch.randn(tokens, DIM, generator=g)
        torch.testing.assert_close(compiled_dynamic(x, w), ops.silu(ops.rms_norm(x, w)), rtol=0, atol=0)


def test_declared_op_compiles_like_the_others():
    def f(x, y, out):
        z = ops.example.axpby(x, y, a=2.0, b=-0.5)
        return ops.example.axpby(z, y, a=1.0, b=1.0, out=out)

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    want = 2 * x - 0.5 * y + y
    out = torch.empty(4, 8)
    got = torch.compile(f, fullgraph=True)(x, y, out)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(out, want)


def test_declared_op_fake_refuses_what_eager_refuses():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x, y = torch.empty(4, 8), torch.empty(5, 3)
        with pytest.raises(ValueError, match=r"example_c: example::axpby\(\): x and y must have one shape"):
            torch.ops.torchferry.example__axpby(x, y, a=1.0, b=1.0)
        assert torch.ops.torchferry.example__axpby(x, x, a=1.0, b=1.0).shape == (4, 8)


def test_requires_grad_refused_in_both_doors():
    x = torch.randn(4, DIM, requires_grad=True)
    w = torch.rand(DIM)
    message = r"rms_norm\(\): torchferry ops don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=message):
        ops.rms_norm(x, w)
    with pytest.raises(RuntimeError, match=message):
        torch.ops.torchferry.rms_norm(x, w)
    with pytest.raises(Exception, match=message):
        torch.compile(lambda a, b: ops.rms_norm(a, b), fullgraph=True)(x, w)
    with torch.no_grad():
        torch.testing.assert_close(torch.ops.torchferry.rms_norm(x, w), ops.rms_norm(x, w))


def test_stream_is_refused_inside_compile():
    with pytest.raises(Exception) as refused:
        torch.compile(lambda a: ops.abs(a, stream=1), fullgraph=True, backend="eager")(torch.randn(3))
    if torchferry._release(torch.__version__) < (2, 9) and "Observed exception" in str(refused.value):
        # Dynamo before 2.9 reports an exception raised in traced code
        # without its message: refused all the same.
        return
    assert "stream= is not supported inside torch.compile" in str(refused.value)


@pytest.mark.subprocess
def test_a_torch_without_an_api_refuses_the_integration_by_name():
    r = run_python(
        """
        import warnings
        import torch._dynamo
        del torch._dynamo.substitute_in_graph  # as on a torch that lacks it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torchferry
        print("warned:", [str(w.message) for w in caught])
        x = torchferry.ops.abs(torch.tensor([-1.0]))  # the eager door works
        print("eager:", x.tolist())
        try:
            import torchferry.library
        except ImportError as e:
            print("refused:", e)
        print("registered:", hasattr(torch.ops.torchferry, "abs"))
        """
    )
    needs = "torchferry.library needs torch._dynamo.substitute_in_graph, which torch"
    assert f"warned: ['{needs}" in r.stdout, r.stdout + r.stderr
    assert "eager: [1.0]" in r.stdout
    assert f"refused: {needs}" in r.stdout
    assert "registered: False" in r.stdout  # nothing half-registered


def _llama_example():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "llama_decode.py"
    spec = importlib.util.spec_from_file_location("llama_decode", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["llama_decode"] = module  # Dynamo looks the module up by name
    spec.loader.exec_module(module)
    return module


def test_llama_decode_step_compiles_fullgraph_and_equals_eager():
    # The example's decoder writes its KV cache through out= views that are
    # not contiguous (a transposed slot of the cache), which Dynamo refuses
    # for a custom op's out=; the compiled door writes them all the same.
    llama = _llama_example()
    s = llama.setup(torch.float32, use_transformers=False)
    dec = llama.Decoder(s.config, s.weights, ops, max_len=16)
    ids = torch.randint(0, s.config.vocab_size, (1, 9), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        dec.forward(ids[:, :8], 0)
        want = dec.forward(ids[:, 8:9], 8)
        k_cache = [k.clone() for k in dec.k_cache]
        for k in dec.k_cache:
            k[:, :, 8].zero_()
        step = lambda i: dec.forward(i, 8)  # noqa: E731
        got = torch.compile(step, fullgraph=True)(ids[:, 8:9])
        torch.testing.assert_close(got, want)
        for k, k_want in zip(dec.k_cache, k_cache):
            torch.testing.assert_close(k, k_want)  # the cache slot was written
        assert torch._dynamo.explain(step)(ids[:, 8:9]).graph_break_count == 0
