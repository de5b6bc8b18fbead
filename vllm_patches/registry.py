"""TT architectures in vLLM's ModelRegistry, and the HF architecture -> TT generation class mapping."""

from __future__ import annotations

import importlib

from tt_models.model_args import REFUSED_ARCHITECTURES, SUPPORTED_ARCHITECTURES

# vLLM architecture name -> (vLLM-facing adapter, TT generation class), both "module:Class" (imported lazily).
TT_ARCHITECTURES = {
    f"TT{arch}": (f"vllm_patches.models:TT{arch}", f"generator_vllm:TT{arch}") for arch in SUPPORTED_ARCHITECTURES
}


def register_tt_models() -> None:
    from vllm import ModelRegistry

    supported = ModelRegistry.get_supported_archs()
    for name, (adapter, _) in TT_ARCHITECTURES.items():
        if name not in supported:
            ModelRegistry.register_model(name, adapter)


def tt_architecture(architectures: list[str] | None) -> str:
    """The TT architecture serving a model whose config lists `architectures` (HF or already TT-prefixed)."""
    for arch in architectures or []:
        name = arch if arch.startswith("TT") else f"TT{arch}"
        if name in TT_ARCHITECTURES:
            return name
    available = ", ".join(sorted(TT_ARCHITECTURES))
    for arch in architectures or []:
        if arch.removeprefix("TT") in REFUSED_ARCHITECTURES:
            raise ValueError(f"{arch}: {REFUSED_ARCHITECTURES[arch.removeprefix('TT')]}; available: {available}")
    raise ValueError(f"model architectures {architectures} have no TT implementation; available: {available}")


def tt_generation_class(architectures: list[str] | None) -> type:
    module, cls = TT_ARCHITECTURES[tt_architecture(architectures)][1].split(":")
    return getattr(importlib.import_module(module), cls)
