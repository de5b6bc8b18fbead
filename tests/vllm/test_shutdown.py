"""The TT device is closed on every way a vLLM process is stopped: `vllm serve` and an offline LLM script, by
Ctrl-C (SIGINT to the whole process group, as a terminal sends it) and by SIGTERM to the main process only (as
`kill`, systemd or docker send it). The evidence is the TT worker's own log line, written after
ttnn.close_mesh_device returned; every process of the group must be gone within a bounded time.

Without the plugin's shutdown grace, vLLM's process manager force-kills the engine core in the instant it asks it to
stop; without its parent watch, an offline script killed by SIGTERM leaves its engine core running with the device
open."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SPAWN_AS_USERS_DO
from tests.models.tiny import make_tiny_model
from tests.vllm.test_server import free_port
from vllm_patches.shutdown import TT_ENGINE_SHUTDOWN_GRACE_S

ROOT = Path(__file__).resolve().parents[2]
CLOSED = "closed TT mesh device(s)"
EXIT_WITHIN_S = 60
# Before vLLM's process manager force-kills the engine core (at the end of the plugin's grace).
STACKS_AFTER_S = TT_ENGINE_SHUTDOWN_GRACE_S - 10

OFFLINE = """
import faulthandler, signal, sys
from vllm import LLM, SamplingParams

if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks a script that does not exit for its stacks
    llm = LLM(model=sys.argv[1], skip_tokenizer_init=True, max_num_seqs=2, max_model_len=128, block_size=32,
              additional_config={"tt": {"optimizations": "reference"}})
    out = llm.generate([{"prompt_token_ids": [1, 2, 3]}], SamplingParams(max_tokens=2, detokenize=False))
    print("READY", list(out[0].outputs[0].token_ids), flush=True)
    import time
    time.sleep(600)
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(make_tiny_model("llama_gqa", tmp_path_factory.mktemp("shutdown_models")))


def _alive(pgid: int) -> list[int]:
    """Processes still in the process group (the front end, the engine core, multiprocessing's helpers)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,pgid=,stat="], capture_output=True, text=True).stdout.split("\n")
    rows = [line.split() for line in out if line.strip()]
    return [int(r[0]) for r in rows if int(r[1]) == pgid and not r[2].startswith("Z")]


def _ask_engine_cores_for_stacks(pgid: int) -> bool:
    """SIGUSR1 to the group's engine cores (the TT worker registers a stack dump for it): a teardown that has not
    finished before vLLM's grace runs out then says where it waits."""
    asked = False
    for pid in _alive(pgid):
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith("VLLM::EngineCor"):
                os.kill(pid, signal.SIGUSR1)
                asked = True
        except (FileNotFoundError, ProcessLookupError):  # exited meanwhile
            pass
    return asked


def _server_pid(log: Path) -> int:
    """The API server's pid, as vLLM prefixes its log lines (it leads its own process group here)."""
    return int(re.search(r"\(APIServer pid=(\d+)\)", log.read_text()).group(1))


def _stacks(text: str) -> str:
    """The engine cores' stack dumps in a log, if any were asked for."""
    start = text.find("Thread 0x")
    return "" if start < 0 else "engine core stacks:\n" + text[start:start + 6000] + "\n...\n"


