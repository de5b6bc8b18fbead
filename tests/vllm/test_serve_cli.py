"""`vllm serve MODEL` as vLLM users type it, with no TT flag (max_num_seqs, block size, profile, trace: the
defaults): MODEL a local HF directory, or a hub id resolved through the Hugging Face cache exactly as vLLM resolves it
(offline here: the test lays the cache out). A hub id that is not there gets Hugging Face's error, not the plugin's."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest
import torch

from tests.vllm.test_server import free_port

PROMPT = "The capital of France is"
REPO = "tt-test/SmolLM2-short"


def hub_cache(model_dir: Path, root: Path, repo: str) -> Path:
    """An HF hub cache holding model_dir as repo's main revision (the layout huggingface_hub writes)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    entry = root / ("models--" + repo.replace("/", "--"))
    snapshot = entry / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for f in model_dir.iterdir():
        if f.is_file():
            (snapshot / f.name).symlink_to(f.resolve())
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(commit)
    return root


@pytest.mark.parametrize("how", ["directory", "hub id"])
def test_vllm_serve_with_no_tt_flags(short_dir, short_hf, tmp_path, how):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(TT_BACKEND="sim", HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "empty-hub"))
    model = short_dir
    if how == "hub id":
        env["HF_HUB_CACHE"] = str(hub_cache(Path(short_dir), tmp_path / "hub", REPO))
        model = REPO
    vllm = shutil.which("vllm", path=str(Path(sys.executable).parent))
    assert vllm, "vLLM's console script is not installed next to this Python"
    log = tmp_path / "serve.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([vllm, "serve", model, "--host", "127.0.0.1", "--port", str(port)], env=env,
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=300, max_retries=0)
    try:
        deadline = time.time() + 600
        while True:
            assert proc.poll() is None, log.read_text()[-4000:]
            assert time.time() < deadline, "did not start: " + log.read_text()[-4000:]
            try:
                served = [m.id for m in client.models.list().data]
                break
            except openai.APIConnectionError:
                time.sleep(2)
        assert served == [model]
        from transformers import AutoTokenizer

        ids = AutoTokenizer.from_pretrained(short_dir)(PROMPT).input_ids
        out = client.completions.create(model=model, prompt=ids, max_tokens=4, temperature=0.0,
                                        extra_body={"return_token_ids": True})
        text = log.read_text()
        assert "max_num_seqs not set: 32" in text, text[-4000:]
        got = out.choices[0].model_extra["token_ids"]
        assert len(got) == 4 and out.choices[0].text
        # The default profile's first token is one HF (same weights) ranks among its 5 best.
        with torch.no_grad():
            best = short_hf(torch.tensor([ids])).logits[0, -1].topk(5).indices.tolist()
        assert got[0] in best, (got, best)
    finally:
        os.killpg(proc.pid, 2)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=30)


def test_a_hub_id_not_in_the_cache_gets_hugging_faces_error(tmp_path):
    env = dict(os.environ, TT_BACKEND="sim", HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "hub"))
    code = ("from vllm.engine.arg_utils import EngineArgs; "
            "EngineArgs(model='tt-test/not-downloaded').create_engine_config()")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    # Hugging Face's own offline error, raised before the TT platform sees a model.
    assert last.startswith("huggingface_hub.errors.LocalEntryNotFoundError"), run.stderr[-3000:]
    assert "vllm_patches" not in run.stderr and "tt_models" not in run.stderr, run.stderr[-3000:]
