"""additional_config["tt"]: the TT-specific serving options, validated with clear errors."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

TRACE_MODES = ("decode_only", "none")
SAMPLE_ON_DEVICE_MODES = (None, "decode_only")
DISPATCH_CORE_AXES = (None, "row", "col")
EXPERT_DISPATCH = ("reduce", "all_to_all")  # tt_models/layers/moe.py
# Tenstorrent's plugin also takes "all" for both; here prefill is neither traced nor sampled on the device, so "all"
# is refused with the reason rather than accepted and quietly treated as "decode_only".
_NOT_ALL = {
    "trace_mode": "prefill is not traced (prompts run untraced, padded to power-of-two buckets); decode is",
    "sample_on_device_mode": "a prefill step's first token is sampled by vLLM's sampler on the host from the "
                             "read-back logits; decode steps sample on the device",
}


@dataclass(frozen=True)
class TTConfig:
    trace_mode: str = "decode_only"
    sample_on_device_mode: str | None = None
    optimizations: str = "performance"
    enable_model_warmup: bool = True
    trace_region_size: int = 50_000_000
    l1_small_size: int = 0
    worker_l1_size: int = 0
    dispatch_core_axis: str | None = None
    fabric_config: str | None = None
    # Replicas of the model over the mesh (MESH_DEVICE), each on its own submesh with its own KV cache and an equal
    # share of max_num_seqs (at most 32 users per replica device).
    data_parallel: int = 1
    # With vLLM's async scheduling, decode steps sampled on the device are launched before the previous step's
    # tokens are collected (models declaring supports_async_decode); false keeps every step synchronous.
    async_decode: bool = True
    # A sampled request that sets no top_k (vLLM's default: the whole vocabulary) is host-only, since the device
    # draws from each user's 32 best logits. True draws it on the device from those 32, as Tenstorrent's plugin
    # does: the distribution loses its tail beyond the 32 best tokens, and the batch stays on the device.
    unset_top_k_on_device: bool = False
    # Every prefill in KV-block-sized chunks from position 0, so a prompt computes the same arithmetic whether its
    # prefix was cached or not (a cached continuation starts on a block boundary): greedy tokens and logprobs then do
    # not depend on the prefix cache's state (vLLM's batch-invariance spirit). Costs prefill speed
    # (docs/serving.md, benchmarks/bench_prefill_invariance.py).
    cache_invariant_prefill: bool = False
    # How the MoE layers of a model split over the mesh (expert parallel) reach their experts: "reduce" runs every
    # token through each chip's experts and reduce-scatters the partial sums; "all_to_all" sends each chip's share of
    # the tokens to its experts' chips with all_to_all_dispatch / all_to_all_combine (1 x N meshes; bf16 exchanges,
    # docs/moe.md). Dense models ignore it.
    expert_dispatch: str = "reduce"

    def dispatch_core_config(self, ttnn: Any) -> Any:
        """ttnn.open_mesh_device's dispatch_core_config for dispatch_core_axis ("row" / "col": which edge of the
        worker grid runs the command dispatcher), or None for the device's default."""
        if self.dispatch_core_axis is None:
            return None
        return ttnn.DispatchCoreConfig(axis=getattr(ttnn.DispatchCoreAxis, self.dispatch_core_axis.upper()))

    @property
    def trace_decode(self) -> bool:
        return self.trace_mode == "decode_only"

    def sample_on_device(self, prefill: bool) -> bool:
        return self.sample_on_device_mode == "decode_only" and not prefill

    @classmethod
    def from_additional_config(cls, additional_config: Any) -> TTConfig:
        raw = dict((additional_config or {}).get("tt", {}) or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f'additional_config["tt"]: unknown key(s) {unknown}; allowed: {sorted(known)}')
        for key, why in _NOT_ALL.items():
            if raw.get(key) == "all":
                raise ValueError(f'additional_config["tt"]["{key}"]="all" is not supported: {why}; use "decode_only"')
        cfg = cls(**raw)
        if cfg.trace_mode not in TRACE_MODES:
            raise ValueError(f'additional_config["tt"]["trace_mode"]={cfg.trace_mode!r}: expected one of {TRACE_MODES}')
        if cfg.sample_on_device_mode not in SAMPLE_ON_DEVICE_MODES:
            raise ValueError(f'additional_config["tt"]["sample_on_device_mode"]={cfg.sample_on_device_mode!r}: '
                             f"expected one of {SAMPLE_ON_DEVICE_MODES}")
        if cfg.dispatch_core_axis not in DISPATCH_CORE_AXES:
            raise ValueError(f'additional_config["tt"]["dispatch_core_axis"]={cfg.dispatch_core_axis!r}: expected one '
                             f"of {DISPATCH_CORE_AXES}")
        if cfg.expert_dispatch not in EXPERT_DISPATCH:
            raise ValueError(f'additional_config["tt"]["expert_dispatch"]={cfg.expert_dispatch!r}: expected one of '
                             f"{EXPERT_DISPATCH}")
        if not isinstance(cfg.data_parallel, int) or isinstance(cfg.data_parallel, bool) or cfg.data_parallel < 1:
            raise ValueError(f'additional_config["tt"]["data_parallel"]={cfg.data_parallel!r}: expected an integer '
                             f">= 1")
        for flag in ("enable_model_warmup", "async_decode", "unset_top_k_on_device", "cache_invariant_prefill"):
            if not isinstance(getattr(cfg, flag), bool):
                raise ValueError(f'additional_config["tt"]["{flag}"] must be true or false')
        from tt_models.config import load_optimizations

        load_optimizations(cfg.optimizations)  # raises ConfigError naming the known profiles
        return cfg
