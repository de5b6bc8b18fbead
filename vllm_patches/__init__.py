"""vLLM plugin for Tenstorrent devices (stock vLLM, no fork): the `tt` platform and the TT model registry.

Both entry points are called in every vLLM process and must stay cheap: nothing heavy is imported here.
"""

from __future__ import annotations

import importlib.util
import os


def tt_available() -> bool:
    """Active with TT_BACKEND=sim (the simulator), or when real ttnn imports and sees a device."""
    backend = os.environ.get("TT_BACKEND", "").strip().lower()
    if backend == "sim":
        return True
    if backend not in ("", "ttnn") or importlib.util.find_spec("ttnn") is None:
        return False
    try:
        import ttnn

        return ttnn.get_num_devices() > 0
    except Exception:
        return False


def register_platform() -> str | None:
    """vllm.platform_plugins entry point: the platform class when TT is usable, else None."""
    return "vllm_patches.platform.TTPlatform" if tt_available() else None


def register_models() -> None:
    """vllm.general_plugins entry point: lazily registers the TT architectures with vLLM's ModelRegistry."""
    from vllm_patches.registry import register_tt_models

    register_tt_models()
