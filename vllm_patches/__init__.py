"""vLLM plugin for Tenstorrent devices (stock vLLM, no fork): the `tt` platform and the TT model registry.

Both entry points are called in every vLLM process and must stay cheap: nothing heavy is imported here.
"""

from __future__ import annotations

import importlib.util
import logging
import os

# The package's loggers; vLLM only configures the "vllm" logger tree, so these are routed to its handler.
_OUR_LOGGERS = ("vllm_patches", "generator_vllm", "tt_models")
logger = logging.getLogger(__name__)


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


class _ToVllmHandlers(logging.Handler):
    """Hands each record to whatever handlers the "vllm" logger has at that moment: vLLM (re)configures them with
    dictConfig when an engine, engine core or worker process starts, after plugins have loaded."""

    def emit(self, record: logging.LogRecord) -> None:
        handlers = logging.getLogger("vllm").handlers
        if not handlers and logging.lastResort is not None:
            # Before vLLM configures logging (plugin load time), warnings still reach stderr, as Python's own would.
            handlers = [logging.lastResort]
        for handler in handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


_TO_VLLM = _ToVllmHandlers()


def route_logs_to_vllm() -> None:
    """Send the plugin's and the models' log lines through vLLM's handlers, at vLLM's level.

    vLLM configures only its own "vllm" logger tree; other loggers fall through to Python's last-resort handler,
    which drops INFO, so without this an operator never sees which backend runs or how many KV blocks the device
    holds. Idempotent; does nothing when VLLM_CONFIGURE_LOGGING=0 (the operator configures logging).
    """
    import vllm.envs as envs

    if not envs.VLLM_CONFIGURE_LOGGING:
        return
    for name in _OUR_LOGGERS:
        ours = logging.getLogger(name)
        if _TO_VLLM not in ours.handlers:
            ours.addHandler(_TO_VLLM)
        ours.setLevel(envs.VLLM_LOGGING_LEVEL)


def register_platform() -> str | None:
    """vllm.platform_plugins entry point: the platform class when TT is usable, else None (and a hint saying how to
    turn it on, since vLLM then fails with "Failed to infer device type" and names no plugin)."""
    if tt_available():
        route_logs_to_vllm()
        return "vllm_patches.platform.TTPlatform"
    backend = os.environ.get("TT_BACKEND", "").strip().lower()
    if backend not in ("", "sim", "ttnn"):
        hint = f"TT_BACKEND={backend!r} is not a backend (use 'sim' or 'ttnn')"
    elif importlib.util.find_spec("ttnn") is None:
        hint = "no ttnn installed; set TT_BACKEND=sim to serve on the TT-NN simulator"
    else:
        hint = "ttnn is installed but sees no Tenstorrent device; set TT_BACKEND=sim to use the simulator"
    route_logs_to_vllm()
    logger.warning("TT platform plugin inactive: %s.", hint)
    return None


def register_models() -> None:
    """vllm.general_plugins entry point: lazily registers the TT architectures with vLLM's ModelRegistry."""
    from vllm_patches.registry import register_tt_models

    register_tt_models()
