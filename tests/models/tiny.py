"""Tiny random-weight HF models per family, saved as safetensors, and an HF greedy reference with TT's
near-tie rule."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    DeepseekV3Config,
    Gemma3TextConfig,
    Glm4MoeConfig,
    GptOssConfig,
    LlamaConfig,
    MistralConfig,
    MixtralConfig,
    Qwen2Config,
    Qwen2MoeConfig,
    Qwen3Config,
    Qwen3MoeConfig,
)

logger = logging.getLogger(__name__)
NEAR_TIE = 1e-3  # top-2 logit gap, relative to the top logit, below which a greedy divergence is excused

LOGIT_SCALE = 6.0
COMMON = dict(vocab_size=512, max_position_embeddings=1024, rms_norm_eps=1e-5, initializer_range=0.08)

FAMILIES = {
    # GQA, untied head, default rope
    "llama_gqa": (LlamaConfig, dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)),
    # MHA, tied embeddings, llama3 rope scaling
    "llama_mha_tied_llama3": (LlamaConfig, dict(
        hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
        tie_word_embeddings=True,
        rope_parameters=dict(rope_type="llama3", rope_theta=10000.0, factor=8.0, low_freq_factor=1.0,
                             high_freq_factor=4.0, original_max_position_embeddings=256))),
    # sliding window smaller than prompt + generation, so both prefill and decode exercise it
    "mistral_window": (MistralConfig, dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=1, sliding_window=48,
                                           tie_word_embeddings=False)),
    # QKV bias
    "qwen2_bias": (Qwen2Config, dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)),
    # q/k RMSNorm; head_dim (64) != hidden / heads (32)
    "qwen3_qknorm": (Qwen3Config, dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                       tie_word_embeddings=False)),
    # Gemma 3's layer pattern (5 sliding : 1 global), a window shorter than prompt + generation, local and global
    # RoPE bases with the global layers' linear scaling (4B and up), a softmax scale from query_pre_attn_scalar that is
    # not head_dim's, one KV head and head_dim != hidden / heads, as gemma-3-270m / 1b have; tied GeGLU, four norms.
    "gemma3": (Gemma3TextConfig, dict(
        hidden_size=128, intermediate_size=256, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=1,
        head_dim=64, query_pre_attn_scalar=96, sliding_window=48, tie_word_embeddings=True,
        rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10000.0),
                         "full_attention": dict(rope_type="linear", rope_theta=1000000.0, factor=8.0)})),
}


# Mixture-of-experts families (tt_models/layers/moe.py): several experts, top-k > 1, experts narrower than the dense
# MLP, as the real checkpoints have them.
MOE_FAMILIES = {
    # Qwen3-30B-A3B's structure: q/k norm, head_dim != hidden / heads, top-k weights renormalized (norm_topk_prob),
    # and a dense layer among the MoE ones (mlp_only_layers), as Qwen3-MoE configs may set.
    "qwen3_moe": (Qwen3MoeConfig, dict(hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                                       num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
                                       num_hidden_layers=3, mlp_only_layers=[1], num_attention_heads=4,
                                       num_key_value_heads=2, head_dim=64, tie_word_embeddings=False)),
    # The Qwen3-MoE class default: the top-k softmax weights are used as they are (they sum to less than 1).
    "qwen3_moe_unnormed": (Qwen3MoeConfig, dict(hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                                                num_experts=8, num_experts_per_tok=3, norm_topk_prob=False,
                                                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                head_dim=64, tie_word_embeddings=False)),
    # Qwen2-MoE (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): q/k/v biases, the top-k softmax weights as they are, and a
    # shared expert on every token, gated by sigmoid(x . shared_expert_gate); its 192 units are 6 tiles on one chip,
    # 3 per chip on two and padded to one tile per chip on eight.
    "qwen2_moe": (Qwen2MoeConfig, dict(hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                                       shared_expert_intermediate_size=192, num_experts=8, num_experts_per_tok=2,
                                       norm_topk_prob=False, num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, tie_word_embeddings=False)),
    # Mixtral: 2 of 8 experts as Mixtral-8x7B (one per chip of a T3K), always renormalized, a sliding window shorter
    # than the test's prompt + generation.
    "mixtral": (MixtralConfig, dict(hidden_size=128, intermediate_size=96, num_local_experts=8,
                                    num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
                                    num_key_value_heads=2, sliding_window=48, tie_word_embeddings=False)),
    # GPT-OSS: 2 of 8 experts chosen top-k-then-softmax, biases on the router, the experts (gate/up interleaved),
    # q/k/v and o_proj, the clamped SwiGLU at gpt-oss-20b's alpha / limit, one learned sink logit per head, sliding
    # (window shorter than the test's prompt + generation) and full layers alternating, YaRN RoPE (gpt-oss-20b's
    # betas, a smaller factor and original length), head_dim 64 as the real model's.
    "gpt_oss": (GptOssConfig, dict(hidden_size=128, intermediate_size=64, num_local_experts=8, num_experts_per_tok=2,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                   sliding_window=48, layer_types=["sliding_attention", "full_attention"],
                                   swiglu_alpha=1.702, swiglu_limit=7.0, attention_bias=True,
                                   tie_word_embeddings=False,
                                   rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=4.0,
                                                        beta_fast=32.0, beta_slow=1.0, truncate=False,
                                                        original_max_position_embeddings=256))),
    # GLM-4.5's structure: sigmoid router scores chosen with a correction bias (drawn below), 2 of 8 experts
    # renormalized and scaled by 2.5 (GLM-4.5's routed_scaling_factor), one ungated shared expert, a dense first layer
    # (first_k_dense_replace), q/k/v biases, RoPE on half of each head (partial_rotary_factor 0.5), and the q/k norm
    # of the 355B model (GLM-4.5-Air has none).
    "glm4_moe": (Glm4MoeConfig, dict(hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                                     n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
                                     first_k_dense_replace=1, norm_topk_prob=True, routed_scaling_factor=2.5,
                                     n_group=1, topk_group=1, num_hidden_layers=3, num_attention_heads=4,
                                     num_key_value_heads=2, head_dim=64, partial_rotary_factor=0.5,
                                     attention_bias=True, use_qk_norm=True, tie_word_embeddings=False)),
}
# DeepSeek-V3's group-limited routing (8 groups, 4 kept) on the tiny GLM-4.5 with 16 experts: 8 groups of 2, each
# token choosing its 2 experts from its 4 best groups (a group scored by its two best score + bias); over 8 chips one
# group per chip, as DeepSeek-V3's 256 experts in 8 groups over a T3K.
MOE_FAMILIES["glm4_moe_grouped"] = (Glm4MoeConfig, dict(MOE_FAMILIES["glm4_moe"][1], n_routed_experts=16, n_group=8,
                                                        topk_group=4))
# DeepSeek-V3's structure: multi-latent attention (a low-rank query with its norm, a latent of 64 + a rotary part
# of 32 per position, each head's key part and value up-projected from it; YaRN RoPE with mscale, which also scales
# the softmax) and GLM-4.5's router (DeepSeek-V3's: sigmoid scores chosen with a correction bias, 2 of 8 experts,
# scaling 2.5, a shared expert, a dense first layer, then a MoE one). DeepSeek-V3's q_lora_rank 1536,
# kv_lora_rank 512, heads of 128 + 64 / 128 in small.
MOE_FAMILIES["deepseek_v3"] = (DeepseekV3Config, dict(
    hidden_size=128, intermediate_size=256, moe_intermediate_size=64, n_routed_experts=8, num_experts_per_tok=2,
    n_shared_experts=1, first_k_dense_replace=1, norm_topk_prob=True, routed_scaling_factor=2.5, n_group=1,
    topk_group=1, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=64,
    kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=32, v_head_dim=64, tie_word_embeddings=False,
    rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0, beta_fast=32.0, beta_slow=1.0,
                         mscale=1.0, mscale_all_dim=1.0, original_max_position_embeddings=256)))
# Moonlight-16B-A3B's attention (the query from one projection: q_lora_rank None; default RoPE) in dense layers
# only (every layer below first_k_dense_replace), so that its comparison in the rounding profiles meets no router
# near-tie.
FAMILIES["deepseek_v3_dense"] = (DeepseekV3Config, dict(
    MOE_FAMILIES["deepseek_v3"][1], q_lora_rank=None, first_k_dense_replace=2,
    rope_parameters=dict(rope_type="default", rope_theta=50000.0)))
# Families that run on one chip only (multi-latent attention is not split over chips: refused on a mesh, as
# tests/models/test_mla.py checks).
ONE_CHIP_FAMILIES = ("deepseek_v3", "deepseek_v3_dense")
# Parameters HF initializes to zero that a family's test model randomizes, so that a missing one shows (GPT-OSS's
# expert biases).
ZERO_INIT = {"gpt_oss": ("gate_up_proj_bias", "down_proj_bias")}
# Buffers HF initializes to zero that the test model draws (std), so that ignoring them shows: GLM-4.5's router
# correction bias, at a size that changes some tokens' choice of experts (scores are sigmoids in (0, 1)).
BUFFERS = {"glm4_moe": ("e_score_correction_bias", 0.1), "glm4_moe_grouped": ("e_score_correction_bias", 0.1),
           "deepseek_v3": ("e_score_correction_bias", 0.1)}
# 1-D parameters that are biases, not norm weights, drawn as the weights are (N(0, initializer_range)) rather than
# near 1.0: Qwen2-MoE's q/k/v biases near 1.0 make every position's attention output nearly the same vector, and the
# tiny model's greedy token the same at all 200 positions of a random prompt (60 distinct with these).
BIASES = {"qwen2_moe": ("q_proj.bias", "k_proj.bias", "v_proj.bias"),
          "glm4_moe": ("q_proj.bias", "k_proj.bias", "v_proj.bias"),
          "glm4_moe_grouped": ("q_proj.bias", "k_proj.bias", "v_proj.bias")}


def make_tiny_model(family: str, root: Path, seed: int = 0) -> Path:
    """Random model saved with bf16-exact weights (the rounded weights both sides use)."""
    cls, kw = FAMILIES[family] if family in FAMILIES else MOE_FAMILIES[family]
    out = root / family
    if (out / "config.json").exists():
        return out
    torch.manual_seed(seed)
    base = re.sub(r"_e\d+$", "", family).removesuffix("_wide")  # (make_odd_experts_model's: the family's table)
    config = cls(**COMMON, **kw)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        # A trained LM's logits are peaked (std of several units); random init at 0.08 gives flat ones where
        # every greedy pick is a near-coin-flip. Scaling the output projection makes greedy choices meaningful.
        model.get_output_embeddings().weight.mul_(LOGIT_SCALE)
        for name, p in model.named_parameters():
            if name.endswith(ZERO_INIT.get(base, ())):
                p.normal_(0.0, 0.5)
        for name, p in model.named_parameters():
            if name.endswith(BIASES.get(base, ())):
                p.normal_(0.0, COMMON["initializer_range"])
            elif p.dim() == 1:  # norm weights: keep them away from 1.0 so a missing norm shows
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            p.copy_(p.to(torch.bfloat16).float())
        if base in BUFFERS:
            suffix, std = BUFFERS[base]
            for name, b in model.named_buffers():
                if name.endswith(suffix):
                    b.copy_((std * torch.randn_like(b)).to(torch.bfloat16).float())
    model.save_pretrained(out, safe_serialization=True)
    return out


# gpt-oss-20b's published quantization_config: its experts are MXFP4 blocks and scales, the rest bf16.
GPT_OSS_MXFP4 = {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                            "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}


def make_mxfp4_gpt_oss(root: Path) -> Path:
    """The tiny GPT-OSS as the released checkpoints are stored: each expert tensor X as X_blocks [E, out, in/32, 16]
    (random e2m1 code pairs) and X_scales [E, out, in/32] (exponents 2^-8..2^-5: weights up to 0.19, as the bf16
    model's), everything else the bf16 model's; config.json with the published quantization_config."""
    out = root / "gpt_oss_mxfp4"
    if (out / "config.json").exists():
        return out
    src = make_tiny_model("gpt_oss", root)
    g = torch.Generator().manual_seed(5)
    state = {}
    for name, w in load_file(src / "model.safetensors").items():
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
            experts, n_in, n_out = w.shape  # x @ W: [E, in, out]
            state[name + "_blocks"] = torch.randint(0, 256, (experts, n_out, n_in // 32, 16), generator=g,
                                                    dtype=torch.uint8)
            state[name + "_scales"] = torch.randint(119, 123, (experts, n_out, n_in // 32), generator=g,
                                                    dtype=torch.uint8)
        else:
            state[name] = w
    out.mkdir(parents=True)
    save_file(state, out / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "quantization_config": GPT_OSS_MXFP4}, indent=1))
    for f in src.iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            shutil.copy(f, out / f.name)
    return out


def _widened(family: str, hidden: int) -> tuple[dict, type, dict]:
    """The family's table, config class and kwargs widened to 8 heads (hidden `hidden`, MLP 512), so that 2 or 8
    chips split it for tensor parallel; the family's KV heads are kept (MHA stays MHA: 8)."""
    table = FAMILIES if family in FAMILIES else MOE_FAMILIES
    cls, base = table[family]
    kw = dict(base, hidden_size=hidden, intermediate_size=512, num_attention_heads=8)
    if "num_local_experts" in base:  # Mixtral's experts are intermediate_size wide: keep them
        kw["intermediate_size"] = base["intermediate_size"]
    if base["num_key_value_heads"] == base["num_attention_heads"]:
        kw["num_key_value_heads"] = 8
    return table, cls, kw


def _make_variant(table: dict, name: str, cls: type, kw: dict, root: Path) -> Path:
    """make_tiny_model of a variant registered under `name` for the call."""
    table[name] = (cls, kw)
    try:
        return make_tiny_model(name, root)
    finally:
        del table[name]


def make_wide_model(family: str, root: Path) -> Path:
    """The family's tiny model widened to 8 heads (hidden 256, MLP 512), so that 2 or 8 chips split it for tensor
    parallel; the family's KV heads are kept (MHA stays MHA: 8), so most have fewer KV heads than 8 chips."""
    table, cls, kw = _widened(family, 256)
    return _make_variant(table, f"{family}_wide", cls, kw, root)


def make_padded_model(family: str, root: Path) -> Path:
    """The family's wide tiny model (make_wide_model) with hidden size 480: 15 tiles, which split into whole tiles
    over neither 2 nor 8 chips (as gpt-oss's 2880, 90 tiles, over 8), so a 1xN mesh pads its residual (to 512: 8 or 2
    tiles per chip, the last chip's share half zero columns)."""
    table, cls, kw = _widened(family, 480)
    if "head_dim" not in table[family][1]:
        kw["head_dim"] = 64  # 480 / 8 heads is 60: keep the tiny models' head size
    return _make_variant(table, f"{family}_padded", cls, kw, root)


def make_odd_experts_model(family: str, root: Path, experts: int = 12) -> Path:
    """The family's wide tiny model (make_wide_model) with `experts` experts, which 8 chips do not divide (as
    Qwen1.5-MoE-A2.7B's 60): a T3K pads them with never-selected experts (tt_models.parallel.pad_mlp)."""
    table, cls, kw = _widened(family, 256)
    kw[next(k for k in ("num_local_experts", "n_routed_experts", "num_experts") if k in kw)] = experts
    return _make_variant(table, f"{family}_e{experts}", cls, kw, root)


def load_hf(path: Path) -> torch.nn.Module:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
        for m in model.modules():
            if hasattr(m, "embed_scale"):
                # Gemma scales its embedding by sqrt(hidden) cast to the weights' dtype; run in fp32 here, the
                # checkpoint's bf16 value of it, as HF computes in the checkpoint's own dtype.
                m.embed_scale.copy_(m.embed_scale.to(torch.bfloat16).float())
    return model


def hf_config(path: Path):
    return AutoConfig.from_pretrained(path)


@torch.no_grad()
def hf_last_logits(model: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    return model(torch.tensor([ids])).logits[0, -1].float()


def check_greedy_step(tt_logits: torch.Tensor, ref_logits: torch.Tensor, where: str) -> int:
    """Returns the token to continue with. Fails unless TT's argmax equals HF's or HF's top-2 is a near-tie."""
    tt_tok, ref_tok = int(tt_logits.argmax()), int(ref_logits.argmax())
    if tt_tok == ref_tok:
        return ref_tok
    top2 = torch.topk(ref_logits, 2).values
    gap = float(top2[0] - top2[1])
    assert gap < NEAR_TIE * abs(float(top2[0])), (
        f"{where}: TT token {tt_tok} != HF token {ref_tok} (HF top-2 gap {gap:.4g}, not a near-tie)")
    logger.warning("%s: near-tie divergence (gap %.3g): TT %d vs HF %d; resuming from HF", where, gap, tt_tok,
                   ref_tok)
    return ref_tok


def first_layers(src: Path, root: Path, layers: int) -> Path:
    """A real checkpoint cut to its first `layers` decoder layers (same embedding, final norm, head and tokenizer;
    the later layers' tensors left out, as a checkpoint of that depth has them): real weights' confident logits at
    a fraction of the decode cost."""
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    out = root / f"{Path(src).name}-first{layers}"
    if (out / "config.json").exists():
        return out
    out.mkdir(parents=True)
    for f in Path(src).iterdir():
        if f.is_file() and not f.name.startswith(".") and f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy(f, out / f.name)
    config = json.loads((Path(src) / "config.json").read_text())
    config["num_hidden_layers"] = layers
    tensors = {}
    for f in sorted(Path(src).glob("*.safetensors")):
        for name, t in load_file(f).items():
            parts = name.split(".")
            if not (len(parts) > 2 and parts[1] == "layers" and int(parts[2]) >= layers):
                tensors[name] = t
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out
