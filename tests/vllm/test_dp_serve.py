"""vLLM's own data parallelism with the TT plugin: `vllm serve --data-parallel-size 2` runs two engine processes on
one machine, each opening its own TT device (rank r takes the r-th device, or the r-th group of TT_VISIBLE_DEVICES),
and the API server spreads requests over both; greedy answers are the same whichever engine serves them. Started as a
user would, with no TT options: the default `performance` profile (routing, not numerics, is what this tests; the
reference profile's serving is tests/vllm/test_server.py's too)."""

import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest
import requests

from tests.vllm.test_server import ROOT, free_port


@pytest.fixture(scope="module")
def dp_server(smollm2_dir, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("dp") / "server.log"
    env = dict(os.environ, TT_BACKEND="sim", TT_VISIBLE_DEVICES="3,5")
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "examples" / "server_example_tt.py"), "--model", smollm2_dir, "--port",
             str(port), "--max_num_seqs", "4", "--max_model_len", "512", "--served-model-name", "smollm2",
             "--data-parallel-size", "2", "--api-server-count", "1"],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=300, max_retries=0)
    deadline = time.time() + 600
    while True:
        try:
            client.models.list()
            break
        except openai.APIConnectionError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail("server did not start:\n" + Path(log).read_text()[-3000:])
            time.sleep(2)
    yield client, port, Path(log)
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_two_engines_on_their_own_devices_serve_the_same_answers(dp_server):
    client, port, log = dp_server
    opened = sorted(re.findall(r"opened TT mesh \(1, 1\) on devices \[(\d+)\]", log.read_text()))
    assert opened == ["3", "5"], "each DP rank opens its own group of TT_VISIBLE_DEVICES"

    def ask(i):
        r = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=8,
                                      temperature=0)
        return r.choices[0].text

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, range(16)))
    assert len(set(answers)) == 1 and "Paris" in answers[0]
    metrics = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    served = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'vllm:request_success_total\{[^}]*engine="(\d+)"[^}]*finished_reason="length"[^}]*\} ([\d.]+)', metrics)}
    assert served.get("0", 0) > 0 and served.get("1", 0) > 0, served
