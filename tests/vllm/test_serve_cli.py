"""The model as vLLM users give it: a hub id resolved through the Hugging Face cache exactly as vLLM resolves it
(offline here: the test lays the cache out), served with no TT flag (max_num_seqs, block size, profile, trace: the
defaults); a hub id that is not there gets Hugging Face's error, not the plugin's; a GGUF file of a supported family."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from tests.vllm.conftest import TEST_KV_BLOCKS, vllm_serve

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


def test_vllm_serve_a_hub_id_with_no_tt_flags(short_dir, short_hf, tmp_path):
    """(A local directory with no TT flag is served in tests/vllm/test_shutdown.py.)"""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(TT_BACKEND="sim", HF_HUB_OFFLINE="1",
               HF_HUB_CACHE=str(hub_cache(Path(short_dir), tmp_path / "hub", REPO)))
    model = REPO
    log = tmp_path / "serve.log"
    with vllm_serve(model, log=log, env=env) as (client, _):
        served = [m.id for m in client.models.list().data]
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


def test_a_users_gguf_file_is_served_token_exact_with_hf(tmp_path, monkeypatch):
    """A GGUF file path as the model (here SmolLM2's Q4_1 / Q8_0 file, copied where a user keeps it): converted once
    into the cache, its own tokenizer, served under the path the user gave, and greedy token for token with HF
    reading the same file (its dequantized weights rounded to bf16, as the TT model stores them; reference profile)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from vllm import LLM, SamplingParams

    from tests.vllm.conftest import check_against_hf, shutdown, tt_options
    from tt_models.checkpoint.gguf import _one_reader_per_file, default_gguf_path

    monkeypatch.setenv("TT_VLLM_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "models" / "my-smollm2.Q4_1.gguf"
    gguf.parent.mkdir()
    shutil.copy(default_gguf_path(), gguf)
    engine = LLM(model=str(gguf), max_num_seqs=4, max_model_len=256, seed=0, num_gpu_blocks_override=TEST_KV_BLOCKS,
                 additional_config=tt_options("reference"))
    try:
        assert engine.llm_engine.model_config.served_model_name == str(gguf)
        prompts = ["The capital of France is", "def fibonacci(n):"]
        outs = engine.generate(prompts, SamplingParams(temperature=0, max_tokens=8))
    finally:
        shutdown(engine)
    with _one_reader_per_file():  # gguf-py's reader of the file, parsed once for the tokenizer, config and weights
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        hf = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    with torch.no_grad():  # transformers refuses .to() on a GGUF-loaded model: round each weight in place
        for w in hf.parameters():
            w.copy_(w.to(torch.bfloat16))
    hf.eval()
    for prompt, out in zip(prompts, outs, strict=True):
        assert list(out.prompt_token_ids) == tok(prompt).input_ids  # the GGUF's own tokenizer
        assert len(out.outputs[0].token_ids) == 8
        check_against_hf(hf, list(out.prompt_token_ids), list(out.outputs[0].token_ids))
