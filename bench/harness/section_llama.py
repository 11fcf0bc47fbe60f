"""Section 7: a Llama decoder's one-token decode step: the example's decoder
(examples/llama_decode.py) on torchferry ops, the same code on torch ops,
and the model's own eager forward, interleaved in one run."""

import inspect

import torch

import torchferry

from . import llama_decode as llama
from .results import Case, Section, Target
from .timing import Variant, compare, python_timer

CACHE_LEN = 32  # the decode step attends a KV cache of this length
DTYPES = (torch.float32, torch.bfloat16)
# The example's own model, where the calls dominate, and one shaped like a
# 1B Llama (TinyLlama's widths), where the weights do: two of its layers
# stream 88 M parameters a step. The vocabulary stays the example's, so the
# layers, not the LM head, are what is measured.
SMALL = llama.Config()
ONE_B = llama.Config(hidden_size=2048, intermediate_size=5632, num_layers=2, num_heads=32, num_kv_heads=4)
# (config, decode step at most this share of the same code on torch ops)
MODELS = ((SMALL, 0.33), (ONE_B, 0.75))
MODEL_SHARE = 0.35  # of the model's own eager forward, the small model only
FERRY = "torchferry ops"
TORCH_OPS = "same code on torch ops"
MODEL = "LlamaForCausalLM forward"


def _decoder_timer(s, ops, sync):
    """One decode step at position CACHE_LEN - 1 after a prefill of the
    positions before it; every timed step rewrites the same cache slot, so
    the cache length stays CACHE_LEN."""
    dec = llama.Decoder(s.config, s.weights, ops, max_len=CACHE_LEN)
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, s.config.vocab_size, (1, CACHE_LEN), generator=g)
    with torch.no_grad():
        dec.forward(ids[:, : CACHE_LEN - 1], 0)
    step = ids[:, CACHE_LEN - 1 :]

    def f():
        with torch.no_grad():
            return dec.forward(step, CACHE_LEN - 1)

    return python_timer("f()", sync, f=f)


def _model_timer(s, sync):
    """The model's forward for one token with its own cache, cropped back to
    CACHE_LEN - 1 entries after each step (the crop is in the time: a few
    slices per layer)."""
    model = s.model
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, s.config.vocab_size, (1, CACHE_LEN), generator=g)
    with torch.no_grad():
        out = model(ids[:, : CACHE_LEN - 1], use_cache=True)
    cache = out.past_key_values
    params = inspect.signature(model.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    step = ids[:, CACHE_LEN - 1 :]
    position = torch.tensor([[CACHE_LEN - 1]])

    def f():
        with torch.no_grad():
            r = model(step, position_ids=position, use_cache=True, **{cache_kw: cache})
        cache.crop(-1)  # a negative count: every transformers version takes it
        return r

    return python_timer("f()", sync, f=f)


def _case(ctx, dtype, config=SMALL, share=0.33):
    # transformers' model only for the small one: building one of the 1B
    # shape takes longer than timing it. Its decoder is checked against the
    # example's own definition, which the tests hold equal to transformers'.
    s = llama.setup(dtype, config, use_transformers=config == SMALL)
    label = {"dtype": str(dtype).replace("torch.", ""), "model": _shape_text(s.config)}
    variants = []
    try:
        worst = llama.check(s, torchferry.ops)
        variants.append(Variant(FERRY, _decoder_timer(s, torchferry.ops, ctx.sync),
                                note=f"logits match {s.reference} (max |diff| {worst:.1e})"))
    except Exception as e:  # a wrong or missing op: reported, never timed
        variants.append(Variant(FERRY, reason=f"{type(e).__name__}: {e}".splitlines()[0][:200]))
    variants.append(Variant(TORCH_OPS, _decoder_timer(s, llama.TorchOps, ctx.sync)))
    if s.model is not None:
        variants.append(Variant(MODEL, _model_timer(s, ctx.sync), note=s.reference))
    elif config == SMALL:
        variants.append(Variant(MODEL, reason="transformers does not import"))
    else:
        variants.append(Variant(MODEL, reason="timed at hidden 256 only: building transformers' model of the 1B "
                                              "shape takes longer than timing it"))
    return Case(
        label,
        compare(variants, ctx.settings),
        reference=FERRY,
        targets=_targets(config, share),
    )


def _targets(config, share):
    size = f"hidden {config.hidden_size}"
    targets = [Target(TORCH_OPS, "min_ratio", 1 / share, f"{size}: decode step ≤ {share}× the same code on torch ops")]
    if config == SMALL:
        targets.append(Target(MODEL, "min_ratio", 1 / MODEL_SHARE,
                              f"{size}: decode step ≤ {MODEL_SHARE}× the model's own eager forward"))
    return targets


def _shape_text(c):
    return (f"hidden {c.hidden_size}, intermediate {c.intermediate_size}, {c.num_layers} layers, {c.num_heads} q / {c.num_kv_heads} kv heads, "
            f"cache {CACHE_LEN}")


def run(ctx):
    section = Section(
        7,
        "llama",
        "Llama decode step",
        "ns per one-token decode step, batch 1, from Python, torch (and the CPU plugin) with "
        f"{torch.get_num_threads()} intra-op thread(s). Reference: the example's decoder on torchferry ops, "
        "whose logits are first checked against the model's; the others are the same decoder on torch ops "
        "and the model's own forward with its KV cache. Two models: the example's (hidden 256), where the "
        "calls dominate, and one shaped like a 1B Llama (hidden 2048, intermediate 5632, 32 q / 4 kv heads; "
        f"{ONE_B.num_layers} of its layers), where streaming the weights does. Both keep the example's "
        f"vocabulary of {SMALL.vocab_size}. The 1B-shaped decoder is checked against the example's own definition "
        "of the model (`reference_logits`), and the model's forward is timed at hidden 256 only."
        + (" --quick runs the hidden-256 model in float32 only." if ctx.quick else ""),
        layout="wide",
    )
    if ctx.device != "cpu":
        section.skipped = "the example runs on CPU tensors"
        return section
    # --quick: the small model in float32; section 8 times the 1B shape.
    dtypes = DTYPES[:1] if ctx.quick else DTYPES
    models = MODELS[:1] if ctx.quick else MODELS
    todo = [(config, share, dtype) for config, share in models for dtype in dtypes]
    for i, (config, share, dtype) in enumerate(todo):
        ctx.progress.update(f"hidden {config.hidden_size} {dtype}", i + 1, len(todo))
        section.cases.append(_case(ctx, dtype, config, share))
    return section
