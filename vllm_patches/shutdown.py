"""Time for the engine core to close the TT device when vLLM shuts down.

On SIGINT / SIGTERM the engine core process leaves its busy loop and tears down (EngineCore.shutdown -> executor ->
TTWorker.shutdown, which closes the mesh device), but with vLLM's default shutdown_timeout of 0 the front end's
process manager sends SIGTERM and force-kills the engine core in the same instant, so the teardown never runs and
the device is left open (on hardware: unusable until reset). vLLM gives ROCm a grace period for the same reason
(vllm.v1.engine.utils.get_engine_process_shutdown_timeout); the TT platform gets one too. It is an upper bound: the
process manager stops waiting as soon as the engine core has exited.

The same SIGTERM arriving while the device closes would kill the process halfway: the close ignores stop signals.
And when the process that started the engine core dies without stopping it (an offline LLM script killed by
SIGTERM, whose default action skips all cleanup, or a front end killed outright), vLLM 0.32 leaves the engine core
running, device open, indefinitely: the TT worker watches its parent and shuts the engine core down then.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)

# Closing a device releases its traces and programs first; seconds on hardware, well below this.
TT_ENGINE_SHUTDOWN_GRACE_S = 15.0
_MODULES = ("vllm.v1.engine.utils", "vllm.entrypoints.launchers.dp_supervisor")


def install_shutdown_grace() -> None:
    """Wrap vLLM's engine-process shutdown timeout so that an immediate kill (timeout 0 with nothing to drain) waits
    up to TT_ENGINE_SHUTDOWN_GRACE_S for the engine core. Idempotent; patches the function where vLLM's process
    managers look it up (modules importing it later get the wrapped one)."""
    import vllm.v1.engine.utils as engine_utils

    original: Any = engine_utils.get_engine_process_shutdown_timeout
    if getattr(original, "_tt_grace", False):
        return

    def shutdown_timeout(request_timeout: float | None, process_timeout: float | None) -> float | None:
        # vLLM's ROCm condition: nothing to drain and no time given. Other budgets stay as vLLM computes them (a
        # positive request timeout's deadline bounds draining; None gets vLLM's best-effort 5 s).
        if request_timeout == 0 and process_timeout == 0:
            return TT_ENGINE_SHUTDOWN_GRACE_S
        return original(request_timeout, process_timeout)

    shutdown_timeout._tt_grace = True  # type: ignore[attr-defined]
    for name in _MODULES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "get_engine_process_shutdown_timeout", None) is original:
            module.get_engine_process_shutdown_timeout = shutdown_timeout


def stop_with_parent() -> threading.Thread | None:
    """In a process started by multiprocessing (vLLM's engine core): when the parent exits, send this process the
    SIGTERM its process manager would have sent, so that vLLM's own handler runs the engine core's teardown (which
    closes the device). Nothing to watch in-process (no multiprocessing parent): there the user's process owns the
    device and its exit runs the teardown."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return None

    def watch() -> None:
        parent.join()  # returns once the parent's sentinel closes, i.e. the parent has exited
        logger.warning("the process that started this engine core (pid %s) exited; shutting down", parent.pid)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="tt-parent-watch", daemon=True)
    thread.start()
    return thread


@contextmanager
def ignoring_stop_signals() -> Iterator[None]:
    """SIGINT and SIGTERM are ignored while the device closes. The engine core's teardown runs with the default
    dispositions back (vLLM resets them first), and on Ctrl-C the front end's SIGTERM follows the terminal's SIGINT
    at once: by default it would kill the process halfway through closing the device. The previous dispositions
    come back afterwards (an in-process engine runs in the user's own process)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # dispositions can only be changed from the main thread
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
