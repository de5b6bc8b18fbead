"""Paged KV-cache helpers shared by the cache writes (paged_cache.py) and the attention ops that read the cache
(sdpa_decode.py, attention.py).

Cache [num_blocks, n_kv_heads, block_size, head_dim]; page_table [users, blocks_per_user] int32 row-major maps a
user's logical block i to a physical block. Position p of user b lives at
cache[page_table[b, p // block_size], :, p % block_size, :]. A position of -1 marks an empty decode slot: the
cache update skips it and decode attention leaves its rows undefined.
"""

from __future__ import annotations

import torch

from .errors import TTError
from .tensor import Tensor, require_layout
from .types import DataType, Layout


def require_page_table(op: str, page_table: Tensor) -> None:
    if page_table.dtype != DataType.INT32:
        raise TTError(op, f"page table must be int32, got {page_table.dtype.name.lower()}")
    require_layout(op, "page table", page_table, Layout.ROW_MAJOR)
    if page_table.shape.rank != 2:
        raise TTError(op, f"page table must be 2-D [users, blocks], got {tuple(page_table.shape)}")


def gather_pages(cache: torch.Tensor, page_rows: torch.Tensor) -> torch.Tensor:
    """[num_blocks, nkv, bs, hd] gathered by [b, n] block ids -> contiguous [b, nkv, n * bs, hd]."""
    b, n = page_rows.shape
    nblocks, nkv, bs, hd = cache.shape
    # One gather of (block, head) pages from the [blocks * heads, page] view lands each head's history contiguous.
    pages = page_rows.long()[:, None, :] * nkv + torch.arange(nkv)[None, :, None]
    return cache.reshape(nblocks * nkv, bs * hd).index_select(0, pages.reshape(-1)).view(b, nkv, n * bs, hd)


def check_blocks(op: str, blocks: torch.Tensor, num_blocks: int) -> None:
    if not blocks.numel():
        return
    lo, hi = (int(v) for v in torch.aminmax(blocks))
    if lo < 0 or hi >= num_blocks:
        raise TTError(op, f"page table points at block {hi} / {lo}, cache has {num_blocks}")
