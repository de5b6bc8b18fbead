"""Model hyper-parameters read from a Hugging Face config, with the supported families and features checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

# HF architecture -> family. Each family is the Llama decoder with a few switches (ModelArgs below).
SUPPORTED_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Gemma3ForCausalLM": "gemma3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "MixtralForCausalLM": "mixtral",
    "GptOssForCausalLM": "gpt_oss",
    "Glm4MoeForCausalLM": "glm4_moe",
    "DeepseekV3ForCausalLM": "deepseek_v3",
}
# Architectures people ask for that are refused, with the reason (rather than only "unsupported").
REFUSED_ARCHITECTURES = {
    "Gemma2ForCausalLM": "Gemma 2 soft-caps the attention logits (attn_logit_softcapping) between the QK product "
                         "and the softmax, which ttnn 0.81.1's fused SDPA ops do not take",
    "Gemma3ForConditionalGeneration": "the multimodal Gemma 3 (4B and larger) is not served: its vision tower is "
                                      "not implemented (the text-only Gemma3ForCausalLM, e.g. gemma-3-270m and "
                                      "gemma-3-1b, is)",
}
# A GGUF file's config names only its model_type; the families' model_types where they differ from the family name.
MODEL_TYPES = {"gemma3_text": "gemma3", "gpt_oss": "gpt_oss", "glm4_moe": "glm4_moe", "deepseek_v3": "deepseek_v3"}
# Mixture-of-experts families: their MLPs are a router over experts (tt_models/layers/moe.py).
MOE_FAMILIES = ("qwen3_moe", "qwen2_moe", "mixtral", "gpt_oss", "glm4_moe", "deepseek_v3")
# yarn: GPT-OSS's; its inverse frequencies and cos/sin scaling come from transformers' own function (tt_models/rope.py).
SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3", "yarn")
# The MLP's gate activation per family (HF's hidden_act, Gemma's hidden_activation).
SUPPORTED_ACTIVATIONS = {"gemma3": ("gelu_pytorch_tanh",)}
DEFAULT_ACTIVATIONS = ("silu",)
# Gemma 3's two attention layer kinds (HF's layer_types); the other families' layers are all "full_attention", or all
# "sliding_attention" where a window is set.
SLIDING, FULL = "sliding_attention", "full_attention"


# HF config fields that change a model's math, with the value under which the TT models compute exactly what the
# checkpoint means; any other value is refused by name rather than silently ignored. (Fields of the supported
# families are checked where they are read below; these are the ones related architectures add to the same classes
# or that checkpoint authors set by hand.)
NEUTRAL_FIELDS: dict[str, Any] = {
    "partial_rotary_factor": 1.0,  # RoPE on only part of each head
    "attn_logit_softcapping": None,
    "final_logit_softcapping": None,
    "logit_scale": 1.0,
    "logits_scaling": 1.0,
    "embedding_multiplier": 1.0,
    "residual_multiplier": 1.0,
    "attention_multiplier": None,
    "use_qk_norm": False,  # Llama 4's per-head q/k norm
    "no_rope_layers": None,
    "dual_chunk_attention_config": None,  # Qwen2.5-1M's long-context attention
    "attention_chunk_size": None,
    "use_bidirectional_attention": False,  # EmbeddingGemma: attention without the causal mask
}
# NEUTRAL_FIELDS a family reads itself (GLM-4.5: RoPE on the first half of each head, q/k norm in the 355B model).
FAMILY_FIELDS = {"glm4_moe": ("partial_rotary_factor", "use_qk_norm")}


class UnsupportedModelError(ValueError):
    """The checkpoint needs an architecture or feature these TT models do not implement."""


@dataclass(frozen=True)
class MLA:
    """DeepSeek's multi-latent attention (tt_models/layers/mla.py). Each position caches one row: the normed
    compressed KV (kv_lora_rank) and the key's rotary part (rope_dim), shared by every head. A head's query is
    nope_dim + rope_dim wide, its value v_dim; the query comes from a low-rank pair (q_lora_rank) or one projection
    (None)."""

    q_lora_rank: int | None
    kv_lora_rank: int
    nope_dim: int
    rope_dim: int
    v_dim: int

    @property
    def row(self) -> int:
        """The width of a cached row."""
        return self.kv_lora_rank + self.rope_dim


def _moe_fields(config: Any, family: str) -> dict[str, Any]:
    """ModelArgs' mixture-of-experts fields from an HF Qwen3-MoE / Mixtral config."""
    experts = (getattr(config, "num_experts", None) or getattr(config, "num_local_experts", None)
               or getattr(config, "n_routed_experts", None) or 0)
    k = config.num_experts_per_tok
    if experts < 2 or not 1 <= k <= experts:
        raise UnsupportedModelError(f"{experts} experts with {k} per token: expected at least 2 experts and "
                                    f"1 <= experts per token <= experts")
    n = config.num_hidden_layers
    if family == "gpt_oss":
        # GPT-OSS takes the top k logits, then the softmax over them: the same weights as softmax-topk-renormalize
        # (the common factor cancels), so norm_topk_prob. Its router and experts have biases and its experts the
        # clamped SwiGLU.
        return dict(n_experts=experts, experts_per_tok=k, moe_hidden_dim=config.intermediate_size,
                    norm_topk_prob=True, moe_layers=(True,) * n, moe_bias=True,
                    swiglu_clamp=(float(config.swiglu_alpha), float(config.swiglu_limit)))
    if family == "mixtral":
        # Mixtral's experts are intermediate_size wide, every layer is MoE and the top-k weights always sum to 1.
        return dict(n_experts=experts, experts_per_tok=k, moe_hidden_dim=config.intermediate_size,
                    norm_topk_prob=True, moe_layers=(True,) * n)
    if family in ("glm4_moe", "deepseek_v3"):
        return _sigmoid_routed_fields(config, experts, k, n)
    dense = set(getattr(config, "mlp_only_layers", None) or ())
    step = getattr(config, "decoder_sparse_step", 1) or 1
    # Qwen2-MoE: every MoE layer also runs one shared expert (a dense SwiGLU MLP) on every token, its output scaled
    # by sigmoid(shared_expert_gate . x).
    shared = int(getattr(config, "shared_expert_intermediate_size", 0) or 0) if family == "qwen2_moe" else 0
    return dict(n_experts=experts, experts_per_tok=k, moe_hidden_dim=config.moe_intermediate_size,
                norm_topk_prob=bool(getattr(config, "norm_topk_prob", False)),
                moe_layers=tuple(i not in dense and (i + 1) % step == 0 for i in range(n)),
                shared_expert_dim=shared)


