"""How many KV-cache blocks the TT worker gives vLLM: what the model asks for (tt_models/configs/models token budget, at
least one max_model_len request, one block per sequence), capped by what the device's DRAM holds after the weights
(tt_models.capacity). Too little room for one max_model_len request fails the load with the device's numbers.

With vLLM's hybrid KV cache, sliding-window layers form groups of their own that keep only the window's blocks, all
groups drawing on one pool of blocks that each span one layer of every group (vllm_patches/kv_specs.py groups them;
blocks_per_request counts them). Plain arithmetic: the real-ttnn checker uses it in an environment without vLLM."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tt_models.capacity import KVCapacity

MiB = 1 << 20


def blocks_per_request(groups: Sequence[tuple[int | None, int]], context: int, block_size: int) -> int:
    """Blocks one request of `context` tokens holds over the groups while it decodes: the whole context in a global
    group, the (declared) window in a sliding one, which may straddle one more block."""
    whole = math.ceil(context / block_size)
    return sum(whole if w is None else min(whole, math.ceil((w - 1) / block_size) + 1) for w, _ in groups)


def wanted_blocks(token_budget: int, max_model_len: int, block_size: int, max_num_seqs: int,
                  request_blocks: Sequence[int] = ()) -> int:
    """Blocks for the token budget (at least one full-length request) plus one block per sequence for the partially
    filled last block of each, plus vLLM's null block. request_blocks (vLLM's hybrid KV cache, several groups
    drawing on one pool): the most blocks one request holds in each group; a group holding fewer than the whole
    context (sliding-window layers) needs at most that many per sequence."""
    tokens = max(token_budget, max_model_len)
    full = math.ceil((tokens + block_size * max_num_seqs) / block_size)
    if len(request_blocks) <= 1:
        return full + 1
    whole = math.ceil(max_model_len / block_size)
    return sum(full if r >= whole else min(full, max_num_seqs * r) for r in request_blocks) + 1


def plan_kv_blocks(wanted: int, capacity: KVCapacity, max_model_len: int, block_size: int,
                   override: int | None = None, request_blocks: Sequence[int] = ()) -> int:
    """The block count to allocate. An explicit num_gpu_blocks_override is honoured only if the device holds it.
    request_blocks: as for wanted_blocks (what one max_model_len request holds in each group)."""
    whole = math.ceil(max_model_len / block_size)
    needed = (sum(min(whole, r) for r in request_blocks) if len(request_blocks) > 1 else whole) + 1  # + null block
    if override is not None:
        if override > capacity.blocks:
            raise ValueError(f"num_gpu_blocks_override={override} KV blocks do not fit in the device's DRAM: "
                             f"{_room(capacity)}, so at most {capacity.blocks} blocks of {block_size} tokens")
        return override
    if capacity.blocks < needed:
        raise ValueError(f"the KV cache for one max_model_len={max_model_len} request ({needed} blocks of "
                         f"{block_size} tokens) does not fit in the device's DRAM: {_room(capacity)}, so at most "
                         f"{capacity.blocks} blocks ({capacity.tokens(block_size)} tokens). Lower max_model_len, use a "
                         f"profile with a smaller KV-cache dtype, or a device with more DRAM")
    return min(wanted, capacity.blocks)


def _room(c: KVCapacity) -> str:
    return (f"{c.free_per_bank / MiB:.1f} MiB free per DRAM bank x {c.banks} banks after the weights, "
            f"{c.reserve_per_bank / MiB:.1f} MiB of it kept for prefill activations, "
            f"{c.bytes_per_block_per_bank * c.banks / MiB:.3f} MiB per block")
