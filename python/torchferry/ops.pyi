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
    """matrix product of 2-D and batched 3-D operands"""

def noop(*tensors: torch.Tensor) -> None:
    """bridges every tensor and calls a kernel that reads the views and does nothing (measures dispatch)"""

def embedding(input: torch.Tensor, weight: torch.Tensor, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """rows of weight picked by the int32/int64 ids in input"""

def cat(tensors: Sequence[torch.Tensor], dim: int = 0, *, out: Optional[torch.Tensor] = None, stream: Any = None) -> torch.Tensor:
    """tensors joined along an existing dim"""