def _as_from_a_terminal() -> None:
    """The stop signals' default actions, as a process started from a shell has. A process inherits ignored signals
    and Python then leaves SIGINT ignored: in the full suite the offline script once slept on through Ctrl-C (its
    stacks: still in time.sleep) while its engine core, which installs its own handlers, stopped."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _stop(cmd: list[str], ready, log: Path, sig: int, whole_group: bool, dumps_stacks: bool = False) -> str:
    """Start cmd, wait until ready(), stop it with sig, and hold every process of its group to exiting in time.
    dumps_stacks: cmd itself writes its stacks on SIGUSR1 (asked, as the engine cores are, if it lingers)."""
    env = dict(os.environ, TT_BACKEND="sim", PYTHONPATH=str(ROOT), **SPAWN_AS_USERS_DO)
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT,
                                preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.time() + 300
        while not ready():
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.time() < deadline, "did not start"
            time.sleep(1)
        time.sleep(1)
        assert CLOSED not in log.read_text()
        if whole_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        start, signalled_at = time.time(), len(log.read_text())
        asked = False
        while _alive(proc.pid) and time.time() < start + EXIT_WITHIN_S:
            if not asked and time.time() > start + STACKS_AFTER_S:
                asked = _ask_engine_cores_for_stacks(proc.pid)
                if dumps_stacks and proc.poll() is None:
                    proc.send_signal(signal.SIGUSR1)
                    asked = True
            time.sleep(0.5)
        left = _alive(proc.pid)
        text = log.read_text()
        why = _stacks(text[signalled_at:]) + text[-3000:]
        assert not left, f"still running {EXIT_WITHIN_S} s after the signal: {left}\n{why}"
        # The engine core exited by itself: not force-killed by vLLM's process manager (which would race the close).
        assert "force killing" not in text, why
        return text
    finally:
        if _alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


STOPS = [pytest.param(signal.SIGINT, True, id="ctrl-c"), pytest.param(signal.SIGTERM, False, id="sigterm")]


@pytest.mark.parametrize("sig,whole_group", STOPS)
def test_vllm_serve_closes_the_device(tiny, tmp_path, sig, whole_group):
    import openai

    port = free_port()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=60, max_retries=0)

    def ready() -> bool:
        try:
            r = client.completions.create(model="tiny", prompt=[1, 2, 3], max_tokens=2)
            return len(r.choices[0].text) >= 0
        except openai.APIConnectionError:
            return False

    # `vllm serve DIR` as users type it, with no TT flag (the tiny model has no tokenizer: token-id prompts).
    vllm = shutil.which("vllm", path=str(Path(sys.executable).parent))
    cmd = [vllm, "serve", tiny, "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny",
           "--skip-tokenizer-init"]
    log = tmp_path / "serve.log"

    def ready_and_answers_for_its_stacks() -> bool:
        if not ready():
            return False
        # A live engine core asked for its stacks writes them and goes on serving.
        assert _ask_engine_cores_for_stacks(_server_pid(log))
        deadline = time.time() + 30
        # faulthandler writes the other threads first and the engine's main thread (the busy loop) last, and the
        # dump can outgrow _stacks' excerpt: search all of it, for as long as it may take to be written.
        while "in run_busy_loop" not in (text := log.read_text())[max(text.find("Thread 0x"), 0):]:
            assert time.time() < deadline, ("no stacks written on SIGUSR1" if "Thread 0x" not in text
                                            else "the engine core's stacks lack its busy loop: " + text[-3000:])
            time.sleep(0.5)
        return ready()

    text = _stop(cmd, ready_and_answers_for_its_stacks, log, sig, whole_group)
    assert text.count(CLOSED) == 1, text[-3000:]
    assert "max_num_seqs not set: 32" in text  # the TT default, not vLLM's, which the device would refuse


@pytest.mark.parametrize("sig,whole_group", STOPS)
def test_offline_llm_closes_the_device(tiny, tmp_path, sig, whole_group):
    log = tmp_path / "offline.log"
    cmd = [sys.executable, "-c", OFFLINE, tiny]
    text = _stop(cmd, lambda: "READY" in log.read_text(), log, sig, whole_group, dumps_stacks=True)
    assert text.count(CLOSED) == 1, text[-3000:]


def _engine_core_teardown(conn) -> None:
    """What an engine-core process goes through on Ctrl-C, with a SIGTERM before and during the device close."""
    import signal as _signal
    import time as _time

    import vllm.v1.engine.core as core

    from vllm_patches.shutdown import defer_stop_signals_during_teardown, deferring_stop_signals

    conn.send(defer_stop_signals_during_teardown())
    core.signal.signal(_signal.SIGTERM, _signal.SIG_DFL)  # what vLLM's engine core does as its teardown starts
    core.signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    os.kill(os.getpid(), _signal.SIGTERM)  # the front end's SIGTERM, before the worker's shutdown
    _time.sleep(0.3)
    conn.send("alive")
    with deferring_stop_signals():  # TTWorker.shutdown: the device closes in here
        os.kill(os.getpid(), _signal.SIGTERM)
        _time.sleep(0.3)
        conn.send("closed")
    conn.send("after")  # not reached: the deferred SIGTERM takes its default action on leaving the block


def test_engine_core_teardown_defers_stop_signals_until_the_device_is_closed():
    """In a process vLLM starts as an engine core, the teardown's reset of SIGINT / SIGTERM to their default action
    defers them: a second stop signal cannot cut the device close short, and once the device is closed it kills the
    process at once (the process manager does not wait on a process that was told to stop)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_engine_core_teardown, args=(send,), name="EngineCore")
    proc.start()
    send.close()
    got = []
    with pytest.raises(EOFError):
        while True:
            assert recv.poll(120)
            got.append(recv.recv())
    proc.join(timeout=60)
    assert got == [True, "alive", "closed"]
    assert proc.exitcode == -signal.SIGTERM


