"""HF -> Meta weight names and the per-head q/k permutation TT's interleaved rotary embedding needs.

HF rotates channel j with channel j + head_dim/2 ("rotate half"); TT rotates adjacent pairs (2j, 2j+1). Permuting
the rows of each q/k head so that new row 2j = old row j and new row 2j+1 = old row j + head_dim/2 makes the two
agree; q.k is unchanged. The same permutation applies to q/k biases and q/k-norm weights. V and WO are untouched,
so the cached K is in the permuted order.
"""

from __future__ import annotations

from typing import Any

import torch

_RENAMES = (
    ("model.", ""),
    ("embed_tokens", "tok_embeddings"),
    ("lm_head", "output"),
    ("input_layernorm", "attention_norm"),
    ("post_attention_layernorm", "ffn_norm"),
    ("self_attn", "attention"),
    ("block_sparse_moe", "feed_forward"),  # Mixtral's MoE block (its experts' w1/w2/w3 keep their names)
    ("mlp.shared_experts.", "mlp.shared_expert."),  # GLM-4.5's (ungated) shared experts: one MLP, as Qwen2-MoE's
    ("gate.e_score_correction_bias", "gate.score_bias"),  # GLM-4.5 / DeepSeek-V3: added to the scores to choose
    ("mlp.router", "mlp.gate"),  # GPT-OSS's router (weight and bias)
    ("mlp", "feed_forward"),
    ("q_proj", "wq"),
    ("k_proj", "wk"),
    ("v_proj", "wv"),
    ("o_proj", "wo"),
    ("gate_proj", "w1"),
    ("down_proj", "w2"),
    ("up_proj", "w3"),
)


# Gemma's four norms per layer: HF's post_attention_layernorm norms the attention output (it is the Llama families'
# pre-MLP norm), pre_feedforward_layernorm is the pre-MLP norm.
_SANDWICH_RENAMES = (
    ("post_attention_layernorm", "post_attention_norm"),
    ("pre_feedforward_layernorm", "ffn_norm"),
    ("post_feedforward_layernorm", "post_ffn_norm"),
)


def meta_name(hf_name: str, sandwich_norms: bool = False) -> str:
    for old, new in (_SANDWICH_RENAMES if sandwich_norms else ()) + _RENAMES:
        hf_name = hf_name.replace(old, new)
    return hf_name


