"""How much KV cache a device holds once a model's weights are on it, from the device's own allocator.

The paged KV cache is 2 x n_layers (fewer with vLLM's hybrid KV cache: cache_slots) interleaved DRAM tensors
[num_blocks, n_kv_heads, block_size, head_dim]; each
spreads its tiles round-robin over the DRAM banks, so a bank holds ceil(tiles / banks) tiles of each. What a bank has
left after the weights (ttnn.get_memory_view: the largest free block of DRAM per bank, identical in every bank) minus
room for prefill's interleaved activations bounds the block count. The vLLM worker caps vLLM's block count with it,
and scripts/check_real_ttnn.sh allocates exactly that many blocks on the real allocator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tt_models.backend import ttnn
from tt_models.layouts import TILE_BYTES

TILE = 32


@dataclass(frozen=True)
class KVCapacity:
    blocks: int  # KV blocks (incl. vLLM's null block) that fit
    free_per_bank: int  # DRAM bytes per bank free after the weights
    reserve_per_bank: int  # kept for activations
    bytes_per_block_per_bank: float  # KV bytes a block adds to each bank
    banks: int

    def tokens(self, block_size: int) -> int:
        return self.blocks * block_size


def kv_bank_bytes(num_blocks: int, n_layers: int, n_kv_heads: int, block_size: int, head_dim: int,
                  dtype_name: str, banks: int, alignment: int = 32, per_layer: int = 2) -> int:
    """Bytes per DRAM bank the whole KV cache takes (every layer's K and V: per_layer caches, MLA's one)."""
    tiles = num_blocks * n_kv_heads * (block_size // TILE) * -(-head_dim // TILE)
    per_tensor = -(-tiles // banks) * TILE_BYTES[dtype_name]
    per_tensor = -(-per_tensor // alignment) * alignment
    return per_layer * n_layers * per_tensor


def activation_reserve(args: Any, max_prefill_tokens: int, banks: int) -> int:
    """DRAM per bank prefill's interleaved activations take at most: the residual, the QKV projection and the MLP's
    gate, up and product for one chunk, in bf16, plus the 32-row LM-head logits, with 25% for allocator slack."""
    qkv = args.head_dim * (args.n_heads + 2 * args.n_kv_heads)
    elems = max_prefill_tokens * (3 * args.dim + qkv + 3 * args.hidden_dim) + TILE * args.vocab_size
    return int(1.25 * 2 * elems / banks)


def cache_slots(layer_groups: Sequence[int] | None, n_layers: int) -> list[int]:
    """The K/V tensor pair each layer uses. One per layer, unless vLLM's hybrid KV cache groups the layers
    (layer_groups: each layer's group): its block ids are unique across groups, so the k-th layer of every group can
    share the k-th pair, and the cache holds as many pairs as the largest group has layers."""
    if layer_groups is None:
        return list(range(n_layers))
    if len(layer_groups) != n_layers:
        raise ValueError(f"layer_groups names {len(layer_groups)} layers of a {n_layers}-layer model")
    seen: dict[int, int] = {}
    slots = []
    for g in layer_groups:
        slots.append(seen.get(g, 0))
        seen[g] = slots[-1] + 1
    return slots


def kv_capacity(device: Any, args: Any, block_size: int, kv_dtype: Any, max_prefill_tokens: int,
                cache_layers: int | None = None, also: Sequence[tuple[Any, Any]] = ()) -> KVCapacity:
    """KV blocks that fit in the device's DRAM as it is now (call once the weights are loaded); a block spans
    cache_layers layers' K and V (default: every layer; fewer under vLLM's hybrid KV cache, see cache_slots).
    also: (args, kv_dtype) of other models' caches indexed by the same block ids (a speculative-decoding draft
    model's, every layer), so a block costs each of them too."""
    view = ttnn.get_memory_view(device, ttnn.BufferType.DRAM)
    banks, free = view.num_banks, view.largest_contiguous_bytes_free_per_bank
    caches = [(args, kv_dtype, cache_layers or args.n_layers)] + [(a, d, a.n_layers) for a, d in also]
    reserve = max(activation_reserve(a, max_prefill_tokens, banks) for a, _, _ in caches)

    def bank_bytes(blocks: int) -> int:
        return sum(kv_bank_bytes(blocks, n, a.n_kv_heads, block_size, a.head_dim, _dtype_name(d), banks,
                                 per_layer=a.kv_caches_per_layer) for a, d, n in caches)

    per_block = bank_bytes(banks) / banks
    budget = free - reserve
    blocks = max(0, int(budget // per_block)) if per_block else 0
    # The per-bank rounding can cost a tile per tensor: step down until the exact size fits.
    while blocks and bank_bytes(blocks) > budget:
        blocks -= 1
    return KVCapacity(blocks, free, reserve, per_block, banks)


def _dtype_name(kv_dtype: Any) -> str:
    return kv_dtype.name if hasattr(kv_dtype, "name") else str(kv_dtype).rsplit(".", 1)[-1]
