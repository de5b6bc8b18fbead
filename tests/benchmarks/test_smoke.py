"""Smoke runs of the benchmarks: each runs end to end on a tiny setting and prints one JSON object with its
measurements. Numbers are not judged here (speed is never asserted in tests)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def short_smollm2(tmp_path_factory) -> str:
    """SmolLM2 cut to its first 4 layers: the smoke runs check that a benchmark runs end to end and reports what
    it should, which the whole 30-layer model would only make slower."""
    from tests.models.tiny import first_layers
    from tt_models.checkpoint import default_model_dir

    return str(first_layers(default_model_dir(), tmp_path_factory.mktemp("short"), 4))


def run_bench(script: str, *args: str) -> dict:
    # The session's cache (tests/conftest.py), never the user's: SmolLM2 is converted once for all the smoke runs.
    env = {**os.environ, "TT_BACKEND": "sim"}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_sim_paged_decode_smoke():
    r = run_bench("bench_sim_paged_decode.py", "--users", "4", "--context", "256", "--iters", "1")
    assert r["simulator_ms"] > 0 and r["plain_torch_ms"] > 0 and r["max_abs_diff"] < 1e-2


def test_smollm2_decode_smoke(short_smollm2):
    r = run_bench("bench_smollm2_decode.py", "--steps", "2", "--repeats", "1", "--prompt-len", "16",
                  "--profiles", "bf16", "--model", short_smollm2)
    for key in ("sim_bf16_decode_tok_s_b1", "sim_bf16_decode_tok_s_b32", "hf_bf16_decode_tok_s_b32",
                "hf_fp32_decode_tok_s_b32", "sim_bf16_prefill_s_1024", "ratio_b32_sim_over_hf",
                "ratio_b32_sim_over_hf_fp32"):
        assert r[key] > 0, key
    for mode in ("traced", "eager"):
        assert 0 < r[f"sim_bf16_validation_share_{mode}_b32"] < 1, mode


def test_vllm_runner_host_time_smoke():
    r = run_bench("bench_vllm_plugin.py", "runner")
    step = r["batch32_ctx2048"]
    assert step["total"] >= step["sampler"] > 0 and step["runner_only"] >= 0


def test_vllm_sampling_host_time_smoke():
    r = run_bench("bench_vllm_plugin.py", "sampling", "2")
    assert r["device_sampling"] > 0 and r["host_sampling"] >= r["host_sampler_alone"] > 0


def test_generator_host_time_smoke():
    r = run_bench("bench_vllm_plugin.py", "generator", "4", "256", "2")
    for mode in ("logits", "device_greedy", "device_sampling"):
        assert r[mode]["host_ms"] > 0 and r[mode]["device_ms_simulated"] > 0, mode


def test_mesh_decode_smoke():
    r = run_bench("bench_mesh_decode.py", "--hidden", "256", "--layers", "1", "--vocab", "512", "--batch",
                  "4", "--steps", "1", "--meshes", "1x1,1x2", "--replicas", "2")
    assert r["tp_decode_step_ms_1x1"] > 0 and r["tp_ratio_1x2_over_1x1"] > 0
    assert r["dp_step_ms"] >= r["dp_replicas_decode_ms"] > 0 and r["dp_total_batch"] == 8
    assert r["dp1_step_ms"] > 0 and r["dp_ratio_2_over_1"] > 0


def test_vllm_async_vs_sync_smoke(short_smollm2):
    r = run_bench("bench_vllm_plugin.py", "async", "2", "6", short_smollm2)
    assert r["async"]["async_scheduling"] and not r["sync"]["async_scheduling"]
    assert r["async"]["tok_s"] > 0 and r["sync"]["tok_s"] > 0 and r["ratio_async_over_sync"] > 0
    # 5 decode steps of one batch: the first launched alone, the others each overlapping the previous one.
    assert r["async"]["steps_launched_async"] == 5 and r["async"]["steps_overlapped"] == 4
    assert r["sync"]["steps_launched_async"] == 0 and r["outputs_equal"]
