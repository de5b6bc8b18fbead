"""Mixture-of-experts decode on the simulator. Prints JSON (and writes it with --out).

A random Qwen3-MoE of Qwen3-30B-A3B's structure at a CPU-sized width (default: hidden 512, 4 layers, 8 heads / 2 KV
heads of 64, 32 experts of 256 units, 8 per token, vocabulary 8192), saved once to a temp folder; or with
`--family gpt_oss` a random GPT-OSS of gpt-oss-20b's structure at the same width (32 experts, 4 per token unless
--top-k says otherwise, layers alternating sliding 128 / full attention, sinks, biases, clamped SwiGLU, YaRN); or with
`--family qwen2_moe` a random Qwen2-MoE of Qwen1.5-MoE-A2.7B's structure (60 experts, 4 per token, a shared expert,
q/k/v biases; on 1x8 the experts are padded to 64); or with `--family glm4_moe` a random GLM-4.5 of GLM-4.5-Air's
structure (sigmoid routing with a correction bias, 32 experts, 8 per token, an ungated shared expert, a dense first
layer, q/k/v biases, RoPE on half of each head):

- `vs_hf`: traced decode tokens/s at batch 32 on one simulated chip, per profile, against HF eager `generate` at
  batch 32 in fp32 and bf16 on the same CPU; `ratio_b32_sim_over_best_hf` uses the faster HF dtype.
- `ep`: seconds per traced decode step at batch 32 on 1x1 and with the experts split over a 1x8 mesh (expert
  parallel, attention tensor parallel), and their ratio: what simulating the mesh costs the host, one chip after
  the other plus the collectives, not what the mesh gains on hardware (each chip runs 1/8 of the experts there).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from bench_json import emit  # siblings: scripts run with benchmarks/ first on sys.path
from bench_mesh_decode import tp_step_s

os.environ.setdefault("TT_BACKEND", "sim")

from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    Glm4MoeConfig,
    GptOssConfig,
    Qwen2MoeConfig,
    Qwen3MoeConfig,
)


def make_model(root: Path, a: argparse.Namespace) -> Path:
    if a.family == "gpt_oss":
        # gpt-oss-20b's options (its config.json) at this width; HF's own init leaves the expert biases zero.
        # max_position_embeddings stays 2048: transformers warns that it is not factor x 4096 and uses the explicit
        # YaRN factor, as for gpt-oss-20b.
        cfg = GptOssConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.expert_units,
                           num_local_experts=a.experts, num_experts_per_tok=a.top_k, num_hidden_layers=a.layers,
                           num_attention_heads=8, num_key_value_heads=2, head_dim=64, max_position_embeddings=2048,
                           sliding_window=128, layer_types=["sliding_attention", "full_attention"] * (a.layers // 2),
                           swiglu_limit=7.0, attention_bias=True, tie_word_embeddings=False,
                           rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=32.0, beta_fast=32.0,
                                                beta_slow=1.0, truncate=False, original_max_position_embeddings=4096))
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).save_pretrained(root, safe_serialization=True)
        return root
    if a.family == "qwen2_moe":
        # Qwen1.5-MoE-A2.7B's options at this width: q/k/v biases, unnormalized top-k weights, a shared expert of 4
        # experts' units; 60 experts (default) over 8 chips are padded to 64.
        cfg = Qwen2MoeConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=4 * a.expert_units,
                             moe_intermediate_size=a.expert_units, shared_expert_intermediate_size=4 * a.expert_units,
                             num_experts=a.experts, num_experts_per_tok=a.top_k, norm_topk_prob=False,
                             num_hidden_layers=a.layers, num_attention_heads=8, num_key_value_heads=8,
                             max_position_embeddings=2048, tie_word_embeddings=False)
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).save_pretrained(root, safe_serialization=True)
        return root
    if a.family == "glm4_moe":
        # GLM-4.5-Air's options at this width: 96 heads of 128 over 8 KV heads become 8 of 64 over 2, as the others.
        cfg = Glm4MoeConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=3 * a.hidden,
                            moe_intermediate_size=a.expert_units, n_routed_experts=a.experts,
                            num_experts_per_tok=a.top_k, n_shared_experts=1, first_k_dense_replace=1,
                            norm_topk_prob=True, routed_scaling_factor=1.0, n_group=1, topk_group=1,
                            num_hidden_layers=a.layers, num_attention_heads=8, num_key_value_heads=2, head_dim=64,
                            partial_rotary_factor=0.5, attention_bias=True, max_position_embeddings=2048,
                            tie_word_embeddings=False)
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).save_pretrained(root, safe_serialization=True)
        return root
    cfg = Qwen3MoeConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=3 * a.hidden,
                         moe_intermediate_size=a.expert_units, num_experts=a.experts, num_experts_per_tok=a.top_k,
                         norm_topk_prob=True, num_hidden_layers=a.layers, num_attention_heads=8,
                         num_key_value_heads=2, head_dim=64, max_position_embeddings=2048, tie_word_embeddings=False)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).save_pretrained(root, safe_serialization=True)
    return root


@torch.no_grad()
def hf_tps(path: Path, dtype: torch.dtype, batch: int, context: int, steps: int) -> float:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
    ids = torch.randint(0, model.config.vocab_size, (batch, context), generator=torch.Generator().manual_seed(0))
    model.generate(ids, max_new_tokens=2, min_new_tokens=2, do_sample=False)  # warm up
    t0 = time.perf_counter()
    model.generate(ids, max_new_tokens=steps + 1, min_new_tokens=steps + 1, do_sample=False)
    t1 = time.perf_counter()
    model.generate(ids, max_new_tokens=1, min_new_tokens=1, do_sample=False)  # the prefill alone
    prefill = time.perf_counter() - t1
    return batch * steps / max(t1 - t0 - prefill, 1e-9)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("part", nargs="?", choices=("vs_hf", "ep", "all"), default="all")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--experts", type=int, help="default: 60 for qwen2_moe, else 32")
    p.add_argument("--family", choices=("qwen3_moe", "qwen2_moe", "gpt_oss", "glm4_moe"), default="qwen3_moe")
    p.add_argument("--top-k", type=int, help="experts per token (default: 8 for qwen3_moe and glm4_moe, 4 for the "
                                             "others)")
    p.add_argument("--expert-units", type=int, default=256)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--profiles", default="bf16,performance")
    p.add_argument("--out", help="also write the JSON here")
    a = p.parse_args()
    if a.top_k is None:
        a.top_k = 8 if a.family in ("qwen3_moe", "glm4_moe") else 4
    if a.experts is None:
        a.experts = 60 if a.family == "qwen2_moe" else 32
    out: dict[str, Any] = {
        "model": f"{a.family} hidden {a.hidden}, {a.layers} layers, {a.experts} experts x {a.expert_units} units, "
                 f"top {a.top_k}, vocab {a.vocab}",
        "batch": a.batch, "context": a.context, "steps": a.steps, "torch_threads": torch.get_num_threads()}
    with tempfile.TemporaryDirectory(prefix="bench_moe_") as tmp:
        path = make_model(Path(tmp), a)
        if a.part in ("vs_hf", "all"):
            hf = {name: hf_tps(path, dtype, a.batch, a.context, a.steps)
                  for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16))}
            out.update({f"hf_{k}_tok_s": round(v, 1) for k, v in hf.items()})
            best = max(hf.values())
            for profile in a.profiles.split(","):
                tps = a.batch / tp_step_s(path, (1, 1), profile, a.batch, a.context, a.steps)
                out[f"sim_{profile}_tok_s"] = round(tps, 1)
                out[f"ratio_b32_sim_{profile}_over_best_hf"] = round(tps / best, 3)
        if a.part in ("ep", "all"):
            one = tp_step_s(path, (1, 1), "performance", a.batch, a.context, a.steps)
            eight = tp_step_s(path, (1, 8), "performance", a.batch, a.context, a.steps)
            out.update({"ep_decode_step_ms_1x1": round(1000 * one, 2), "ep_decode_step_ms_1x8": round(1000 * eight, 2),
                        "ep_ratio_1x8_over_1x1": round(eight / one, 3)})
    emit(out, a.out, indent=None)


if __name__ == "__main__":
    main()
