"""Each layer's KV-cache spec, which decides how vLLM groups the layers and how many blocks it keeps for them: with
the hybrid KV cache, sliding-window layers form groups of their own that keep only the window's blocks."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from vllm.v1.core.kv_cache_utils import _get_kv_cache_groups_uniform_page_size, is_kv_cache_spec_uniform
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheSpec, SlidingWindowSpec


def layer_kv_spec(window: int | None, hybrid: bool, block_size: int, num_kv_heads: int, head_size: int,
                  dtype: torch.dtype) -> KVCacheSpec:
    """A layer's KV spec. Under the hybrid KV cache a sliding-window layer declares its window, so that vLLM keeps
    only the window's blocks: a prefill chunk restarts at the block boundary at or before its first new token
    (TTModelRunner), recomputing up to block_size - 1 tokens whose windows reach that much further back, so vLLM
    must keep those keys too and the declared window is that much longer than the one attention applies. (The spec's
    extra_retained_tokens would say so, but vLLM overwrites it with its speculative decoding margin.) Otherwise the
    layer keeps its whole context, its spec recording the window its attention applies when reading."""
    common = dict(block_size=block_size, num_kv_heads=num_kv_heads, head_size=head_size, dtype=dtype)
    if window is not None and hybrid:
        return SlidingWindowSpec(**common, sliding_window=window + block_size - 1)
    return FullAttentionSpec(**common, sliding_window=window)


def hybrid_groups(windows: Sequence[int | None], block_size: int, hybrid: bool = True) -> list[tuple[int | None, int]]:
    """How vLLM groups layers with these sliding windows (None: global attention): per group, the window its blocks
    follow (None: the whole context) and its layer count. Without an engine (tt-describe), so with the steps of
    vLLM's get_kv_cache_groups that layers of one page size take; the worker asks get_kv_cache_groups itself."""
    if not hybrid or all(w is None for w in windows):
        return [(None, len(windows))]  # one block table, every layer keeping the whole context
    specs = {f"model.layers.{i}.self_attn": layer_kv_spec(w, hybrid, block_size, 1, 64, torch.bfloat16)
             for i, w in enumerate(windows)}
    if is_kv_cache_spec_uniform(specs):
        groups = [(specs[next(iter(specs))], len(specs))]
    else:
        groups = [(g.kv_cache_spec, len(g.layer_names)) for g in _get_kv_cache_groups_uniform_page_size(specs)]
    return [(spec.sliding_window if isinstance(spec, SlidingWindowSpec) else None, n) for spec, n in groups]
