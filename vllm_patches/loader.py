"""Builds the TT model for vLLM through the generation class's initialize_vllm_model (vLLM's loader is bypassed)."""

from __future__ import annotations

import logging
from typing import Any

from vllm_patches.registry import tt_generation_class
from vllm_patches.tt_config import TTConfig

logger = logging.getLogger(__name__)


def load_tt_model(vllm_config: Any, mesh_device: Any, tt: TTConfig) -> Any:
    mc = vllm_config.model_config
    cls = tt_generation_class(mc.hf_config.architectures)
    # --load-format dummy places weights without values (capacity and speed runs); everything else reads the
    # checkpoint through the model's own loader.
    load_format = "dummy" if str(vllm_config.load_config.load_format) == "dummy" else "auto"
    logger.info("loading %s for %s (%s profile, %s weights)", cls.__name__, mc.model, tt.optimizations, load_format)
    return cls.initialize_vllm_model(
        mc.hf_config, mesh_device, max_batch_size=vllm_config.scheduler_config.max_num_seqs,
        max_seq_len=mc.max_model_len, tt_data_parallel=tt.data_parallel, optimizations=tt.optimizations,
        model_path=mc.model, load_format=load_format,
    )
