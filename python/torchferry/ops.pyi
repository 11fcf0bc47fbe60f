"""Stubs for torchferry.ops, generated from the op table by `./dev generate`."""

from typing import Any, Optional, Sequence, Union

import torch

Number = Union[int, float]

def schemas() -> list[dict[str, Any]]: ...

def abs(input: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """out = |input|"""

def neg(input: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """out = -input"""

def exp(input: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """out = e**input"""

def silu(input: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """out = input * sigmoid(input)"""

def add(input: torch.Tensor, other: Union[torch.Tensor, Number], alpha: Number = 1, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """out = input + alpha * other, broadcasting; other may be a Python number"""

def mul(input: torch.Tensor, other: Union[torch.Tensor, Number], *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """out = input * other, broadcasting; other may be a Python number"""

def clamp(input: torch.Tensor, min: Optional[Union[torch.Tensor, Number]] = None, max: Optional[Union[torch.Tensor, Number]] = None, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """out = min(max(input, min), max); each bound a number, a tensor or None"""

def stack(tensors: Sequence[torch.Tensor], dim: int = 0, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """tensors joined along a new dim"""

def cast(input: torch.Tensor, *, out: torch.Tensor, stream: Any = None) -> torch.Tensor:
    """input converted to out's dtype"""

def silu_and_mul(input: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """silu(input[..., :d]) * input[..., d:]"""

def rms_norm(input: torch.Tensor, weight: torch.Tensor, eps: float = 1e-06, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """input / sqrt(mean(input**2) + eps) * weight, over the last dim"""

def softmax(input: torch.Tensor, dim: int = -1, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """exp(input) / sum(exp(input)) along dim"""

def matmul(input: torch.Tensor, other: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """matrix product with torch.matmul's rules: a 1-D operand is a row (input) or a column (other), batch dims of any count broadcast"""

def noop(*tensors: torch.Tensor) -> None:
    """bridges every tensor and calls a kernel that reads the views and does nothing (measures dispatch)"""

def rotary_embedding(input: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, interleaved: bool = False, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """rotates input's first r of the last dim by (cos, sin) of last dim r/2: pairs (i, i + r/2), or (2i, 2i + 1) when interleaved"""

def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, *, is_causal: bool = False, scale: Optional[float] = None, enable_gqa: bool = False, lower_right: bool = False, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """softmax(query @ key.mT * scale + mask) @ value, as torch's scaled_dot_product_attention without dropout; lower_right aligns the causal diagonal to the end of the keys"""

def linear(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """input @ weight.T + bias, weight in nn.Linear's [out_features, in_features] layout, any batch dims"""

def embedding(input: torch.Tensor, weight: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """rows of weight picked by the int32/int64 ids in input"""

def cat(tensors: Sequence[torch.Tensor], dim: int = 0, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """tensors joined along an existing dim"""

def add_rms_norm(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, *, eps: float = 1e-06, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """residual += input in place, then rms_norm(residual, weight, eps): a decoder's residual add and norm in one pass, as vLLM's fused_add_rms_norm"""
