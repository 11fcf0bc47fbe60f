"""A Llama-family decoder on torchferry ops: prefill, then one-token decode
steps against a KV cache, checked against the model's own forward.

    python examples/llama_decode.py [--dtype float32|bfloat16] [--steps N]

The model is transformers' LlamaForCausalLM built from a config with random
weights when transformers is installed (its logits are then the reference);
otherwise `reference_logits` below, a plain torch definition of the same
model, is. `Decoder` is written once against an `ops` namespace and runs on
either `torchferry.ops` or `TorchOps` (the same calls on torch ops), which
is what the benchmark's "llama" section times, beside the model's own eager
forward.

One layer is 11 torchferry calls: linear (q, k and v in one weight),
rotary_embedding twice (k is written straight into the cache), cast (v into
the cache), scaled_dot_product_attention (GQA over the cache, causal
alignment at the cache's end), linear (o), add_rms_norm (the residual
stream updated in place and normed in one pass), the MLP as linear,
silu_and_mul, linear, and add_rms_norm again.
"""

import argparse
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Config:
    vocab_size: int = 1000
    hidden_size: int = 256
    intermediate_size: int = 688
    num_layers: int = 4
    num_heads: int = 8
    num_kv_heads: int = 4
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_positions: int = 256

    @property
    def head_dim(self):
        return self.hidden_size // self.num_heads


@dataclass
class Layer:
    input_norm: torch.Tensor  # [hidden]
    qkv: torch.Tensor  # [(heads + 2 kv_heads) * head_dim, hidden]
    o: torch.Tensor  # [hidden, heads * head_dim]
    post_norm: torch.Tensor  # [hidden]
    gate_up: torch.Tensor  # [2 * intermediate, hidden]
    down: torch.Tensor  # [hidden, intermediate]


@dataclass
class Weights:
    embed: torch.Tensor  # [vocab, hidden]
    layers: list
    norm: torch.Tensor  # [hidden]
    lm_head: torch.Tensor  # [vocab, hidden]


def hf_model(config, dtype, seed=0):
    """transformers' LlamaForCausalLM with random weights, or None when
    transformers does not import."""
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except Exception:
        return None
    torch.manual_seed(seed)
    hf_config = LlamaConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads,
        rms_norm_eps=config.rms_norm_eps,
        rope_theta=config.rope_theta,
        max_position_embeddings=config.max_positions,
        tie_word_embeddings=False,
    )
    hf_config._attn_implementation = "eager"
    return LlamaForCausalLM(hf_config).to(dtype).eval()


def weights_of(model):
    """The decoder's weights from a LlamaForCausalLM, q/k/v and gate/up
    joined so that each is one linear."""
    m = model.model
    layers = []
    for layer in m.layers:
        a, mlp = layer.self_attn, layer.mlp
        layers.append(
            Layer(
                input_norm=layer.input_layernorm.weight.detach(),
                qkv=torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]).detach(),
                o=a.o_proj.weight.detach(),
                post_norm=layer.post_attention_layernorm.weight.detach(),
                gate_up=torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]).detach(),
                down=mlp.down_proj.weight.detach(),
            )
        )
    return Weights(m.embed_tokens.weight.detach(), layers, m.norm.weight.detach(), model.lm_head.weight.detach())


def random_weights(config, dtype, seed=0):
    """Weights for the model's own definition, when transformers is absent."""
    g = torch.Generator().manual_seed(seed)
    c = config

    def w(*shape, scale=0.02):
        return (torch.randn(*shape, generator=g) * scale).to(dtype)

    def norm():
        return (1 + 0.1 * torch.randn(c.hidden_size, generator=g)).to(dtype)

    qkv_rows = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim
    layers = [
        Layer(norm(), w(qkv_rows, c.hidden_size), w(c.hidden_size, c.num_heads * c.head_dim), norm(),
              w(2 * c.intermediate_size, c.hidden_size), w(c.hidden_size, c.intermediate_size))
        for _ in range(c.num_layers)
    ]
    return Weights(w(c.vocab_size, c.hidden_size, scale=1.0), layers, norm(), w(c.vocab_size, c.hidden_size))


def rope_tables(config, dtype):
    """cos and sin of every position, [max_positions, head_dim / 2]: the
    rotate-half layout takes the first half of what transformers computes."""
    d = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs = torch.outer(torch.arange(config.max_positions, dtype=torch.float32), inv_freq)
    return freqs.cos().to(dtype), freqs.sin().to(dtype)


