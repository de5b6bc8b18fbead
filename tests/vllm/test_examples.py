"""The offline example's --test_increasing_seq_lens regression run (shortened list) and --measure_perf, as CI
runs them."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_example(model: str, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "offline_inference_tt.py"), "--model", model, *args],
                         env=dict(os.environ, TT_BACKEND="sim"), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    return out


# The example's flow is under test, not SmolLM2's numbers (those are held to HF elsewhere): the cut checkpoint.
def test_increasing_seq_lens_run_finishes(short_dir):
    out = run_example(short_dir, "--test_increasing_seq_lens", "--seq_lens", "10,50,150,400", "--max_model_len",
                      "1024", "--max_tokens", "24", "--greedy_sampling", "--max_seqs_in_batch", "2")
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("N=")]
    assert [ln.split()[0] for ln in lines[:3]] == ["N=10", "N=50", "N=150"]
    assert all("-> length" in ln or "-> stop" in ln for ln in lines[:3])
    assert "prompts finished" in out.stdout
    # N=400 needs ~1500 prompt tokens: more than the context allows, so the run stops there cleanly.
    assert "N=400" in out.stdout and "exceed the context budget" in out.stdout


def test_measure_perf_prints_json(short_dir):
    out = run_example(short_dir, "--measure_perf", "--max_seqs_in_batch", "4", "--perf_prompt_len", "32",
                      "--max_tokens", "8", "--max_model_len", "256", "--greedy_sampling")
    result = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1])
    assert result["batch"] == 4 and result["ttft_s"] > 0 and result["total_tokens_per_s"] > 0
