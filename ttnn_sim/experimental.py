"""ttnn.experimental: the ops tt_transformers reaches through this namespace."""

from .ccl import all_gather_async, all_gather_async_reversed, all_reduce_async, reduce_scatter_minimal_async
from .heads import (
    nlp_concat_heads,
    nlp_concat_heads_decode,
    nlp_create_qkv_heads,
    nlp_create_qkv_heads_decode,
    nlp_create_qkv_heads_falcon7b,
)
from .paged_cache import paged_fill_cache, paged_fused_update_cache, paged_update_cache
from .rotary import rotary_embedding_llama

__all__ = [
    "all_gather_async",
    "all_gather_async_reversed",
    "all_reduce_async",
    "reduce_scatter_minimal_async",
    "nlp_concat_heads",
    "nlp_concat_heads_decode",
    "nlp_create_qkv_heads",
    "nlp_create_qkv_heads_decode",
    "nlp_create_qkv_heads_falcon7b",
    "paged_fill_cache",
    "paged_fused_update_cache",
    "paged_update_cache",
    "rotary_embedding_llama",
]