def _ctrl_c_during_the_stop_handler(conn) -> None:
    """vLLM's own engine-core main (run_engine_core, its signal handler and wake-up) around a stand-in engine: Ctrl-C,
    then the front end's SIGTERM landing while the SIGINT handler holds the wake-up Event's lock."""
    import queue
    import signal as _signal
    import threading
    import time as _time
    from types import SimpleNamespace

    import vllm.v1.engine.core as core

    from vllm_patches.shutdown import defer_stop_signals_during_teardown

    class SecondSignalInsideSet(threading.Event):  # threading.Event.set, with the SIGTERM arriving inside its lock
        def set(self) -> None:
            with self._cond:
                self._flag = True
                os.kill(os.getpid(), _signal.SIGTERM)
                _time.sleep(0.2)  # the interpreter runs the pending handler here
                self._cond.notify_all()

    threading.Event = SecondSignalInsideSet  # what vLLM's SignalCallback builds its wake-up from

    class EngineCore:  # what vLLM builds here; building it opens the TT worker's device (TTWorker.init_device)
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.shutdown_state = core.EngineShutdownState.RUNNING
            self.input_queue: queue.Queue = queue.Queue()
            self.vllm_config = kwargs["vllm_config"]
            conn.send(defer_stop_signals_during_teardown())

        def run_busy_loop(self) -> None:
            os.kill(os.getpid(), _signal.SIGINT)
            while self.shutdown_state == core.EngineShutdownState.RUNNING:
                self.input_queue.get()  # vLLM's wake-up
            raise SystemExit

        def has_work(self) -> bool:
            return False

        def shutdown(self) -> None:
            conn.send("teardown")

    run_engine_core = core.EngineCoreProc.run_engine_core
    core.EngineCoreProc = EngineCore
    parallel = SimpleNamespace(data_parallel_size=1, numa_bind=False, reconfigure_for_independent_dp_rank=lambda: None)
    try:
        run_engine_core(vllm_config=SimpleNamespace(parallel_config=parallel, kv_transfer_config=None,
                                                    shutdown_timeout=0))
    except SystemExit:
        conn.send("exited")


def test_a_second_stop_signal_inside_vllms_stop_handler_does_not_hang_the_engine_core():
    """On Ctrl-C the engine core gets the terminal's SIGINT and, at once, its front end's SIGTERM. CPython runs the
    second Python handler inside the first, and vLLM's handler sets a threading.Event whose lock is not reentrant:
    arriving there, the second waited forever on its own thread (a CI run: the engine core hung 30 s and was
    force-killed). The plugin runs vLLM's stop handlers one at a time; without it this child never reaches the
    teardown (checked by hand: still waiting after 60 s)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_ctrl_c_during_the_stop_handler, args=(send,), name="EngineCore")
    proc.start()
    send.close()
    got = []
    try:
        with pytest.raises(EOFError):
            while True:
                assert recv.poll(120), f"the engine core hangs after {got}"
                got.append(recv.recv())
    finally:
        proc.kill()
        proc.join(timeout=30)
    assert got == [True, "teardown", "exited"]


def test_deferring_stop_signals_in_the_users_process():
    """Anywhere else (an in-process engine runs in the user's process) the teardown keeps vLLM's dispositions, and a
    stop signal during the close reaches the user's own handler afterwards, once."""
    from vllm_patches.shutdown import defer_stop_signals_during_teardown, deferring_stop_signals

    assert not defer_stop_signals_during_teardown()  # pytest's own process
    calls = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    try:
        with deferring_stop_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            assert calls == []
        assert calls == [signal.SIGTERM]
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        assert calls == [signal.SIGTERM, signal.SIGTERM]  # the user's handler is back
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_in_7_s(conn) -> None:
    import signal as _signal
    import time as _time

    _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)  # an engine core still closing its device
    conn.send("started")
    _time.sleep(7)


def test_process_manager_finalizer_waits_for_the_engine_core():
    """The process manager's finalizer (how an offline script interrupted by Ctrl-C stops its engine core, at
    interpreter exit) calls vLLM's shutdown with no timeout, which force-kills after 5 s; with the plugin's grace it
    waits for an engine core that needs 7 s."""
    import multiprocessing
    import weakref

    import vllm.v1.engine.utils as engine_utils

    from vllm_patches.shutdown import install_shutdown_grace

    install_shutdown_grace()
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_exit_in_7_s, args=(send,))
    proc.start()
    assert recv.poll(120) and recv.recv() == "started"

    class Manager:  # what CoreEngineProcManager holds: weakref.finalize(self, shutdown, self.processes)
        pass

    manager = Manager()
    finalizer = weakref.finalize(manager, engine_utils.shutdown, [proc])
    finalizer()
    assert proc.exitcode == 0  # exited by itself; vLLM's 5 s would have killed it (-SIGKILL)