def interleave_heads(w: torch.Tensor, n_heads: int, head_dim: int, rotary_dim: int | None = None) -> torch.Tensor:
    """Reorder each head's rows (dim 0) from rotate-half to interleaved pairs. `rotary_dim` (partial RoPE): only
    each head's first rotary_dim rows rotate (HF's rotate-half within them); the rest keep their places."""
    rd = rotary_dim or head_dim
    if w.shape[0] != n_heads * head_dim or rd % 2 or rd > head_dim:
        raise ValueError(f"cannot split {w.shape[0]} rows into {n_heads} heads of head_dim {head_dim} with {rd} "
                         f"rotated (must be even)")
    order = torch.stack([torch.arange(rd // 2), torch.arange(rd // 2) + rd // 2], 1).reshape(-1)
    order = torch.cat([order, torch.arange(rd, head_dim)])
    return w.reshape(n_heads, head_dim, *w.shape[1:])[:, order].reshape(w.shape)


def split_fused_experts(name: str, w: torch.Tensor) -> dict[str, torch.Tensor] | None:
    """GPT-OSS keeps a layer's experts as 3-D tensors, x @ W (transposed against nn.Linear's [out, in]), with the
    gate and up columns interleaved (gate = [..., ::2], up = [..., 1::2]): `mlp.experts.gate_up_proj` [E, H, 2I]
    (+ `_bias` [E, 2I]) and `mlp.experts.down_proj` [E, I, H] (+ `_bias` [E, H]). Returns each expert's Meta
    w1 (gate) / w3 (up) / w2 (down) weight [out, in] and bias (views, no copies), or None for another tensor."""
    prefix, _, tail = name.rpartition(".mlp.experts.")
    if not prefix or tail not in ("gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"):
        return None
    base = meta_name(prefix + ".mlp.experts")
    out: dict[str, torch.Tensor] = {}
    for e in range(w.shape[0]):
        p = f"{base}.{e}."
        if tail == "gate_up_proj":
            out[p + "w1.weight"], out[p + "w3.weight"] = w[e][:, ::2].t(), w[e][:, 1::2].t()
        elif tail == "gate_up_proj_bias":
            out[p + "w1.bias"], out[p + "w3.bias"] = w[e][::2], w[e][1::2]
        elif tail == "down_proj":
            out[p + "w2.weight"] = w[e].t()
        else:
            out[p + "w2.bias"] = w[e]
    return out


def split_latent_heads(w: torch.Tensor, n_heads: int, nope_dim: int, v_dim: int) -> tuple[list, list]:
    """DeepSeek's kv_b_proj [heads * (nope + v), kv_lora] as each head's absorbed matrices, [out, in] as Linear
    weights: uk[h] [kv_lora, nope] maps the head's query part (q_nope @ uk[h].T, its latent query: q.k_nope =
    (q_nope @ W_k) . c), uv[h] [v, kv_lora] maps its attention over the latents to its value (o = a @ uv[h].T)."""
    per_head = w.reshape(n_heads, nope_dim + v_dim, w.shape[-1])
    return ([per_head[h, :nope_dim].t() for h in range(n_heads)], [per_head[h, nope_dim:] for h in range(n_heads)])


def hf_to_meta(state_dict: dict[str, torch.Tensor], n_heads: int, n_kv_heads: int, head_dim: int,
               sandwich_norms: bool = False, norm_unit_offset: bool = False,
               rotary_dim: int | None = None, mla: Any = None) -> dict[str, torch.Tensor]:
    """Meta-named copy of an HF state dict, q/k (weights, biases, norms) permuted for interleaved RoPE (of each
    head's first `rotary_dim` channels where RoPE is partial).

    Tensors are shared, not copied, where no permutation applies; a missing lm_head or embedding (tied weights)
    is filled with the other. `sandwich_norms`: Gemma's four norms per layer; `norm_unit_offset`: every RMSNorm
    weight w becomes 1 + w in fp32 (Gemma's norm multiplies by 1 + w, in fp32 as HF computes it). `mla`
    (DeepSeek-V3's tt_models.model_args.MLA): the rotary channels are already in adjacent pairs (nothing permuted),
    and kv_b_proj is split into each head's absorbed matrices (split_latent_heads: attention.uk.{h} / uv.{h}).
    """
    out: dict[str, torch.Tensor] = {}
    for name, w in state_dict.items():
        if "rotary_emb" in name:
            continue
        experts = split_fused_experts(name, w)
        if experts is not None:
            out.update(experts)
            continue
        new = meta_name(name, sandwich_norms)
        if norm_unit_offset and new.endswith("norm.weight"):
            w = w.float() + 1.0
        if mla is not None:
            if new.endswith(".attention.kv_b_proj.weight"):
                uk, uv = split_latent_heads(w, n_heads, mla.nope_dim, mla.v_dim)
                base = new.removesuffix("kv_b_proj.weight")
                out.update({f"{base}uk.{h}.weight": t for h, t in enumerate(uk)})
                out.update({f"{base}uv.{h}.weight": t for h, t in enumerate(uv)})
            else:
                out[new] = w
            continue
        try:
            if ".attention.wq." in new:
                w = interleave_heads(w, n_heads, head_dim, rotary_dim)
            elif ".attention.wk." in new:
                w = interleave_heads(w, n_kv_heads, head_dim, rotary_dim)
            elif ".attention.q_norm." in new or ".attention.k_norm." in new:
                w = interleave_heads(w, 1, head_dim, rotary_dim)  # one head_dim vector shared by all heads
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        out[new] = w
    # Tied embeddings: a checkpoint may store either copy (safetensors keeps one name of a shared tensor).
    if "output.weight" not in out and "tok_embeddings.weight" in out:
        out["output.weight"] = out["tok_embeddings.weight"]
    if "tok_embeddings.weight" not in out and "output.weight" in out:
        out["tok_embeddings.weight"] = out["output.weight"]
    return out


# A padded expert's router logit: no token's top k reaches it, and exp of it is 0 in every softmax.
NEVER_ROUTED = -1e30


def pad_mlp_weights(state_dict: dict[str, torch.Tensor], args: Any) -> dict[str, torch.Tensor]:
    """The Meta state dict padded as tt_models.parallel.pad_mlp padded `args`: every dense MLP to args.hidden_dim
    units with zeros (w1/w3 rows, w2 columns: silu(0) * 0 = 0), and every MoE layer to args.n_experts experts (zero
    weights and biases, zero router rows, and a router bias of NEVER_ROUTED for them: the checkpoint's own bias, or
    zeros, for the others; with sigmoid scores, a score bias of NEVER_ROUTED instead, as the bias is what chooses), so
    the output is unchanged."""
    hidden_dim = args.hidden_dim
    out = dict(state_dict)
    for name, w in state_dict.items():
        if name.endswith(("feed_forward.w1.weight", "feed_forward.w3.weight")) and w.shape[0] < hidden_dim:
            out[name] = torch.nn.functional.pad(w, (0, 0, 0, hidden_dim - w.shape[0]))
        elif name.endswith("feed_forward.w2.weight") and w.shape[1] < hidden_dim:
            out[name] = torch.nn.functional.pad(w, (0, hidden_dim - w.shape[1]))
    real = args.experts_padded_from
    if not real:
        return out
    for layer in range(args.n_layers):
        if not args.is_moe(layer):
            continue
        p = f"layers.{layer}.feed_forward."
        gate = state_dict[p + "gate.weight"]
        extra = args.n_experts - real
        out[p + "gate.weight"] = torch.cat([gate, gate.new_zeros(extra, gate.shape[1])])
        which = "gate.score_bias" if args.router_scoring == "sigmoid" else "gate.bias"
        bias = state_dict.get(p + which, gate.new_zeros(real))
        out[p + which] = torch.cat([bias, bias.new_full((extra,), NEVER_ROUTED)])
        # Each padded expert's tensors: zeros shaped as expert 0's (its weights, and GPT-OSS's biases).
        first = {n[len(p + "experts.0."):]: w for n, w in state_dict.items() if n.startswith(p + "experts.0.")}
        for e in range(real, args.n_experts):
            out.update({f"{p}experts.{e}.{tail}": w.new_zeros(w.shape) for tail, w in first.items()})
    return out
