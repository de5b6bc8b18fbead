"""Hands model code its `ttnn`: the real one when it imports and a TT device is present, else the simulator.

TT_BACKEND=sim|ttnn forces the choice (ttnn fails loudly if it cannot be used). The choice is logged once.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

logger = logging.getLogger(__name__)
_chosen: ModuleType | None = None


def _real_ttnn_with_device() -> tuple[ModuleType | None, str]:
    try:
        real = importlib.import_module("ttnn")
    except Exception as e:  # any import failure (missing wheel, driver, toolchain) means no real backend
        return None, f"real ttnn not importable ({type(e).__name__}: {e})"
    try:
        n = real.get_num_devices()
    except Exception as e:
        return None, f"real ttnn imported but could not count devices ({e})"
    if n < 1:
        return None, "real ttnn imported but no TT device is present"
    return real, f"real ttnn with {n} device(s)"


def get_ttnn() -> ModuleType:
    """The ttnn module models must use."""
    global _chosen
    if _chosen is not None:
        return _chosen
    want = os.environ.get("TT_BACKEND", "").strip().lower()
    if want not in ("", "sim", "ttnn"):
        raise ValueError(f"TT_BACKEND={want!r}: expected 'sim' or 'ttnn'")
    if want == "sim":
        import ttnn_sim as sim

        _chosen, why = sim, "TT_BACKEND=sim"
    else:
        real, why = _real_ttnn_with_device()
        if real is not None:
            _chosen = real
        elif want == "ttnn":
            raise RuntimeError(f"TT_BACKEND=ttnn but {why}")
        else:
            import ttnn_sim as sim

            _chosen, why = sim, f"{why}; using the simulator"
    logger.info("TT backend: %s (%s)", "simulator" if is_simulator(_chosen) else "ttnn", why)
    return _chosen


def is_simulator(module: ModuleType | None = None) -> bool:
    return bool(getattr(module or get_ttnn(), "IS_SIMULATOR", False))


def reset_backend_for_tests() -> None:
    global _chosen
    _chosen = None


def use_ttnn(module: ModuleType, why: str) -> None:
    """Hand model code this ttnn from now on (tools that wrap the real library, e.g. tt_checks' recorder)."""
    global _chosen
    _chosen = module
    logger.info("TT backend: %s (%s)", "simulator" if is_simulator(module) else "ttnn", why)


class _LazyTTNN:
    """`from tt_models.backend import ttnn`: resolves the backend on first use, so importing model code never
    decides it (tests and the vLLM platform set TT_BACKEND before the first op)."""

    def __getattr__(self, name: str):
        return getattr(get_ttnn(), name)


ttnn = _LazyTTNN()
