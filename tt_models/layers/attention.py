"""Attention with a paged KV cache, on the layouts a device accepts (tt_models/layouts.py).

Prefill (one user, interleaved DRAM): fused QKV matmul -> heads -> RoPE -> K/V typecast to the cache dtype ->
paged_fill_cache, then causal SDPA over the prompt, or chunked SDPA over the paged cache when earlier tokens are
already cached (long prompts, prefix-cache hits) -> concat heads -> WO.
Decode (whole batch): QKV from the width-sharded residual -> heads height-sharded one user per core (Q and V on the
first B cores, K on the next B) -> RoPE next to each -> paged_fused_update_cache (K and V) -> paged SDPA decode ->
heads regathered per user -> concat heads (one head per core) -> WO; users at position -1 leave the cache untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tt_models.backend import ttnn
from tt_models.layers.collectives import gather_users, reduce_inputs, reduce_partials
from tt_models.layers.linear import prefill_linear
from tt_models.layouts import ModelLayouts, fp32_representable, sdpa_prefill
from tt_models.model_args import ModelArgs
from tt_models.parallel import (
    TPPlan,
    column_parallel,
    head_split,
    output_columns,
    residual_columns,
    row_parallel,
    single_device_plan,
)
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore


@dataclass(frozen=True)
class UserSplit:
    """2-D meshes: the decode users split over each row's chips for attention (tt_transformers on a Galaxy). `ids`
    [1, U] uint32 per chip: the users whose rows of the QKV product it takes (an embedding lookup: a gather, so the
    undefined rows of empty users never mix into the others, as a 0/1 selection matmul would mix their NaN); their
    attention outputs are gathered back along the row before WO."""

    ids: Any


@dataclass
class Rot:
    """cos/sin and the rotation matrix for the current call; decode holds one set next to the Q heads and one next
    to the K heads (k_cos, k_sin, k_trans_mat), and on a 2-D mesh the split of the users over a row's chips."""

    cos: Any
    sin: Any
    trans_mat: Any
    k_cos: Any = None
    k_sin: Any = None
    k_trans_mat: Any = None
    users: UserSplit | None = None


