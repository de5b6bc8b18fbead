"""Builds the TT model for vLLM through the generation class's initialize_vllm_model (vLLM's loader is bypassed)."""

from __future__ import annotations

import logging
from typing import Any

from vllm_patches.registry import tt_generation_class
from vllm_patches.tt_config import TTConfig

logger = logging.getLogger(__name__)

# vLLM's --load-format values the TT loader honours, and what each asks the generation class for: the checkpoint's
# safetensors ("auto"), or every weight placed with its real shape and no values ("dummy": capacity and speed runs).
LOAD_FORMATS = {"auto": "auto", "safetensors": "auto", "dummy": "dummy"}


def tt_load_format(vllm_load_format: Any) -> str:
    """The generation class's load_format for vLLM's, or a ValueError naming the supported ones."""
    name = str(getattr(vllm_load_format, "value", vllm_load_format))
    if name not in LOAD_FORMATS:
        raise ValueError(f"--load-format {name!r} is not supported on TT; supported: {', '.join(LOAD_FORMATS)}")
    return LOAD_FORMATS[name]


def load_tt_model(vllm_config: Any, mesh_device: Any, tt: TTConfig, model_config: Any = None) -> Any:
    """The served model, or with model_config another on the same mesh (a speculative-decoding draft model)."""
    mc = model_config or vllm_config.model_config
    cls = tt_generation_class(mc.hf_config.architectures)
    load_format = tt_load_format(vllm_config.load_config.load_format)
    logger.info("loading %s for %s (%s profile, %s weights)", cls.__name__, mc.model, tt.optimizations, load_format)
    model = cls.initialize_vllm_model(
        mc.hf_config, mesh_device, max_batch_size=vllm_config.scheduler_config.max_num_seqs,
        max_seq_len=mc.max_model_len, tt_data_parallel=tt.data_parallel, optimizations=tt.optimizations,
        model_path=mc.model, load_format=load_format, expert_dispatch=tt.expert_dispatch,
    )
    if tt.cache_invariant_prefill:
        # Chunks of one KV block: a prefix-cache hit ends on a block boundary, so its continuation's chunks are the
        # cold prefill's chunks and every position is computed the same way either way.
        block = vllm_config.cache_config.block_size
        for replica in getattr(model, "replicas", [model]):
            replica.max_prefill_chunk = block
        logger.info("cache-invariant prefill: prompts prefilled %d tokens at a time", block)
    return model
