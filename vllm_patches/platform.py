"""The TT platform: wires vLLM to the TT worker and scheduler, and refuses what TT does not support.

Imported in every vLLM process, at import time of vllm.entrypoints: no module-level import of vllm.config.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any

import torch
from vllm.platforms.interface import Platform, PlatformEnum

if TYPE_CHECKING:
    from vllm.config import VllmConfig

logger = logging.getLogger(__name__)
# The TT runner consumes the V1 SchedulerOutput format.
os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "0")
# A forked engine core inherits a torch thread pool the parent may already have used, and can hang in its first
# parallel op; a spawned one starts clean.
os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
DEFAULT_BLOCK_SIZE = 64
MAX_LOGPROBS = 20


def _guard_accelerator_cache_calls() -> None:
    """vLLM's engine shutdown empties the torch accelerator cache for every non-CPU platform; with no torch
    accelerator (TT memory belongs to ttnn) torch raises instead of doing nothing. Make those calls no-ops then."""
    acc = torch.accelerator
    if acc.is_available() or getattr(acc, "_tt_guarded", False):
        return
    for name in ("empty_cache", "empty_host_cache"):
        if hasattr(acc, name):
            setattr(acc, name, lambda *a, **k: None)
    acc._tt_guarded = True


_guard_accelerator_cache_calls()


class TTPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "tt"
    device_type = "cpu"  # host tensors: TT device memory is managed by ttnn, not torch
    dispatch_key = "CPU"
    simple_compile_backend = "eager"

    @property
    def supported_dtypes(self) -> list[torch.dtype]:
        return [torch.bfloat16, torch.float32]

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        from tt_models.backend import is_simulator

        return "tt (simulated)" if is_simulator() else "tt"

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        return 12 << 30  # one Wormhole chip's DRAM

    @classmethod
    def support_hybrid_kv_cache(cls) -> bool:
        """vLLM's hybrid KV cache manager: sliding-window layers (Gemma 3's five of six) get their own block tables
        and keep only their window's blocks; the TT worker allocates and the model reads one table per group.
        --disable-hybrid-kv-cache-manager gives every layer the whole context in one table."""
        return True

    @classmethod
    def import_kernels(cls) -> None:
        """TT ops come from ttnn; vLLM's CUDA kernels are not used."""

    @classmethod
    def import_ir_kernels(cls) -> None:
        """See import_kernels."""

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        return False

    @classmethod
    def inference_mode(cls) -> Any:
        return torch.no_grad()

    @classmethod
    def get_attn_backend_cls(cls, *args: Any, **kwargs: Any) -> str:
        raise RuntimeError("TT models run their own paged attention; vLLM attention backends are not used")

    @classmethod
    def validate_request(cls, processed_inputs: Any, params: Any) -> None:
        """Per-request refusals. Raised as vLLM's client error: the OpenAI server answers those with a 400 naming
        the problem, where any other exception from the engine client becomes a 500 with an empty message."""
        from vllm.exceptions import VLLMValidationError
        from vllm.sampling_params import SamplingParams

        if not isinstance(params, SamplingParams):
            raise VLLMValidationError("TT serves text generation only: pooling requests are not supported")
        if params.logprobs is not None and params.logprobs > MAX_LOGPROBS:
            raise VLLMValidationError(f"logprobs={params.logprobs}: TT returns at most {MAX_LOGPROBS}",
                                      parameter="logprobs", value=params.logprobs)

    @classmethod
    def pre_register_and_update(cls, parser: Any = None) -> None:
        """Called by vLLM before it fills in its defaults (EngineArgs.create_engine_config, and the CLI parser)."""
        from vllm_patches.engine_args import install_engine_arg_hooks

        install_engine_arg_hooks()

    @classmethod
    def check_and_update_config(cls, vllm_config: VllmConfig) -> None:
        from vllm_patches.tt_config import TTConfig

        model, parallel = vllm_config.model_config, vllm_config.parallel_config
        sched, cache = vllm_config.scheduler_config, vllm_config.cache_config
        if parallel.tensor_parallel_size > 1 or parallel.pipeline_parallel_size > 1:
            raise ValueError("TT shards models across its own mesh (MESH_DEVICE): use tensor_parallel_size=1 and "
                             "pipeline_parallel_size=1 on the vLLM side")
        if vllm_config.lora_config is not None:
            raise ValueError("LoRA is not supported on TT")
        if model is not None and model.is_encoder_decoder:
            raise ValueError("encoder-decoder models are not supported on TT")
        if model is not None and model.runner_type == "pooling":
            raise ValueError("pooling models are not supported on TT")
        if model is not None and model.enable_prompt_embeds:
            raise ValueError("enable_prompt_embeds is not supported on TT: TT models embed token ids on the device")
        tt = TTConfig.from_additional_config(vllm_config.additional_config)
        if vllm_config.speculative_config is not None:
            from vllm_patches.spec_decode import check_speculative_config

            check_speculative_config(vllm_config.speculative_config, tt)
        from vllm_patches.loader import tt_load_format

        tt_load_format(vllm_config.load_config.load_format)  # refused now, not once the engine core starts
        from vllm_patches.shutdown import install_shutdown_grace

        install_shutdown_grace()  # this process may run the engine core's process manager
        parallel.worker_cls = "vllm_patches.worker.TTWorker"
        sched.scheduler_cls = "vllm_patches.scheduler.TTScheduler"
        # vLLM has decided async scheduling by now (on by default, off with --no-async-scheduling); it stays on only
        # for models that can overlap decode steps (below).
        async_wanted, sched.async_scheduling = bool(sched.async_scheduling), False
        sched.enable_chunked_prefill = False  # turned on below for models that can continue a prefill
        with contextlib.suppress(Exception):
            from vllm.config import CompilationMode, CUDAGraphMode

            vllm_config.compilation_config.mode = CompilationMode.NONE
            vllm_config.compilation_config.cudagraph_mode = CUDAGraphMode.NONE
        if not cache.user_specified_block_size or cache.block_size is None:
            cache.block_size = DEFAULT_BLOCK_SIZE
        if cache.block_size % 32:
            raise ValueError(f"block_size {cache.block_size} must be a multiple of 32 (TT tiles)")
        from generator_vllm import MAX_USERS_PER_DEVICE

        dp = tt.data_parallel
        if sched.max_num_seqs > MAX_USERS_PER_DEVICE * dp:
            raise ValueError(
                f"max_num_seqs={sched.max_num_seqs}: one TT device decodes at most {MAX_USERS_PER_DEVICE} users (its "
                f"head ops place one user per core). Set max_num_seqs <= "
                f"{MAX_USERS_PER_DEVICE * dp}, and serve more users with data parallel over more devices "
                f'(additional_config["tt"]["data_parallel"] over the mesh, or vLLM\'s --data-parallel-size)')
        if sched.max_num_seqs % dp:
            raise ValueError(f'max_num_seqs={sched.max_num_seqs} does not split evenly over additional_config["tt"]'
                             f'["data_parallel"]={dp} replicas')
        if model is None:
            return
        from vllm_patches.registry import tt_generation_class

        tt_cls = tt_generation_class(model.hf_config.architectures)
        caps = getattr(tt_cls, "model_capabilities", {})
        # Sliding-window layers keep at least their window (vLLM's hybrid KV cache) or their whole context, and apply
        # the window when reading, so a cached prefix and a chunk continuing from cached KV are complete for them.
        if cache.enable_prefix_caching and not caps.get("supports_prefix_caching"):
            logger.info("prefix caching disabled: not supported by the model")
            cache.enable_prefix_caching = False
        # Chunked prefill across steps: a token budget below the longest prompt prefills long prompts one chunk per
        # step (decode steps in between), for models that continue a prefill from cached KV (the path prefix hits
        # take). Chunks end on block boundaries (the budget is rounded down to whole blocks). Otherwise a prompt is
        # prefilled whole, so the budget must fit the longest prompt or such prompts would wait forever.
        budget, block = sched.max_num_batched_tokens, cache.block_size
        if caps.get("supports_chunked_prefill") and budget < model.max_model_len:
            sched.enable_chunked_prefill = True
            sched.max_num_batched_tokens = max(block, budget // block * block)
            logger.info("chunked prefill: prompts prefilled %d tokens per step", sched.max_num_batched_tokens)
        else:
            sched.enable_chunked_prefill = False
            sched.max_num_batched_tokens = max(budget, model.max_model_len)
        # Async scheduling (vLLM schedules and launches step N+1 before collecting step N's output): for models
        # declaring supports_async_decode, when decode samples on the device (a step sampled on the host waits for
        # its logits anyway); additional_config tt.async_decode=false turns it off.
        if vllm_config.speculative_config is not None:
            if not caps.get("supports_speculative_decoding"):
                raise ValueError(f"speculative decoding is not supported by {tt_cls.__name__} on TT")
            async_wanted = False  # a verify step's accepted tokens decide the next step's inputs: synchronous
        if async_wanted and caps.get("supports_async_decode") and tt.async_decode and tt.sample_on_device_mode:
            sched.async_scheduling = True
            sched.scheduler_cls = "vllm_patches.async_scheduler.TTAsyncScheduler"
            logger.info("async scheduling: decode steps sampled on device overlap the host's work")
        # The KV block count is the worker's: what the model asks for, capped by the device's DRAM once the weights
        # are loaded (TTWorker.determine_available_memory).
        logger.info("TT platform: %s, block_size %d, trace_mode %s", tt_cls.__name__, cache.block_size,
                    tt.trace_mode)