def _sigmoid_routed_fields(config: Any, experts: int, k: int, n: int) -> dict[str, Any]:
    """GLM-4.5's (DeepSeek-V3's) routing: each expert's score is sigmoid(logit); a token takes the k experts of
    highest score + e_score_correction_bias (the bias only chooses; with n_group > topk_group only among the experts
    of its topk_group best groups), weighted by their scores, renormalized when norm_topk_prob, times
    routed_scaling_factor. The first first_k_dense_replace layers are dense; every MoE layer
    also runs n_shared_experts ungated shared experts (one MLP of n_shared * moe_intermediate_size units)."""
    groups, kept = int(getattr(config, "n_group", 1) or 1), int(getattr(config, "topk_group", 1) or 1)
    if experts % groups or not 1 <= kept <= groups:
        raise UnsupportedModelError(f"n_group={groups}, topk_group={kept} with {experts} experts: expected groups "
                                    f"that divide the experts and 1 <= topk_group <= n_group")
    if kept < groups and k > kept * (experts // groups):
        raise UnsupportedModelError(f"{k} experts per token from {kept} groups of {experts // groups}")
    dense = int(getattr(config, "first_k_dense_replace", 0) or 0)
    return dict(n_experts=experts, experts_per_tok=k, moe_hidden_dim=config.moe_intermediate_size,
                norm_topk_prob=bool(getattr(config, "norm_topk_prob", True)),
                moe_layers=tuple(i >= dense for i in range(n)),
                shared_expert_dim=int(getattr(config, "n_shared_experts", 0) or 0) * config.moe_intermediate_size,
                shared_expert_gated=False, router_scoring="sigmoid",
                routed_scaling=float(getattr(config, "routed_scaling_factor", 1.0) or 1.0),
                expert_groups=(groups, kept) if kept < groups else None)


def _mla(config: Any) -> MLA:
    """DeepSeek-V3's attention dimensions, with what the TT layer does not implement refused by name."""
    if not getattr(config, "rope_interleave", True):
        # The released checkpoints keep each head's rotary channels in adjacent pairs, as rotary_embedding_llama
        # rotates them; the rotate-half layout would need those rows permuted at load.
        raise UnsupportedModelError("rope_interleave=False (rotary channels in rotate-half order) is not "
                                    "implemented for DeepSeek-V3's attention")
    n_heads, n_kv = config.num_attention_heads, getattr(config, "num_key_value_heads", None)
    if n_kv not in (None, n_heads):
        raise UnsupportedModelError(f"num_key_value_heads={n_kv} with {n_heads} heads: multi-latent attention "
                                    "expands its latent to every head")
    mla = MLA(getattr(config, "q_lora_rank", None), config.kv_lora_rank, config.qk_nope_head_dim,
              config.qk_rope_head_dim, config.v_head_dim)
    for name, width in (("kv_lora_rank", mla.kv_lora_rank), ("qk_nope_head_dim", mla.nope_dim),
                        ("qk_rope_head_dim", mla.rope_dim), ("v_head_dim", mla.v_dim),
                        ("q_lora_rank", mla.q_lora_rank or 32)):
        if width % 32:
            raise UnsupportedModelError(f"{name}={width} is not a multiple of 32 (TT tile width)")
    return mla


def _refuse_quantization(config: Any, family: str) -> None:
    quant = getattr(config, "quantization_config", None)
    if not quant:
        return
    method = quant.get("quant_method", "?") if isinstance(quant, dict) else getattr(quant, "quant_method", "?")
    if method in ("mxfp4", "gpt_oss_mxfp4") and family == "gpt_oss":
        # The released GPT-OSS checkpoints keep their experts as MXFP4 blocks + scales: read dequantized to bf16
        # (tt_models.checkpoint.hf, exact), then rounded to the profile's expert dtype like bf16 weights. (vLLM
        # renames the method gpt_oss_mxfp4 in the config it hands the worker.)
        return
    raise UnsupportedModelError(
        f"the checkpoint is quantized (quantization_config quant_method={method!r}); TT models load bf16/fp32 "
        f"weights and round them to the profile's bfloat8_b / bfloat4_b themselves: use the unquantized "
        f"checkpoint (or a GGUF file, which is dequantized on load)")


def _refuse_unsupported_fields(config: Any, family: str) -> None:
    _refuse_quantization(config, family)
    for field, neutral in NEUTRAL_FIELDS.items():
        if field in FAMILY_FIELDS.get(family, ()):
            continue
        value = getattr(config, field, neutral)
        if value not in (neutral, None) and not (neutral is None and value in ((), [], {}, 0)):
            raise UnsupportedModelError(f"config field {field}={value!r} changes the model's math and is not "
                                        f"implemented by the TT models")
    if family in MOE_FAMILIES and family != "qwen2_moe" and getattr(config, "shared_expert_intermediate_size", 0):
        raise UnsupportedModelError(f"shared experts (shared_expert_intermediate_size) are implemented for Qwen2-MoE "
                                    f"only, not {family}")
    if family not in ("qwen2", "qwen2_moe", "gpt_oss", "glm4_moe") and getattr(config, "attention_bias", False):
        # Llama / Mistral / Qwen3 configs put a bias on q, k, v and o_proj together.
        raise UnsupportedModelError(f"attention_bias=True ({family}: biases on q/k/v and o_proj): the o_proj bias is "
                                    f"not implemented")


@dataclass(frozen=True)
class ModelArgs:
    family: str
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_dim: int
    vocab_size: int
    norm_eps: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    qkv_bias: bool
    qk_norm: bool
    sliding_window: int | None
    hf_config: Any  # kept for rope initialisation through transformers' own functions
    # Gemma 3's switches (the Llama decoder otherwise):
    activation: str = "silu"  # the MLP gate's activation: silu (SwiGLU) or gelu_pytorch_tanh (GeGLU)
    # Every RMSNorm multiplies by (1 + w): the checkpoint's weights are folded to 1 + w in fp32 at load.
    norm_unit_offset: bool = False
    # Four norms per layer: the attention and MLP outputs are normed before their residual adds.
    sandwich_norms: bool = False
    embed_scale: float | None = None  # the embedding is multiplied by this (Gemma: sqrt(hidden) in bf16)
    attn_scale: float | None = None  # softmax scale when it is not head_dim ** -0.5 (Gemma: query_pre_attn_scalar)
    # Per layer: "sliding_attention" (within sliding_window) or "full_attention"; None = every layer alike (the
    # window, if any, on every layer). Also selects the layer's RoPE table where the config has one per kind.
    layer_types: tuple[str, ...] | None = None
    # The checkpoint's MLP size when hidden_dim was padded with zero units so that every chip's share is whole tiles
    # (tt_models.parallel.pad_mlp); None when it is the checkpoint's own.
    mlp_padded_from: int | None = None
    # Mixture of experts (n_experts 0: every MLP is dense). A MoE layer's MLP is a router choosing experts_per_tok of
    # n_experts expert MLPs of moe_hidden_dim units for each token, their outputs summed with the router's weights:
    # softmax over all experts' logits, the top k kept, renormalized to sum 1 when norm_topk_prob (Mixtral always).
    n_experts: int = 0
    experts_per_tok: int = 0
    moe_hidden_dim: int = 0
    norm_topk_prob: bool = False
    # The checkpoint's expert count when n_experts was padded with never-selected experts so that every chip holds
    # the same number (tt_models.parallel.pad_mlp); None when it is the checkpoint's own.
    experts_padded_from: int | None = None
    # Per layer, whether its MLP is the MoE block (Qwen3-MoE's mlp_only_layers / decoder_sparse_step keep some dense).
    moe_layers: tuple[bool, ...] = ()
    # Qwen2-MoE's shared expert: a SwiGLU MLP of this many units that every token of a MoE layer also runs, scaled by
    # sigmoid(shared_expert_gate . x) and added to the routed experts' sum (0: none). GLM-4.5's shared experts
    # (shared_expert_gated False) are added as they are.
    shared_expert_dim: int = 0
    shared_expert_gated: bool = True
    # How the router scores experts: "softmax" over the logits, or "sigmoid" of each logit (GLM-4.5, DeepSeek-V3),
    # where the top k are chosen by score + a per-expert correction bias (feed_forward.gate.score_bias) and the
    # chosen scores, renormalized when norm_topk_prob, are multiplied by routed_scaling.
    router_scoring: str = "softmax"
    routed_scaling: float = 1.0
    # DeepSeek-V3's group-limited routing (n_group, topk_group): the experts are n_group consecutive groups, and a
    # token chooses only among the topk_group groups whose two best score + bias sum highest. None: no limit.
    expert_groups: tuple[int, int] | None = None
    # GPT-OSS's switches: biases on the router and on every expert's gate, up and down projections; the experts'
    # clamped SwiGLU (alpha, limit): (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha * g), g = min(gate, limit)
    # (None: SiLU(gate) * up); a bias on o_proj; one learned sink logit per attention head.
    moe_bias: bool = False
    swiglu_clamp: tuple[float, float] | None = None
    o_bias: bool = False
    attention_sinks: bool = False
    # Whether the config keeps one RoPE setting per layer type (Gemma 3), so that each type has its own table.
    rope_per_kind: bool = False
    # The leading channels of each head that RoPE rotates (partial_rotary_factor * head_dim); the rest pass as they
    # are. None: the whole head.
    rotary_dim: int | None = None
    # DeepSeek-V3's multi-latent attention (None: the usual heads). Its cache is one head of mla.row channels per
    # position, so n_kv_heads is 1 and head_dim is mla.row: what every KV-cache size reads.
    mla: MLA | None = None

    @property
    def rope_dim(self) -> int:
        """The width of the RoPE tables: a head's (MLA: its rotary part's)."""
        return self.mla.rope_dim if self.mla is not None else self.head_dim

    @property
    def kv_caches_per_layer(self) -> int:
        """K and V, or MLA's one latent cache."""
        return 1 if self.mla is not None else 2

    @classmethod
    def from_hf_config(cls, config: Any) -> ModelArgs:
        archs = list(getattr(config, "architectures", None) or [])
        if not archs:  # e.g. a config read from a GGUF file names only its model_type
            model_type = getattr(config, "model_type", "")
            model_type = MODEL_TYPES.get(model_type, model_type)
            archs = [a for a, fam in SUPPORTED_ARCHITECTURES.items() if fam == model_type]
        arch = next((a for a in archs if a.removeprefix("TT") in SUPPORTED_ARCHITECTURES), None)
        refused = next((a for a in archs if a.removeprefix("TT") in REFUSED_ARCHITECTURES), None)
        if arch is None and refused is not None:
            raise UnsupportedModelError(f"{refused}: {REFUSED_ARCHITECTURES[refused.removeprefix('TT')]}")
        if arch is None:
            raise UnsupportedModelError(
                f"unsupported architecture {archs or getattr(config, 'model_type', '?')}; "
                f"supported: {', '.join(SUPPORTED_ARCHITECTURES)}"
            )
        family = SUPPORTED_ARCHITECTURES[arch.removeprefix("TT")]
        _refuse_unsupported_fields(config, family)
        rope = getattr(config, "rope_parameters", None) or {}
        # Gemma 3 keeps one RoPE setting per layer kind ({"full_attention": {...}, "sliding_attention": {...}}).
        rope_per_kind = bool(rope) and all(k in (SLIDING, FULL) for k in rope)
        for params in (rope.values() if rope_per_kind else [rope]):
            rope_type = params.get("rope_type", "default")
            if rope_type not in SUPPORTED_ROPE_TYPES:
                raise UnsupportedModelError(f"rope type {rope_type!r} is not supported; supported: "
                                            f"{SUPPORTED_ROPE_TYPES}")
        act = getattr(config, "hidden_activation", None) or getattr(config, "hidden_act", "silu")
        acts = SUPPORTED_ACTIVATIONS.get(family, DEFAULT_ACTIVATIONS)
        if act not in acts:
            raise UnsupportedModelError(f"activation {act!r} is not supported for {family}; supported: {acts}")
        if getattr(config, "mlp_bias", False):
            raise UnsupportedModelError("MLP biases (mlp_bias=True) are not supported")
        n_heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // n_heads
        window = None
        qwen = family in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe")
        if family in ("mistral", "gemma3", "mixtral", "gpt_oss") or (qwen and getattr(config, "use_sliding_window",
                                                                                      False)):
            window = getattr(config, "sliding_window", None)
        layer_types = None
        if family in ("gemma3", "gpt_oss"):  # GPT-OSS: sliding (128) and full layers alternate
            layer_types = tuple(config.layer_types)
            if len(layer_types) != config.num_hidden_layers or any(t not in (SLIDING, FULL) for t in layer_types):
                raise UnsupportedModelError(f"layer_types {list(layer_types)}: expected one of {SLIDING!r} / "
                                            f"{FULL!r} per layer")
            if window is None and SLIDING in layer_types:
                raise UnsupportedModelError("sliding_attention layers without a sliding_window")
        elif window is not None:
            if any(t != SLIDING for t in getattr(config, "layer_types", None) or []):
                raise UnsupportedModelError("mixed sliding/full attention layers are not supported")
        gemma, gpt_oss, glm = family == "gemma3", family == "gpt_oss", family == "glm4_moe"
        rotary_dim = None
        partial = float(getattr(config, "partial_rotary_factor", 1.0) or 1.0) if glm else 1.0
        if partial != 1.0:
            rotary_dim = int(head_dim * partial)  # (as transformers' rope functions size it)
            if rotary_dim % 2 or not 0 < rotary_dim < head_dim:
                raise UnsupportedModelError(f"partial_rotary_factor {partial} of head_dim {head_dim}: the rotated "
                                            f"part must be an even number of channels")
        moe = _moe_fields(config, family) if family in MOE_FAMILIES else {}
        mla, n_kv_heads, attn_scale = None, getattr(config, "num_key_value_heads", None) or n_heads, None
        if family == "deepseek_v3":
            mla = _mla(config)
            n_kv_heads, head_dim = 1, mla.row
            from transformers.models.deepseek_v3.modeling_deepseek_v3 import yarn_apply_mscale

            # HF's softmax scale: (nope + rope) ** -0.5, times YaRN's mscale squared where the RoPE is YaRN's.
            attn_scale = float(yarn_apply_mscale(config.rope_parameters, (mla.nope_dim + mla.rope_dim) ** -0.5))
        return cls(
            family=family,
            dim=config.hidden_size,
            n_layers=config.num_hidden_layers,
            n_heads=n_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            hidden_dim=config.intermediate_size,
            vocab_size=config.vocab_size,
            norm_eps=config.rms_norm_eps,
            max_position_embeddings=config.max_position_embeddings,
            tie_word_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
            # Qwen2-MoE's config names it qkv_bias (on by default, as Qwen2's fixed q/k/v biases).
            qkv_bias=family == "qwen2" or (family == "qwen2_moe" and bool(getattr(config, "qkv_bias", True)))
            or ((gpt_oss or glm) and bool(getattr(config, "attention_bias", False))),
            qk_norm=family in ("qwen3", "gemma3", "qwen3_moe") or (glm and bool(getattr(config, "use_qk_norm", False))),
            sliding_window=window,
            hf_config=config,
            activation=act,
            norm_unit_offset=gemma,
            sandwich_norms=gemma,
            # HF multiplies by sqrt(hidden) cast to the weights' dtype: bf16, as Gemma checkpoints are.
            embed_scale=float(torch.tensor(config.hidden_size**0.5).to(torch.bfloat16)) if gemma else None,
            attn_scale=config.query_pre_attn_scalar**-0.5 if gemma else attn_scale,
            layer_types=layer_types,
            o_bias=gpt_oss and bool(getattr(config, "attention_bias", False)),
            attention_sinks=gpt_oss,
            rope_per_kind=rope_per_kind,
            rotary_dim=rotary_dim,
            mla=mla,
            **moe,
        )

    def is_moe(self, layer: int) -> bool:
        """Whether layer `layer`'s MLP is the mixture-of-experts block."""
        return bool(self.moe_layers) and self.moe_layers[layer]

    def window(self, layer: int) -> int | None:
        """The sliding window of layer `layer`'s attention (None: it attends to every earlier position)."""
        if self.layer_types is not None and self.layer_types[layer] != SLIDING:
            return None
        return self.sliding_window

    def rope_kind(self, layer: int) -> str | None:
        """Which RoPE table layer `layer` reads: its layer type where the config has one per kind, else None."""
        return self.layer_types[layer] if self.layer_types is not None and self.rope_per_kind else None

    def check_tt_limits(self) -> None:
        """Shapes the TT ops need; refused up front instead of failing inside an op."""
        if self.head_dim % 32:
            raise UnsupportedModelError(f"head_dim {self.head_dim} is not a multiple of 32 (TT tile width)")
        if self.n_heads % self.n_kv_heads:
            raise UnsupportedModelError(f"{self.n_heads} heads are not a multiple of {self.n_kv_heads} kv heads")
        if self.dim % 32:
            raise UnsupportedModelError(f"hidden size {self.dim} must be a multiple of 32 (TT tile width)")
