"""examples/llama_decode.py: a Llama decoder's prefill and decode steps on
torchferry ops give the model's logits, in float32 and bfloat16, against
transformers' LlamaForCausalLM where it is installed and the example's own
torch definition everywhere."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchferry import ops

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama_decode.py"


def load_example():
    spec = importlib.util.spec_from_file_location("llama_decode", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


llama = load_example()
DTYPES = [torch.float32, torch.bfloat16]


def transformers_or_skip():
    pytest.importorskip("transformers", reason="transformers is the reference model; ./dev installs it")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_decoder_on_torchferry_matches_the_own_definition(dtype):
    s = llama.setup(dtype, use_transformers=False)
    llama.check(s, ops, prompt_len=9, steps=3)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_decoder_on_torchferry_matches_transformers(dtype):
    transformers_or_skip()
    s = llama.setup(dtype)
    assert s.model is not None
    llama.check(s, ops, prompt_len=12, steps=4)


def test_the_comparison_decoder_on_torch_ops_is_the_same_model():
    # The benchmark times the decoder on TorchOps against the one on
    # torchferry ops: both must compute the model.
    s = llama.setup(torch.float32, use_transformers=False)
    llama.check(s, llama.TorchOps, prompt_len=9, steps=3)


def test_own_definition_is_transformers_model():
    transformers_or_skip()
    s = llama.setup(torch.float32)
    ids = torch.randint(0, s.config.vocab_size, (2, 10), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = s.model(ids).logits
    torch.testing.assert_close(llama.reference_logits(s.config, s.weights, ids), want, atol=1e-5, rtol=1e-5)


def test_a_wrong_decoder_fails_the_check():
    # check() must be able to fail: a decoder whose rotary ignores sin.
    class Broken(llama.TorchOps):
        @staticmethod
        def rotary_embedding(x, cos, sin, *, out=None):
            return llama.TorchOps.rotary_embedding(x, cos, torch.zeros_like(sin), out=out)

    s = llama.setup(torch.float32, use_transformers=False)
    with pytest.raises(AssertionError, match="prefill"):
        llama.check(s, Broken, prompt_len=6, steps=1)


def test_the_example_runs_as_a_script():
    r = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "prefill and 2 decode steps match" in r.stdout
