"""Rotary embeddings in TT's interleaved (Meta) format.

Weights are permuted so each head's rotation pairs are adjacent channels (2k, 2k+1); cos/sin are stored "doubled"
([c0, c0, c1, c1, ...]) for every position, and rotary_embedding_llama applies the pairwise rotation through a
32x32 transformation matrix. Inverse frequencies (with llama3 / linear scaling) come from transformers' own rope
functions so they match the reference model exactly.
"""

from __future__ import annotations

from typing import Any

import torch


def inverse_frequencies(hf_config: Any, head_dim: int, kind: str | None = None,
                        rotary_dim: int | None = None) -> tuple[torch.Tensor, float]:
    """`kind`: the layer type whose setting to use where the config keeps one per kind (Gemma 3:
    rope_parameters = {"full_attention": {...}, "sliding_attention": {...}}). `rotary_dim`: the channels RoPE
    rotates when not the whole head (partial_rotary_factor, which transformers' own functions read themselves)."""
    rope = getattr(hf_config, "rope_parameters", None) or {}
    if kind is not None:
        rope = rope[kind]
    rope_type = rope.get("rope_type", "default")
    if rope_type == "default":
        theta = rope.get("rope_theta", getattr(hf_config, "rope_theta", 10000.0))
        dim = rotary_dim or head_dim
        return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), 1.0
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    extra = {} if kind is None else {"layer_type": kind}
    inv_freq, attention_scaling = ROPE_INIT_FUNCTIONS[rope_type](hf_config, torch.device("cpu"), **extra)
    return inv_freq.float(), float(attention_scaling)


def cos_sin_tables(hf_config: Any, head_dim: int, max_positions: int, kind: str | None = None,
                   rotary_dim: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Doubled cos/sin, [1, 1, max_positions, head_dim] float32. With `rotary_dim` < head_dim (partial RoPE) the
    channels past it get cos 1 and sin 0: rotary_embedding_llama passes them through unchanged (x * 1 + y * 0,
    exact), so the op still takes whole heads."""
    inv_freq, scaling = inverse_frequencies(hf_config, head_dim, kind, rotary_dim)
    angles = torch.outer(torch.arange(max_positions, dtype=torch.float64), inv_freq.double())
    cos = (torch.cos(angles) * scaling).repeat_interleave(2, dim=-1)
    sin = (torch.sin(angles) * scaling).repeat_interleave(2, dim=-1)
    rest = head_dim - cos.shape[-1]
    if rest:
        cos = torch.cat([cos, cos.new_ones(max_positions, rest)], dim=-1)
        sin = torch.cat([sin, sin.new_zeros(max_positions, rest)], dim=-1)
    return cos.float()[None, None], sin.float()[None, None]


def transformation_matrix() -> torch.Tensor:
    """[1, 1, 32, 32]: x @ T maps each pair (a, b) to (-b, a), i.e. the 90-degree rotation of the pair."""
    t = torch.zeros(1, 1, 32, 32)
    even, odd = torch.arange(0, 32, 2), torch.arange(1, 32, 2)
    t[..., even, odd] = 1.0
    t[..., odd, even] = -1.0
    return t
