"""Time for the engine core to close the TT device when vLLM shuts down.

On SIGINT / SIGTERM the engine core process leaves its busy loop and tears down (EngineCore.shutdown -> executor ->
TTWorker.shutdown, which closes the mesh device), but with vLLM's default shutdown_timeout of 0 the front end's
process manager sends SIGTERM and force-kills the engine core in the same instant, so the teardown never runs and
the device is left open (on hardware: unusable until reset). vLLM gives ROCm a grace period for the same reason
(vllm.v1.engine.utils.get_engine_process_shutdown_timeout); the TT platform gets one too. It is an upper bound: the
process manager stops waiting as soon as the engine core has exited.

The same SIGTERM arriving while the device closes would kill the process halfway: stop signals wait until the device
is closed. The grace also covers the process manager's finalizer (an offline LLM script interrupted by Ctrl-C stops
its engine core from there, at interpreter exit), whose own wait is vLLM's best-effort 5 s.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)

# Closing a device releases its traces and programs first; seconds on hardware, well below this. Generous, because a
# loaded host can take many seconds just to reach the teardown (15 s was once seen to run out on a 2-core machine
# running three other vLLM engines), and it costs nothing when the engine core exits sooner.
TT_ENGINE_SHUTDOWN_GRACE_S = 30.0
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_MODULES = ("vllm.v1.engine.utils", "vllm.entrypoints.launchers.dp_supervisor")


def install_shutdown_grace() -> None:
    """Wrap vLLM's engine-process shutdown timeout so that an immediate kill (timeout 0 with nothing to drain) waits
    up to TT_ENGINE_SHUTDOWN_GRACE_S for the engine core, and so does a wait with no budget (vLLM's 5 s).
    Idempotent; patches the functions where vLLM's process managers look them up (modules importing them later get
    the wrapped ones)."""
    import vllm.v1.engine.utils as engine_utils

    original: Any = engine_utils.get_engine_process_shutdown_timeout
    if getattr(original, "_tt_grace", False):
        return

    def shutdown_timeout(request_timeout: float | None, process_timeout: float | None) -> float | None:
        # vLLM's ROCm condition: nothing to drain and no time given. Other budgets stay as vLLM computes them (a
        # positive request timeout's deadline bounds draining; None gets the grace, below).
        if request_timeout == 0 and process_timeout == 0:
            return TT_ENGINE_SHUTDOWN_GRACE_S
        return original(request_timeout, process_timeout)

    shutdown_timeout._tt_grace = True  # type: ignore[attr-defined]
    for name in _MODULES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "get_engine_process_shutdown_timeout", None) is original:
            module.get_engine_process_shutdown_timeout = shutdown_timeout

    # The process manager's finalizer calls vLLM's shutdown(processes) with no timeout (5 s); it binds the function
    # when the manager is built, after the platform has run this.
    stop: Any = engine_utils.shutdown

    def shutdown_processes(procs: list, timeout: float | None = None) -> None:
        stop(procs, timeout=TT_ENGINE_SHUTDOWN_GRACE_S if timeout is None else timeout)

    engine_utils.shutdown = shutdown_processes


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


# Stop signals received while the device closes, re-delivered once it is closed (see deferring_stop_signals).
_deferred: list[int] = []


def _defer(signum: int, frame: Any) -> None:
    if not _deferred:
        logger.info("%s received while the TT device closes: acting on it once the device is closed",
                    signal.Signals(signum).name)
    _deferred.append(signum)


_handling_a_stop_signal = False


def _one_stop_signal_at_a_time(handler: Callable[[int, Any], Any]) -> Callable[[int, Any], Any]:
    """vLLM's engine-core stop handler, not re-entered: on Ctrl-C the front end's SIGTERM follows the terminal's SIGINT
    at once, and CPython runs a Python handler for a signal that arrives while another handler runs inside it. vLLM's
    handler wakes its busy loop through a threading.Event, whose set() holds a non-reentrant lock: a second handler
    landing there waits on the lock its own thread holds, and the engine core hangs until its process manager
    force-kills it with the device open (seen in CI on a loaded machine). The second signal asks for what the first
    already did (vLLM's wake-up is one-shot), so it is dropped."""
    if getattr(handler, "_tt_one_at_a_time", False):
        return handler

    def guarded(signum: int, frame: Any) -> Any:
        global _handling_a_stop_signal
        if _handling_a_stop_signal:
            return None
        _handling_a_stop_signal = True
        try:
            return handler(signum, frame)
        finally:
            _handling_a_stop_signal = False

    guarded._tt_one_at_a_time = True  # type: ignore[attr-defined]
    return guarded


class _TeardownSignals:
    """vllm.v1.engine.core's view of the signal module in an engine-core process: the same, except that the reset of
    SIGINT / SIGTERM to their default action, which vLLM makes as its teardown starts, defers them instead until the
    TT worker has closed the device (deferring_stop_signals then puts the default action back)."""

    _tt_teardown = True

    def __getattr__(self, name: str) -> Any:
        return getattr(signal, name)

    @staticmethod
    def signal(signum: int, handler: Any) -> Any:
        if signum in _STOP_SIGNALS:
            handler = _defer if handler is signal.SIG_DFL else _guard(handler)
        return signal.signal(signum, handler)


def _guard(handler: Any) -> Any:
    return _one_stop_signal_at_a_time(handler) if callable(handler) else handler


def defer_stop_signals_during_teardown() -> bool:
    """In vLLM's engine-core process, defer SIGINT and SIGTERM from the start of the teardown until the device is
    closed.

    vLLM resets both to their default action when the engine core leaves its busy loop, before the teardown reaches
    TTWorker.shutdown; on Ctrl-C the front end's SIGTERM follows the terminal's SIGINT at once, and arriving in
    between it killed the process with the device still open (seen in CI: no "closed TT mesh" line). Deferred, not
    ignored: once the device is closed the signal takes its default action, as vLLM meant, so the process does not
    linger in the rest of the teardown while its process manager waits (ignoring it once let a loaded CI machine run
    past the manager's wait after the close: a force kill). SIGKILL, the manager's last resort, still works. Only in
    a process vLLM started as an engine core: an in-process engine runs in the user's process, whose signals stay
    its own."""
    if not multiprocessing.current_process().name.startswith("EngineCore"):
        return False
    import vllm.v1.engine.core as core

    if not getattr(core.signal, "_tt_teardown", False):
        core.signal = _TeardownSignals()
    if threading.current_thread() is threading.main_thread():
        # vLLM installed its stop handlers before building the engine (and with it this worker).
        for sig in _STOP_SIGNALS:
            signal.signal(sig, _guard(signal.getsignal(sig)))
    return True


@contextmanager
def deferring_stop_signals() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the device closes: on Ctrl-C the front end's SIGTERM follows the terminal's SIGINT
    at once, and by default it would kill the process halfway through closing the device. Afterwards the previous
    dispositions come back (an in-process engine runs in the user's own process), except that the engine-core
    teardown's deferral gives way to the default action vLLM had set, and a signal that arrived meanwhile is then
    delivered to them."""
    if threading.current_thread() is not threading.main_thread():
        yield  # dispositions can only be changed from the main thread
        return
    previous = {sig: signal.signal(sig, _defer) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is _defer else handler)
        if _deferred:  # the first one decides, as it would have had it not waited
            first = _deferred[0]
            _deferred.clear()
            signal.raise_signal(first)