class TorchOps:
    """The calls the decoder makes, on torch ops: the same code without
    torchferry, for the comparison."""

    linear = staticmethod(F.linear)
    embedding = staticmethod(F.embedding)
    silu_and_mul = staticmethod(lambda x: F.silu(x[..., : x.shape[-1] // 2]) * x[..., x.shape[-1] // 2 :])

    @staticmethod
    def rms_norm(x, weight, eps):
        return F.rms_norm(x, weight.shape, weight, eps)

    @staticmethod
    def add_rms_norm(x, residual, weight, *, eps):
        residual += x
        return F.rms_norm(residual, weight.shape, weight, eps)

    @staticmethod
    def rotary_embedding(x, cos, sin, *, out=None):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        rotated = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        if out is None:
            return rotated
        return out.copy_(rotated)

    @staticmethod
    def scaled_dot_product_attention(q, k, v, *, is_causal, lower_right, enable_gqa, out=None):
        mask = None
        if is_causal:
            lq, lk = q.shape[-2], k.shape[-2]
            mask = torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq if lower_right else 0)
        r = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=enable_gqa)
        if out is None:
            return r
        return out.copy_(r)

    @staticmethod
    def cast(x, *, out):
        return out.copy_(x)


class Decoder:
    """Prefill and decode with a preallocated KV cache, on `ops`."""

    def __init__(self, config, weights, ops, batch=1, max_len=None):
        self.c, self.w, self.ops = config, weights, ops
        dtype = weights.embed.dtype
        self.max_len = max_len or config.max_positions
        # One tensor per cache for all layers, [layers, batch, kv_heads,
        # max_len, head_dim]: each forward takes every layer's views of it in
        # one slice and unbind, not a few slices per layer (a torch view costs
        # 1-3 us from Python, more than most of the step's ops here).
        shape = (len(weights.layers), batch, config.num_kv_heads, self.max_len, config.head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype)
        self.v_cache = torch.zeros(shape, dtype=dtype)
        self.cos, self.sin = rope_tables(config, dtype)

    def forward(self, ids, pos):
        """Logits of every position of `ids` [batch, L], whose first token
        sits at `pos` in the cache; the cache is written at [pos, pos + L)."""
        c, w, ops = self.c, self.w, self.ops
        b, n = ids.shape
        hd, hq, hkv = c.head_dim, c.num_heads, c.num_kv_heads
        cos, sin = self.cos[pos : pos + n].unsqueeze(1), self.sin[pos : pos + n].unsqueeze(1)
        # Each layer's cache slots for these tokens ([b, n, kv_heads, hd]
        # views) and the cache it attends ([b, kv_heads, pos + n, hd]).
        k_slots = self.k_cache.narrow(3, pos, n).transpose(2, 3).unbind(0)
        v_slots = self.v_cache.narrow(3, pos, n).transpose(2, 3).unbind(0)
        k_seen = self.k_cache.narrow(3, 0, pos + n).unbind(0)
        v_seen = self.v_cache.narrow(3, 0, pos + n).unbind(0)
        # The attention output, written by each layer and read by its o
        # projection before the next layer writes it again.
        attn = torch.empty(b, n, hq, hd, dtype=w.embed.dtype)
        attn_heads, attn_rows = attn.transpose(1, 2), attn.view(b, n, hq * hd)
        h = ops.embedding(ids, w.embed)  # the residual stream, [b, n, hidden]
        x = ops.rms_norm(h, w.layers[0].input_norm, c.rms_norm_eps)
        for i, layer in enumerate(w.layers):
            q, k, v = ops.linear(x, layer.qkv).view(b, n, hq + 2 * hkv, hd).split_with_sizes([hq, hkv, hkv], 2)
            q = ops.rotary_embedding(q, cos, sin)
            ops.rotary_embedding(k, cos, sin, out=k_slots[i])
            ops.cast(v, out=v_slots[i])
            ops.scaled_dot_product_attention(
                q.transpose(1, 2),
                k_seen[i],
                v_seen[i],
                is_causal=True,
                lower_right=True,
                enable_gqa=True,
                out=attn_heads,
            )
            o = ops.linear(attn_rows, layer.o)
            x = ops.add_rms_norm(o, h, layer.post_norm, eps=c.rms_norm_eps)
            mlp = ops.linear(ops.silu_and_mul(ops.linear(x, layer.gate_up)), layer.down)
            last = i + 1 == len(w.layers)
            x = ops.add_rms_norm(mlp, h, w.norm if last else w.layers[i + 1].input_norm, eps=c.rms_norm_eps)
        return ops.linear(x, w.lm_head)


def reference_logits(config, weights, ids):
    """The model's own definition in plain torch (no cache, no fusion), the
    reference when transformers is not installed."""
    c = config
    b, n = ids.shape
    hd = c.head_dim

    def norm(t, weight):
        t32 = t.float()
        return (t32 * torch.rsqrt(t32.pow(2).mean(-1, keepdim=True) + c.rms_norm_eps)).to(t.dtype) * weight

    cos, sin = rope_tables(config, weights.embed.dtype)
    cos, sin = torch.cat([cos[:n]] * 2, -1), torch.cat([sin[:n]] * 2, -1)

    def rope(t):  # [b, heads, n, hd]
        t1, t2 = t[..., : hd // 2], t[..., hd // 2 :]
        return t * cos + torch.cat([-t2, t1], -1) * sin

    h = weights.embed[ids]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for layer in weights.layers:
        x = norm(h, layer.input_norm)
        q, k, v = (x @ layer.qkv.t()).split([c.num_heads * hd, c.num_kv_heads * hd, c.num_kv_heads * hd], -1)
        q = rope(q.view(b, n, c.num_heads, hd).transpose(1, 2))
        k = rope(k.view(b, n, c.num_kv_heads, hd).transpose(1, 2))
        v = v.view(b, n, c.num_kv_heads, hd).transpose(1, 2)
        rep = c.num_heads // c.num_kv_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(hd)
        probs = scores.masked_fill(~causal, float("-inf")).softmax(-1).to(q.dtype)
        attn = (probs @ v).transpose(1, 2).reshape(b, n, c.num_heads * hd)
        h = h + attn @ layer.o.t()
        x = norm(h, layer.post_norm)
        gate, up = (x @ layer.gate_up.t()).chunk(2, -1)
        h = h + (F.silu(gate) * up) @ layer.down.t()
    return norm(h, weights.norm) @ weights.lm_head.t()


@dataclass
class Setup:
    config: Config
    weights: Weights
    model: object  # the LlamaForCausalLM, or None
    reference: str  # what the logits are checked against


def setup(dtype=torch.float32, config=Config(), use_transformers=True):
    model = hf_model(config, dtype) if use_transformers else None
    if model is not None:
        import transformers

        return Setup(config, weights_of(model), model, f"transformers {transformers.__version__} LlamaForCausalLM")
    return Setup(config, random_weights(config, dtype), None, "the example's own definition (reference_logits)")


def model_logits(s, ids):
    """The reference logits for `ids` from position 0."""
    with torch.no_grad():
        if s.model is not None:
            return s.model(ids).logits
        return reference_logits(s.config, s.weights, ids)


def tolerance(dtype):
    return {"atol": 2e-4, "rtol": 2e-4} if dtype == torch.float32 else {"atol": 6e-2, "rtol": 6e-2}


def check(s, ops, prompt_len=12, steps=4, seed=1):
    """Prefill `prompt_len` tokens, then decode `steps` tokens one at a time;
    returns the largest absolute difference from the reference logits.
    Raises AssertionError when a step is outside the dtype's tolerance."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, s.config.vocab_size, (1, prompt_len + steps), generator=g)
    want = model_logits(s, ids)
    dec = Decoder(s.config, s.weights, ops, max_len=prompt_len + steps)
    tol = tolerance(s.weights.embed.dtype)
    worst = 0.0
    with torch.no_grad():
        got = dec.forward(ids[:, :prompt_len], 0)
        torch.testing.assert_close(got, want[:, :prompt_len], **tol, msg=lambda m: f"prefill: {m}")
        worst = (got.float() - want[:, :prompt_len].float()).abs().max().item()
        for t in range(prompt_len, prompt_len + steps):
            got = dec.forward(ids[:, t : t + 1], t)
            torch.testing.assert_close(got, want[:, t : t + 1], **tol, msg=lambda m: f"decode at {t}: {m}")
            worst = max(worst, (got.float() - want[:, t : t + 1].float()).abs().max().item())
    return worst


def main(argv=None):
    import torchferry

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--steps", type=int, default=4, help="decode steps checked after the prompt")
    args = p.parse_args(argv)
    s = setup(getattr(torch, args.dtype))
    worst = check(s, torchferry.ops, steps=args.steps)
    print(f"{args.dtype}: prefill and {args.steps} decode steps match {s.reference} (max |diff| {worst:.2e})")


if __name__ == "__main__":
    main()
