"""The TT device is closed on every way a vLLM process is stopped: `vllm serve` and an offline LLM script, by
Ctrl-C (SIGINT to the whole process group, as a terminal sends it) and by SIGTERM to the main process only (as
`kill`, systemd or docker send it). The evidence is the TT worker's own log line, written after
ttnn.close_mesh_device returned; every process of the group must be gone within a bounded time.

Without the plugin's shutdown grace, vLLM's process manager force-kills the engine core in the instant it asks it to
stop; without its parent watch, an offline script killed by SIGTERM leaves its engine core running with the device
open."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.models.tiny import make_tiny_model
from tests.vllm.test_server import free_port

ROOT = Path(__file__).resolve().parents[2]
CLOSED = "closed TT mesh device(s)"
EXIT_WITHIN_S = 60

OFFLINE = """
import sys
from vllm import LLM, SamplingParams

if __name__ == "__main__":
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


def _stop(cmd: list[str], ready, log: Path, sig: int, whole_group: bool) -> str:
    env = dict(os.environ, TT_BACKEND="sim", PYTHONPATH=str(ROOT))
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
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
        deadline = time.time() + EXIT_WITHIN_S
        while _alive(proc.pid) and time.time() < deadline:
            time.sleep(0.5)
        left = _alive(proc.pid)
        text = log.read_text()
        assert not left, f"still running {EXIT_WITHIN_S} s after the signal: {left}\n{text[-3000:]}"
        # The engine core exited by itself: not force-killed by vLLM's process manager (which would race the close).
        assert "force killing" not in text, text[-3000:]
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

    cmd = [sys.executable, str(ROOT / "examples" / "server_example_tt.py"), "--model", tiny, "--port", str(port),
           "--max_num_seqs", "2", "--max_model_len", "128", "--block_size", "32", "--served-model-name", "tiny",
           "--skip-tokenizer-init", "--additional-config", '{"tt": {"optimizations": "reference"}}']
    text = _stop(cmd, ready, tmp_path / "serve.log", sig, whole_group)
    assert text.count(CLOSED) == 1, text[-3000:]


@pytest.mark.parametrize("sig,whole_group", STOPS)
def test_offline_llm_closes_the_device(tiny, tmp_path, sig, whole_group):
    log = tmp_path / "offline.log"
    cmd = [sys.executable, "-c", OFFLINE, tiny]
    text = _stop(cmd, lambda: "READY" in log.read_text(), log, sig, whole_group)
    assert text.count(CLOSED) == 1, text[-3000:]