class Attention:
    def __init__(self, args: ModelArgs, weights: WeightStore, layer: int, prec: LayerPrecision,
                 layouts: ModelLayouts, plan: TPPlan | None = None) -> None:
        p = f"layers.{layer}.attention."
        plan = plan or single_device_plan(args)
        # Ops see this chip's heads (tensor parallel: its share of Q heads and the KV heads they read).
        self.args, self.prec, self.layer, self.layouts, self.plan = plan.local_args(args), prec, layer, layouts, plan
        self.scale = args.attn_scale or args.head_dim**-0.5
        self.window = args.window(layer)  # this layer's sliding window (Gemma: only its sliding layers have one)
        qkv = [p + "wq.weight", p + "wk.weight", p + "wv.weight"]
        # Column-parallel QKV, each chip's columns [its q | its k | its v]; row-parallel WO over the same heads.
        qkv_shard = column_parallel(plan, plan.qkv_rows(args))
        self.wqkv = weights.linear(qkv, prec.wqkv, p + "wqkv", layouts.weights["wqkv"], shard=qkv_shard)
        self.bqkv = (weights.bias([n.replace("weight", "bias") for n in qkv], p + "bqkv",
                                  shard=output_columns(plan, plan.qkv_rows(args))) if args.qkv_bias else None)
        self.wo = weights.linear([p + "wo.weight"], prec.wo, p + "wo", layouts.weights["wo"], shard=row_parallel(plan))
        # GPT-OSS: a bias on WO's output, added once to each chip's columns of the reduced sum (every chip adding
        # it before the reduction would count it N times).
        self.bo = (weights.bias([p + "wo.bias"], p + "bo", shard=residual_columns(plan, 3)) if args.o_bias
                   else None)
        # GPT-OSS: one learned logit per head joins its softmax's denominator (HF concatenates it to the scaled
        # Q.K logits and drops its column after the softmax); the SDPA ops take it per head of this chip.
        self.sink_prefill = self.sink_decode = None
        if args.attention_sinks:
            self.sink_prefill = weights.sinks(p + "sinks", p + "sinks.prefill", self.scale, decode=False,
                                              shard=head_split(plan, 1))
            self.sink_decode = weights.sinks(p + "sinks", p + "sinks.decode", self.scale, decode=True,
                                             shard=head_split(plan, 0))
        self.q_norm = weights.norm(p + "q_norm.weight") if args.qk_norm else None
        self.k_norm = weights.norm(p + "k_norm.weight") if args.qk_norm else None

    def _qk_norm(self, q: Any, k: Any) -> tuple[Any, Any]:
        if self.q_norm is None:
            return q, k
        eps = self.args.norm_eps
        return (ttnn.rms_norm(q, epsilon=eps, weight=self.q_norm), ttnn.rms_norm(k, epsilon=eps, weight=self.k_norm))

    def _qk_norm_decode(self, q: Any, k: Any) -> tuple[Any, Any]:
        """The per-head norms of the height-sharded heads: rms_norm takes no height-sharded input, so each goes
        through L1 interleaved and back to its one-user-per-core placement."""
        if self.q_norm is None:
            return q, k
        out = []
        for t, w in ((q, self.q_norm), (k, self.k_norm)):
            placed = t.memory_config()
            flat = ttnn.sharded_to_interleaved(t, ttnn.L1_MEMORY_CONFIG)
            ttnn.deallocate(t)
            normed = ttnn.rms_norm(flat, epsilon=self.args.norm_eps, weight=w, memory_config=ttnn.L1_MEMORY_CONFIG)
            ttnn.deallocate(flat)
            out.append(ttnn.interleaved_to_sharded(normed, placed))
            ttnn.deallocate(normed)
        return out[0], out[1]

    def _qkv_bias(self, qkv: Any) -> Any:
        return qkv if self.bqkv is None else ttnn.add(qkv, self.bqkv, dtype=self.prec.residual)

    def _o_bias(self, out: Any, memory_config: Any) -> Any:
        """WO's bias on this chip's columns of the (reduced) output, interleaved in memory_config."""
        if self.bo is None:
            return out
        if out.is_sharded():  # one chip's decode: the width-sharded matmul output
            flat = ttnn.sharded_to_interleaved(out, memory_config)
            ttnn.deallocate(out)
            out = flat
        biased = ttnn.add(out, self.bo, dtype=self.prec.residual, memory_config=memory_config)
        ttnn.deallocate(out)
        return biased

    # ---------------- prefill ----------------
    def prefill(self, x: Any, rot: Rot, kv_cache: list, page_table: Any, user_id: int,
                chunk_start: int = 0, chunk_page_table: Any = None, fill_len: int | None = None) -> Any:
        a, k_ops, lay = self.args, self.prec.kernels, self.layouts
        seq, hd = x.shape[-2], a.head_dim
        qkv_n = hd * (a.n_heads + 2 * a.n_kv_heads)
        mm = lay.prefill_matmul(seq, a.dim, qkv_n, x, self.wqkv, self.prec.residual, k_ops["LI_QKV_PREFILL"])
        qkv = prefill_linear(x, self.wqkv, mm, dtype=self.prec.residual, memory_config=ttnn.DRAM_MEMORY_CONFIG,
                             compute_kernel_config=k_ops["LI_QKV_PREFILL"])
        qkv = self._qkv_bias(reduce_inputs(qkv, self.plan, ttnn.DRAM_MEMORY_CONFIG))
        q, k, v = ttnn.experimental.nlp_create_qkv_heads(qkv, num_heads=a.n_heads, num_kv_heads=a.n_kv_heads,
                                                         transpose_k_heads=False,
                                                         memory_config=ttnn.DRAM_MEMORY_CONFIG)
        ttnn.deallocate(qkv)
        q, k = self._qk_norm(q, k)
        q = ttnn.experimental.rotary_embedding_llama(q, rot.cos, rot.sin, rot.trans_mat)
        k = ttnn.experimental.rotary_embedding_llama(k, rot.cos, rot.sin, rot.trans_mat)

        k_cache, v_cache = kv_cache
        fill_table = chunk_page_table if chunk_page_table is not None else page_table
        fill_user = 0 if chunk_page_table is not None else user_id
        cached = []
        for cache, t in ((k_cache, k), (v_cache, v)):
            t_cast = ttnn.typecast(t, cache.dtype) if t.dtype != cache.dtype else t
            cached.append(t_cast)
            t_fill = t_cast
            if fill_len is not None and fill_len < t_fill.shape[2]:
                # Only the rows the user's pages hold; the rest is bucket padding beyond its last block.
                t_fill = ttnn.slice(t_fill, [0, 0, 0, 0], [1, t_fill.shape[1], fill_len, t_fill.shape[3]])
            ttnn.experimental.paged_fill_cache(cache, t_fill, fill_table, batch_idx=fill_user)

        if chunk_start > 0:
            attn = ttnn.transformer.chunked_scaled_dot_product_attention(
                q, k_cache, v_cache, page_table, chunk_start, scale=fp32_representable(self.scale),
                program_config=sdpa_prefill(seq, chunk_start, lay.grid, hd),
                compute_kernel_config=k_ops["SDPA_PREFILL"], sliding_window_size=self.window,
                attention_sink=self.sink_prefill)
        else:
            # Attend to K/V as the cache holds them (rounded to its dtype), as a prefix-cache hit's chunked SDPA and
            # every decode step do: otherwise greedy output would depend on whether the prefix was cached.
            attn = ttnn.transformer.scaled_dot_product_attention(
                q, cached[0], cached[1], is_causal=True, scale=self.scale, sliding_window_size=self.window,
                attention_sink=self.sink_prefill, program_config=sdpa_prefill(seq, 0, lay.grid, hd),
                compute_kernel_config=k_ops["SDPA_PREFILL"])
        for t in {id(t): t for t in (q, k, v, *cached)}.values():
            ttnn.deallocate(t)
        out = ttnn.experimental.nlp_concat_heads(attn, memory_config=ttnn.DRAM_MEMORY_CONFIG)
        # WO's output is the residual's width as reduce-scattered (padded: TPPlan.dim_pad): the weight's columns.
        mm = lay.prefill_matmul(seq, a.n_heads * hd, self.wo.shape[-1], out, self.wo, self.prec.residual,
                                k_ops["LI_O_PREFILL"])
        out = prefill_linear(out, self.wo, mm, dtype=self.prec.residual, memory_config=ttnn.DRAM_MEMORY_CONFIG,
                             compute_kernel_config=k_ops["LI_O_PREFILL"])
        dram = ttnn.DRAM_MEMORY_CONFIG
        return self._o_bias(reduce_partials(out, self.plan, dram), dram)

    # ---------------- decode ----------------
    def decode(self, x: Any, rot: Rot, kv_cache: list, current_pos: Any, page_table: Any,
               writes: Sequence[Any] | None = None) -> Any:
        """writes: the speculative verify step's cache writes (Model.decode), else one write at current_pos."""
        a, k_ops, d = self.args, self.prec.kernels, self.layouts.decode
        qkv = ttnn.linear(x, self.wqkv, dtype=self.prec.residual, memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG,
                          program_config=d.qkv.program, compute_kernel_config=k_ops["LI_QKV_DECODE"])
        flat = ttnn.sharded_to_interleaved(qkv, ttnn.L1_MEMORY_CONFIG)
        ttnn.deallocate(qkv)
        qkv = self._qkv_bias(reduce_inputs(flat, self.plan, ttnn.L1_MEMORY_CONFIG))
        if rot.users is not None:  # 2-D: this chip's users only (the row's chips share them out)
            mine = ttnn.embedding(rot.users.ids, qkv, layout=ttnn.TILE_LAYOUT, memory_config=ttnn.L1_MEMORY_CONFIG)
            ttnn.deallocate(qkv)
            qkv = ttnn.reshape(mine, (1, 1, mine.shape[-2], mine.shape[-1]))
        q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(
            qkv, num_heads=a.n_heads, num_kv_heads=a.n_kv_heads, memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
        ttnn.deallocate(qkv)
        # The heads come one user per core on the first B cores; K moves to the next B so that K and V (on disjoint
        # cores) update the cache in one op.
        k_moved = ttnn.to_memory_config(k, d.k_heads)
        ttnn.deallocate(k)
        k = k_moved
        q, k = self._qk_norm_decode(q, k)
        q = ttnn.experimental.rotary_embedding_llama(q, rot.cos, rot.sin, rot.trans_mat, is_decode_mode=True)
        k = ttnn.experimental.rotary_embedding_llama(k, rot.k_cos, rot.k_sin, rot.k_trans_mat, is_decode_mode=True)
        k_cache, v_cache = kv_cache
        for idxs in writes or (current_pos,):
            ttnn.experimental.paged_fused_update_cache(k_cache, k, v_cache, v, update_idxs_tensor=idxs,
                                                       page_table=page_table)
        attn = ttnn.transformer.paged_scaled_dot_product_attention_decode(
            q, k_cache, v_cache, page_table, cur_pos_tensor=current_pos, scale=self.scale,
            sliding_window_size=self.window, attention_sink=self.sink_decode,
            program_config=d.sdpa, memory_config=ttnn.DRAM_MEMORY_CONFIG,
            compute_kernel_config=k_ops["SDPA_DECODE"])
        for t in (q, k, v):
            ttnn.deallocate(t)
        if rot.users is not None:  # every user's heads again, for WO
            attn = gather_users(attn, self.plan)
        attn = ttnn.to_memory_config(attn, d.scores)
        out = ttnn.experimental.nlp_concat_heads_decode(attn, num_heads=a.n_heads)
        ttnn.deallocate(attn)
        out = ttnn.linear(out, self.wo, dtype=self.prec.residual, memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG,
                          program_config=d.wo.program, compute_kernel_config=k_ops["LI_O_DECODE"])
        return self._o_bias(reduce_partials(out, self.plan, ttnn.L1_MEMORY_CONFIG), ttnn.L1_MEMORY_CONFIG)
