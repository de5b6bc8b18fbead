"""The command-queue keyword every registered ttnn operation takes.

In the real ttnn the Python decorator around each registered operation (``ttnn.decorators.FastOperation`` /
``Operation``) pops ``queue_id=`` (or ``cq_id=``) before calling the C++ op and runs the op on that command queue, so
``ttnn.embedding(..., queue_id=0)`` is valid although the op's own signature has no such parameter. Which names are
registered operations was read from the real ttnn 0.81.1 (isinstance of those decorator classes). The simulator runs
ops eagerly in call order, so the queue changes nothing here; only the keyword is accepted.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

REGISTERED_OPERATIONS = frozenset("""
add all_gather all_reduce argmax clamp as_tensor clone concat copy_host_to_device_tensor deallocate embedding empty fill
fill_implicit_tile_padding from_device from_torch interleaved_to_sharded linear manual_seed matmul mul multiply permute
plus_one reduce_scatter reshape rms_norm sampling scale_mask_softmax scale_mask_softmax_in_place sharded_to_interleaved
silu slice softmax softmax_in_place sparse_matmul to_device to_layout
to_memory_config to_torch topk transpose typecast unsqueeze_to_4D zeros
experimental.all_gather_async experimental.all_reduce_async experimental.nlp_concat_heads
experimental.nlp_concat_heads_decode experimental.nlp_create_qkv_heads experimental.nlp_create_qkv_heads_decode
experimental.paged_fill_cache experimental.paged_fused_update_cache experimental.paged_update_cache
experimental.reduce_scatter_minimal_async experimental.rotary_embedding_llama
transformer.chunked_scaled_dot_product_attention transformer.paged_scaled_dot_product_attention_decode
transformer.scaled_dot_product_attention transformer.scaled_dot_product_attention_decode
""".split())


def _accepting_queue_id(op: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(op)
    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("queue_id" if "queue_id" in kwargs else "cq_id", None)
        return op(*args, **kwargs)

    return call


def accept_queue_ids(namespace: Any) -> None:
    """Let every registered operation of the namespace take ``queue_id=`` / ``cq_id=`` as the real decorator does."""
    for qualname in REGISTERED_OPERATIONS:
        *sub, name = qualname.split(".")
        module = getattr(namespace, sub[0]) if sub else namespace
        op = getattr(module, name, None)
        if op is None or "queue_id" in inspect.signature(op).parameters:
            continue  # absent here, or takes queue_id itself (to_device, from_device)
        setattr(module, name, _accepting_queue_id(op))
