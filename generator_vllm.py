"""The generation classes vLLM calls (the TT model-integration contract).

`initialize_vllm_model` builds a model from an HF config; `allocate_kv_cache` makes the paged cache;
`prefill_forward` / `decode_forward` run steps; `read_decode_output` / `process_decode_output_host` read decode
results back; `warmup_model_prefill` / `warmup_model_decode` compile and capture before serving.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from tt_models.backend import is_simulator, ttnn
from tt_models.capacity import KVCapacity, cache_slots, kv_capacity
from tt_models.checkpoint import hf_to_meta, load_state_dict, pad_mlp_weights
from tt_models.config import load_model_overrides, load_optimizations
from tt_models.data_parallel import DataParallel
from tt_models.generator import Generator, prefill_bucket
from tt_models.layers.penalties import penalty_params
from tt_models.layers.sampling import device_params
from tt_models.model import Transformer
from tt_models.model_args import ModelArgs, UnsupportedModelError
from tt_models.parallel import check_weights_fit, pad_mlp, plan_tensor_parallel
from tt_models.sampling import TTSamplingParams, penalty_lists, per_user_lists, sampling_mode
from tt_models.weights import ShapeOnlyWeights, WeightStore, check_state_dict, meta_shapes, weight_cache_dir

logger = logging.getLogger(__name__)
DEFAULT_TOKEN_BUDGET = 131072
DEFAULT_PREFILL_CHUNK = 2048
MAX_USERS_PER_DEVICE = 32


class TTCausalLM(Generator):
    """Shared implementation of the text-only decoder families."""

    model_capabilities = {"supports_prefix_caching": True, "supports_sample_on_device": True,
                          "supports_chunked_prefill": True, "supports_async_decode": True,
                          "supports_speculative_decoding": True}
    architecture = ""

    def modules(self) -> Iterator[Any]:
        """No torch modules: the weights live on the device. vLLM's in-process engine (VLLM_ENABLE_V1_MULTIPROCESSING=0)
        walks model.modules() when it is deleted, to drop torch.compile hooks."""
        return iter(())

    @classmethod
    def initialize_vllm_model(
        cls,
        hf_config: Any,
        mesh_device: Any,
        max_batch_size: int,
        max_seq_len: int = 4096,
        n_layers: int | None = None,
        tt_data_parallel: int = 1,
        optimizations: str | None = "performance",
        model_path: str | Path | None = None,
        load_format: str = "auto",
        expert_dispatch: str = "reduce",
    ) -> TTCausalLM | DataParallel:
        """load_format "auto" reads the checkpoint in model_path; "dummy" (vLLM's name) places every weight with its
        real shape, dtype and memory config but no values (ttnn.empty): for capacity and speed, without reading or
        materializing the checkpoint on the host. expert_dispatch: how MoE layers split over the mesh reach their
        experts ("reduce" or "all_to_all": tt_models/layers/moe.py, additional_config tt.expert_dispatch)."""
        if load_format not in ("auto", "dummy"):
            raise UnsupportedModelError(f"load_format {load_format!r}: TT models load 'auto' (the checkpoint) or "
                                        f"'dummy' (placed weights without values)")
        if tt_data_parallel != 1:
            return cls._data_parallel(hf_config, mesh_device, max_batch_size, max_seq_len, n_layers,
                                      tt_data_parallel, optimizations, model_path, load_format, expert_dispatch)
        if max_batch_size > MAX_USERS_PER_DEVICE:
            raise UnsupportedModelError(
                f"max_batch_size {max_batch_size}: one device decodes at most {MAX_USERS_PER_DEVICE} users (its "
                f"head ops place one user per core); serve more users with data parallel (tt_data_parallel, or "
                f"vLLM's --data-parallel-size) over more devices")
        checkpoint_args = ModelArgs.from_hf_config(hf_config)
        if n_layers is not None:
            checkpoint_args = replace(checkpoint_args, n_layers=n_layers)
        # The MLP padded to whole tiles per chip (zero units), then tensor parallel over the chips (refused here,
        # before any weight moves, if it does not divide).
        args = pad_mlp(checkpoint_args, tuple(mesh_device.shape))
        plan = plan_tensor_parallel(args, tuple(mesh_device.shape))
        path = Path(model_path or getattr(hf_config, "_name_or_path", "") or "")
        if load_format == "auto" and not path.is_dir():
            raise FileNotFoundError(f"model directory {str(path)!r} (from hf_config._name_or_path) does not exist")
        overrides = load_model_overrides(path)
        profile_name = overrides.profile_for(optimizations or "performance")
        profile = load_optimizations(profile_name)
        if profile.simulator_only:
            if not is_simulator():
                raise UnsupportedModelError(
                    f"the {profile_name!r} profile runs fp32 activations and KV cache, which no Tenstorrent device "
                    f"supports (it exists for simulator tests against fp32 references); use 'accuracy' on hardware")
            mesh_device.enable_reference_precision()
        # Refused here, with the numbers, before any weight moves: a model that cannot fit must not fail halfway
        # through placing its weights.
        check_weights_fit(args, plan, profile, mesh_device)
        if load_format == "dummy":
            weights: WeightStore = ShapeOnlyWeights(meta_shapes(args), mesh_device, args.norm_unit_offset)
        else:
            meta = hf_to_meta(load_state_dict(path), args.n_heads, args.n_kv_heads, args.head_dim,
                              sandwich_norms=args.sandwich_norms, norm_unit_offset=args.norm_unit_offset,
                              rotary_dim=args.rotary_dim, mla=args.mla)
            # The first n_layers of a deeper checkpoint; and GLM-4.5 / DeepSeek-V3 checkpoints carry their
            # multi-token-prediction layers after the model's own (num_nextn_predict_layers), which HF leaves unread,
            # and so does this model.
            nextn = int(getattr(hf_config, "num_nextn_predict_layers", 0) or 0)
            keep = n_layers if n_layers is not None else checkpoint_args.n_layers if nextn else None
            if keep is not None:
                meta = {k: v for k, v in meta.items() if not k.startswith("layers.") or int(k.split(".")[1]) < keep}
            check_state_dict(meta, checkpoint_args)
            meta = pad_mlp_weights(meta, args)
            weights = WeightStore(meta, mesh_device, weight_cache_dir(path, profile.cache_tag(args.n_layers)),
                                  norm_fp32=args.norm_unit_offset)
        max_chunk = overrides.max_prefill_chunk or DEFAULT_PREFILL_CHUNK
        model = Transformer(args, mesh_device, weights, profile, max_seq_len + prefill_bucket(max_chunk),
                            max_batch_size, expert_dispatch)
        logger.info("built %s: %d layers, %s profile, batch %d, max_seq_len %d%s", cls.__name__, args.n_layers,
                    profile_name, max_batch_size, max_seq_len,
                    f", tensor parallel over {plan.devices} chips ({plan.n_heads} heads, {plan.n_kv_heads} KV heads "
                    f"per chip)" if plan.devices > 1 else "")
        return cls(model, mesh_device, max_batch_size, max_seq_len, max_chunk)

    @classmethod
    def _data_parallel(cls, hf_config: Any, mesh_device: Any, max_batch_size: int, max_seq_len: int,
                       n_layers: int | None, dp: int, optimizations: str | None, model_path: str | Path | None,
                       load_format: str, expert_dispatch: str = "reduce") -> DataParallel:
        """tt_data_parallel=dp: the mesh split into dp submeshes, one replica each, max_batch_size split evenly."""
        devices = mesh_device.get_num_devices()
        if dp < 1 or devices % dp:
            raise UnsupportedModelError(f"tt_data_parallel={dp} does not divide the {tuple(mesh_device.shape)} "
                                        f"mesh's {devices} devices")
        if max_batch_size % dp:
            raise UnsupportedModelError(f"max_batch_size {max_batch_size} does not split evenly over "
                                        f"tt_data_parallel={dp} replicas")
        rows, cols = tuple(mesh_device.shape)
        sub = (1, devices // dp) if rows == 1 else (rows // dp, cols) if rows % dp == 0 else (1, devices // dp)
        submeshes = mesh_device.create_submeshes(ttnn.MeshShape(*sub))
        replicas = [cls.initialize_vllm_model(hf_config, m, max_batch_size // dp, max_seq_len, n_layers, 1,
                                              optimizations, model_path, load_format, expert_dispatch)
                    for m in submeshes]
        logger.info("data parallel: %d replicas of %s on %s submeshes, %d users each", dp, cls.__name__, sub,
                    max_batch_size // dp)
        return DataParallel(replicas)

    @classmethod
    def get_max_tokens_all_users(cls, model_name: str, *args: Any, **kwargs: Any) -> int:
        """KV-cache tokens across all users this model asks for (tt_models/configs/models), before device limits."""
        return load_model_overrides(model_name).token_budget or DEFAULT_TOKEN_BUDGET

    def kv_cache_capacity(self, block_size: int, cache_layers: int | None = None,
                          draft: TTCausalLM | None = None) -> KVCapacity:
        """KV blocks of block_size tokens the device's DRAM holds now (after the weights), leaving room for
        prefill's activations at this model's chunk size. cache_layers: how many layers' K/V tensors a block spans
        (default every layer; vLLM's hybrid KV cache lets one layer of each group share a tensor, so fewer).
        draft: a speculative-decoding draft model whose cache takes each block id too."""
        also = [] if draft is None else [(draft.model.local_args, draft.model.kv_cache_dtype())]
        return kv_capacity(self.mesh_device, self.model.local_args, block_size, self.model.kv_cache_dtype(),
                           self.max_prefill_chunk, cache_layers, also)

    @property
    def kv_cache_heads(self) -> int:
        """KV heads the cache holds per chip (tensor parallel: this chip's share, or the one head it replicates);
        the cache shape vLLM allocates is (blocks, kv_cache_heads, block_size, head_dim)."""
        return self.model.plan.n_kv_heads

    def allocate_kv_cache(self, kv_cache_shape: tuple, dtype: torch.dtype, num_layers: int,
                          layer_groups: Sequence[int] | None = None) -> list:
        """kv_cache[dp][layer] = [K, V] (multi-latent attention: [latent]), each (num_blocks, kv_cache_heads,
        block_size, head_dim) per chip in the profile's KV-cache dtype (vLLM's torch dtype only sizes the pages).

        layer_groups (vLLM's hybrid KV cache): each layer's KV-cache group, whose own block table (page_table[g])
        it reads and writes. Block ids are unique across groups (one pool), so the k-th layer of every group shares
        one K/V tensor pair, as vLLM aliases them on a GPU: a model with 5 sliding-window groups and 1 global group
        of 3 layers each holds 3 tensor pairs of num_blocks blocks, not 18."""
        num_blocks, nkv, block_size, head_dim = kv_cache_shape
        a = self.model.args
        if (nkv, head_dim) != (self.kv_cache_heads, a.head_dim):
            per_chip = f" per chip (of {a.n_kv_heads})" if self.model.plan.devices > 1 else ""
            raise ValueError(f"kv cache shape {kv_cache_shape} does not match the model's "
                             f"{self.kv_cache_heads} kv heads{per_chip} x head_dim {a.head_dim}")
        if num_layers != a.n_layers:
            raise ValueError(f"{num_layers} cache layers requested for a {a.n_layers}-layer model")
        if block_size % 32:
            raise ValueError(f"block_size {block_size} must be a multiple of 32 (TT tiles)")
        if self.max_prefill_chunk % block_size:
            raise ValueError(f"max_prefill_chunk {self.max_prefill_chunk} must be a multiple of the KV block size "
                             f"{block_size}: every prefill chunk after the first starts on a block boundary")
        slots = cache_slots(layer_groups, num_layers)
        self.model.kv_groups = tuple(layer_groups) if layer_groups is not None else (0,) * num_layers
        dtype_tt = self.model.kv_cache_dtype()

        def zeros() -> Any:
            # Zeroed on the device, in place: a host tensor of zeros would cost the cache's size in host memory
            # (several GB for a full N150) and its transfer. Unwritten slots must not hold NaN: attention multiplies
            # masked positions' V by 0.
            t = ttnn.empty(kv_cache_shape, dtype_tt, ttnn.TILE_LAYOUT, self.mesh_device, ttnn.DRAM_MEMORY_CONFIG)
            return ttnn.fill(t, 0.0, output_tensor=t)

        # K and V per layer (multi-latent attention: its one latent cache).
        tensors = [[zeros() for _ in range(a.kv_caches_per_layer)] for _ in range(max(slots) + 1)]
        return [[tensors[s] for s in slots]]

    def prefill_forward(self, tokens: torch.Tensor, page_table: torch.Tensor, kv_cache: list, prompt_lens: Any,
                        sampling_params: TTSamplingParams | None = None, empty_slots: Any = None,
                        start_pos: Any = None, return_prompt_logits: Sequence[bool] | None = None,
                        **_: Any) -> Any:
        """Last-token logits [B, 1, vocab] (or, with all-greedy sampling_params, their argmax [B], taken on the host
        from the read-back logits: prefill does not sample on the device).
        return_prompt_logits (a flag per prompt): returns (that, per prompt None or the float32 logits
        [prompt_len - start_pos, vocab] of every position prefilled), for vLLM's prompt logprobs."""
        mode = sampling_mode(sampling_params)
        if mode in ("sample", "sample_full"):
            raise ValueError("prefill samples greedily on device; other sampling parameters go to the host "
                             "(sampling_params=None) for the first token")
        every = None
        logits = self.prefill_forward_text(tokens, page_table, kv_cache, prompt_lens, start_pos, empty_slots,
                                           prompt_logits=return_prompt_logits)
        if return_prompt_logits is not None:
            logits, every = logits
        out = logits[:, 0].argmax(-1) if mode == "argmax" else logits
        return (out, every) if return_prompt_logits is not None else out

    def decode_forward(self, tokens: torch.Tensor, start_pos: torch.Tensor, page_table: torch.Tensor,
                       kv_cache: list, enable_trace: bool = True, read_from_device: bool = True,
                       sampling_params: TTSamplingParams | None = None, write_group: torch.Tensor | None = None,
                       writes: int = 1, **_: Any) -> Any:
        """sampling_params None: logits back; all greedy: token ids by argmax on device; otherwise token ids drawn
        on device with each user's temperature, top-k (<= 32) and top-p (ttnn.sampling), after reseeding the users
        whose `seed` entry is set. With penalties or logprobs requested the draw is from the penalised logits and
        the result is (token ids, raw logprobs: {"logprob", "rank", "top_logprobs", "top_ids"}) (Generator's
        "sample_full"). write_group / writes: speculative decoding's verify step (Generator.decode_forward_text)."""
        mode = sampling_mode(sampling_params)
        sample = seeds = history = None
        n = tokens.shape[0]
        if mode in ("sample", "sample_full"):
            temperature, top_k, top_p, seeds = per_user_lists(sampling_params, n)
            sample = device_params(temperature, top_k, top_p)
        if mode == "sample_full":
            sample |= penalty_params(*penalty_lists(sampling_params, n))
            history = sampling_params.token_history or [None] * n
        return self.decode_forward_text(tokens, start_pos, page_table, kv_cache, enable_trace, read_from_device,
                                        mode, sample, seeds, history,
                                        sampling_params.history_key if history is not None else None,
                                        write_group, writes)

    def warmup_model_prefill(self, kv_cache: list, enable_trace: bool, sampling_params: Any = None) -> None:
        """Runs every prefill bucket once. The page table points at block 0, vLLM's reserved null block."""
        block_size = kv_cache[0][0][0].shape[2]
        n = 128
        while True:
            length = min(n, self.max_seq_len, self.max_prefill_chunk)
            tokens = torch.zeros(1, length, dtype=torch.int32)
            table = torch.zeros(self.page_table_shape(1, -(-length // block_size)), dtype=torch.int32)
            self.prefill_forward(tokens, table, kv_cache, [length])
            if length >= min(self.max_seq_len, self.max_prefill_chunk):
                break
            n *= 2
        logger.info("prefill warmup done (buckets up to %d)", length)

    def warmup_model_decode(self, kv_cache: list, enable_trace: bool, max_batch_size: int, num_blocks: int,
                            sampling_params: Any = None, **_: Any) -> None:
        """Compiles and captures decode at the exact shapes vLLM will use: all slots empty (-1), so nothing is
        written to the cache."""
        tokens = torch.zeros(max_batch_size, 1, dtype=torch.int32)
        pos = torch.full((max_batch_size,), -1, dtype=torch.int32)
        table = torch.zeros(self.page_table_shape(max_batch_size, num_blocks), dtype=torch.int32)
        for params in sampling_params or [None]:
            self.decode_forward(tokens, pos, table, kv_cache, enable_trace=enable_trace, sampling_params=params)


class TTLlamaForCausalLM(TTCausalLM):
    architecture = "LlamaForCausalLM"


class TTMistralForCausalLM(TTCausalLM):
    architecture = "MistralForCausalLM"


class TTQwen2ForCausalLM(TTCausalLM):
    architecture = "Qwen2ForCausalLM"


class TTQwen3ForCausalLM(TTCausalLM):
    architecture = "Qwen3ForCausalLM"


class TTGemma3ForCausalLM(TTCausalLM):
    architecture = "Gemma3ForCausalLM"


class TTQwen3MoeForCausalLM(TTCausalLM):
    architecture = "Qwen3MoeForCausalLM"


class TTQwen2MoeForCausalLM(TTCausalLM):
    architecture = "Qwen2MoeForCausalLM"


class TTMixtralForCausalLM(TTCausalLM):
    architecture = "MixtralForCausalLM"


class TTGptOssForCausalLM(TTCausalLM):
    architecture = "GptOssForCausalLM"


class TTGlm4MoeForCausalLM(TTCausalLM):
    architecture = "Glm4MoeForCausalLM"


class TTDeepseekV3ForCausalLM(TTCausalLM):
    architecture = "DeepseekV3ForCausalLM"


TT_CLASSES = {c.architecture: c for c in (TTLlamaForCausalLM, TTMistralForCausalLM, TTQwen2ForCausalLM,
                                           TTQwen3ForCausalLM, TTGemma3ForCausalLM, TTQwen3MoeForCausalLM,
                                           TTQwen2MoeForCausalLM, TTMixtralForCausalLM, TTGptOssForCausalLM,
                                           TTGlm4MoeForCausalLM, TTDeepseekV3ForCausalLM)}
