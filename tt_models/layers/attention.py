"""Attention with a paged KV cache.

Prefill (one user): fused QKV matmul -> heads -> RoPE -> paged_fill_cache, then causal SDPA over the prompt, or
chunked SDPA over the paged cache when earlier tokens are already cached (long prompts, prefix-cache hits).
Decode (whole batch): fused QKV -> heads -> RoPE -> paged_fused_update_cache (K and V) -> paged SDPA decode; users
at position -1 (empty slots) leave the cache untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tt_models.backend import ttnn
from tt_models.model_args import ModelArgs
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore


@dataclass
class Rot:
    """cos/sin for the current call and the rotation matrix."""

    cos: Any
    sin: Any
    trans_mat: Any


class Attention:
    def __init__(self, args: ModelArgs, weights: WeightStore, layer: int, prec: LayerPrecision) -> None:
        p = f"layers.{layer}.attention."
        self.args, self.prec, self.layer = args, prec, layer
        self.scale = args.head_dim**-0.5
        qkv = [p + "wq.weight", p + "wk.weight", p + "wv.weight"]
        self.wqkv = weights.linear(qkv, prec.wqkv, p + "wqkv")
        self.bqkv = weights.bias([n.replace("weight", "bias") for n in qkv], p + "bqkv") if args.qkv_bias else None
        self.wo = weights.linear([p + "wo.weight"], prec.wo, p + "wo")
        self.q_norm = weights.norm(p + "q_norm.weight") if args.qk_norm else None
        self.k_norm = weights.norm(p + "k_norm.weight") if args.qk_norm else None

    def _qk_norm(self, q: Any, k: Any) -> tuple[Any, Any]:
        if self.q_norm is None:
            return q, k
        eps = self.args.norm_eps
        return (ttnn.rms_norm(q, epsilon=eps, weight=self.q_norm), ttnn.rms_norm(k, epsilon=eps, weight=self.k_norm))

    def prefill(self, x: Any, rot: Rot, kv_cache: list, page_table: Any, user_id: int,
                chunk_start: int = 0, chunk_page_table: Any = None, fill_len: int | None = None) -> Any:
        a, k_ops = self.args, self.prec.kernels
        qkv = ttnn.linear(x, self.wqkv, bias=self.bqkv, dtype=self.prec.residual,
                          compute_kernel_config=k_ops["LI_QKV_PREFILL"])
        q, k, v = ttnn.experimental.nlp_create_qkv_heads(qkv, num_heads=a.n_heads, num_kv_heads=a.n_kv_heads,
                                                         transpose_k_heads=False)
        ttnn.deallocate(qkv)
        q, k = self._qk_norm(q, k)
        q = ttnn.experimental.rotary_embedding_llama(q, rot.cos, rot.sin, rot.trans_mat)
        k = ttnn.experimental.rotary_embedding_llama(k, rot.cos, rot.sin, rot.trans_mat)

        k_cache, v_cache = kv_cache
        fill_table = chunk_page_table if chunk_page_table is not None else page_table
        fill_user = 0 if chunk_page_table is not None else user_id
        for cache, t in ((k_cache, k), (v_cache, v)):
            t_fill = ttnn.typecast(t, cache.dtype) if t.dtype != cache.dtype else t
            if fill_len is not None and fill_len < t_fill.shape[2]:
                # Only the rows the user's pages hold; the rest is bucket padding beyond its last block.
                t_fill = ttnn.slice(t_fill, [0, 0, 0, 0], [1, t_fill.shape[1], fill_len, t_fill.shape[3]])
            ttnn.experimental.paged_fill_cache(cache, t_fill, fill_table, batch_idx=fill_user)

        if chunk_start > 0:
            attn = ttnn.transformer.chunked_scaled_dot_product_attention(
                q, k_cache, v_cache, page_table, chunk_start, scale=self.scale,
                compute_kernel_config=k_ops["SDPA_PREFILL"])
        else:
            attn = ttnn.transformer.scaled_dot_product_attention(
                q, k, v, is_causal=True, scale=self.scale, sliding_window_size=a.sliding_window,
                compute_kernel_config=k_ops["SDPA_PREFILL"])
        for t in (q, k, v):
            ttnn.deallocate(t)
        out = ttnn.experimental.nlp_concat_heads(attn)
        return ttnn.linear(out, self.wo, dtype=self.prec.residual, compute_kernel_config=k_ops["LI_O_PREFILL"])

    def decode(self, x: Any, rot: Rot, kv_cache: list, current_pos: Any, page_table: Any) -> Any:
        a, k_ops = self.args, self.prec.kernels
        qkv = ttnn.linear(x, self.wqkv, bias=self.bqkv, dtype=self.prec.residual,
                          compute_kernel_config=k_ops["LI_QKV_DECODE"])
        q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(qkv, num_heads=a.n_heads, num_kv_heads=a.n_kv_heads)
        ttnn.deallocate(qkv)
        q, k = self._qk_norm(q, k)
        q = ttnn.experimental.rotary_embedding_llama(q, rot.cos, rot.sin, rot.trans_mat, is_decode_mode=True)
        k = ttnn.experimental.rotary_embedding_llama(k, rot.cos, rot.sin, rot.trans_mat, is_decode_mode=True)
        k_cache, v_cache = kv_cache
        # K and V land at the same positions through the same page table: one fused update, as tt_transformers does.
        ttnn.experimental.paged_fused_update_cache(k_cache, k, v_cache, v, update_idxs_tensor=current_pos,
                                                   page_table=page_table)
        attn = ttnn.transformer.paged_scaled_dot_product_attention_decode(
            q, k_cache, v_cache, cur_pos_tensor=current_pos, page_table_tensor=page_table, scale=self.scale,
            sliding_window_size=a.sliding_window, compute_kernel_config=k_ops["SDPA_DECODE"])
        for t in (q, k, v):
            ttnn.deallocate(t)
        out = ttnn.experimental.nlp_concat_heads_decode(attn, num_heads=a.n_heads)
        return ttnn.linear(out, self.wo, dtype=self.prec.residual, compute_kernel_config=k_ops["LI_O_DECODE"])
