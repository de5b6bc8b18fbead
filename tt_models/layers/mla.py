"""DeepSeek-V3's multi-latent attention with a paged latent cache, on the TT-NN MLA ops.

Each position caches one row of args.mla.row channels: the normed compressed KV c (kv_lora_rank) and the key's
rotary part k_pe (rope_dim, one head shared by all). A head's key is [W_k c, k_pe] and its value W_v c, so with the
key's up-projection absorbed into the query (q_lat = q_nope @ W_k, per head) every head's logits are
[q_lat, q_pe] . [c, k_pe] over the cached rows, and its output is (softmax @ c) @ W_v^T: the MLA ops take the cache
as keys and its first kv_lora_rank columns as values (tt-metal's DeepSeek-V3 computes the same way).

Prefill and decode share the projections, run on [1, 1, S, dim] rows (decode: the 32 users as rows, each at its own
position): Q (one projection, or the low-rank pair with its norm) -> heads [1, nh, S, nope + rope] -> RoPE on the
rotary part -> latent query per head (a batched matmul with the heads' W_k) -> [q_lat, q_pe]; the latent row ->
norm on c, RoPE on k_pe -> [c, k_pe]. Prefill fills the cache and runs flash_mla_prefill (or the chunked op over the
cache after a prefix); decode writes each user's row (paged_update_cache, one user per core) and runs the paged MLA
decode. Then each head's W_v, heads concatenated, WO. RoPE: the checkpoint's rotary channels are in adjacent pairs
(rope_interleave), as rotary_embedding_llama rotates them; decode rotates its users as rows, each with the cos/sin of
its position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tt_models.backend import ttnn
from tt_models.layers.attention import Rot
from tt_models.layers.linear import prefill_linear
from tt_models.layouts import ModelLayouts, fp32_representable, per_user, sdpa_prefill
from tt_models.model_args import ModelArgs
from tt_models.parallel import TPPlan, single_device_plan
from tt_models.precision import LayerPrecision, fixed_kernel
from tt_models.weights import WeightStore


class MLAttention:
    def __init__(self, args: ModelArgs, weights: WeightStore, layer: int, prec: LayerPrecision,
                 layouts: ModelLayouts, plan: TPPlan | None = None) -> None:
        plan = plan or single_device_plan(args)  # (one chip: tt_models.parallel refuses a split)
        p = f"layers.{layer}.attention."
        self.args, self.prec, self.layouts, self.plan = args, prec, layouts, plan
        m = self.mla = args.mla
        self.scale = args.attn_scale
        w = prec.wqkv
        if m.q_lora_rank is None:
            self.wq, self.wq_a, self.q_norm = weights.linear([p + "wq.weight"], w, p + "wq"), None, None
        else:
            self.wq_a = weights.linear([p + "q_a_proj.weight"], w, p + "wq_a")
            self.q_norm = weights.norm(p + "q_a_layernorm.weight")
            self.wq = weights.linear([p + "q_b_proj.weight"], w, p + "wq_b")
        self.wkv_a = weights.linear([p + "kv_a_proj_with_mqa.weight"], w, p + "wkv_a")
        self.kv_norm = weights.norm(p + "kv_a_layernorm.weight")
        heads = range(args.n_heads)
        # Each head's absorbed matrices as a batch: [1, nh, nope, kv_lora] and [1, nh, kv_lora, v].
        self.uk = weights.experts([f"{p}uk.{h}.weight" for h in heads], w, p + "uk")
        self.uv = weights.experts([f"{p}uv.{h}.weight" for h in heads], w, p + "uv")
        self.wo = weights.linear([p + "wo.weight"], prec.wo, p + "wo")

    # ---------------- shared by prefill and decode ----------------
    def _linear(self, x: Any, w: Any, kernel: str, mc: Any) -> Any:
        if mc == ttnn.DRAM_MEMORY_CONFIG:  # prefill: the 2-D multicast config for these rows
            seq = x.shape[-2]
            mm = self.layouts.prefill_matmul(seq, x.shape[-1], w.shape[-1], x, w, self.prec.residual,
                                             self.prec.kernels[kernel])
            return prefill_linear(x, w, mm, dtype=self.prec.residual, memory_config=mc,
                                  compute_kernel_config=self.prec.kernels[kernel])
        return ttnn.linear(x, w, dtype=self.prec.residual, memory_config=mc,
                           compute_kernel_config=self.prec.kernels[kernel])

    def _norm(self, x: Any, w: Any, mc: Any) -> Any:
        out = ttnn.rms_norm(x, epsilon=self.args.norm_eps, weight=w, memory_config=mc,
                            compute_kernel_config=fixed_kernel("NORM"))
        ttnn.deallocate(x)
        return out

    def _split(self, x: Any, at: int) -> tuple[Any, Any]:
        """x [.., w] as [.., :at] and [.., at:]."""
        *lead, width = x.shape
        lo, hi = [0] * len(lead), list(lead)
        return (ttnn.slice(x, lo + [0], hi + [at]), ttnn.slice(x, lo + [at], hi + [width]))

    def _project(self, x: Any, rot: Rot, kernel: str, mc: Any) -> tuple[Any, Any]:
        """x [1, 1, S, dim] -> the latent queries [1, nh, S, row] and the rows to cache [1, 1, S, row]."""
        m, nh, rows = self.mla, self.args.n_heads, x.shape[-2]
        if self.wq_a is not None:
            q = self._linear(self._norm(self._linear(x, self.wq_a, kernel, mc), self.q_norm, mc), self.wq, kernel, mc)
        else:
            q = self._linear(x, self.wq, kernel, mc)
        heads = ttnn.reshape(q, (1, rows, nh, m.nope_dim + m.rope_dim))
        ttnn.deallocate(q)
        q = ttnn.transpose(heads, 1, 2, memory_config=mc)  # [1, nh, S, nope + rope]
        ttnn.deallocate(heads)
        q_nope, q_pe = self._split(q, m.nope_dim)
        ttnn.deallocate(q)
        q_pe_rot = ttnn.experimental.rotary_embedding_llama(q_pe, rot.cos, rot.sin, rot.trans_mat)
        ttnn.deallocate(q_pe)
        q_lat = ttnn.matmul(q_nope, self.uk, dtype=self.prec.residual, memory_config=mc,
                            compute_kernel_config=self.prec.kernels[kernel])
        ttnn.deallocate(q_nope)
        q = ttnn.concat([q_lat, q_pe_rot], dim=3, memory_config=mc)
        for t in (q_lat, q_pe_rot):
            ttnn.deallocate(t)
        kv = self._linear(x, self.wkv_a, kernel, mc)
        c, k_pe = self._split(kv, m.kv_lora_rank)
        ttnn.deallocate(kv)
        c = self._norm(c, self.kv_norm, mc)
        k_pe_rot = ttnn.experimental.rotary_embedding_llama(k_pe, rot.cos, rot.sin, rot.trans_mat)
        ttnn.deallocate(k_pe)
        row = ttnn.concat([c, k_pe_rot], dim=3, memory_config=mc)
        for t in (c, k_pe_rot):
            ttnn.deallocate(t)
        return q, row

    def _output(self, attn: Any, kernel: str, mc: Any) -> Any:
        """attn [1, nh, S, kv_lora] (each head's attention over the latents) -> WO's output [1, 1, S, dim]."""
        out = ttnn.matmul(attn, self.uv, dtype=self.prec.residual, memory_config=mc,
                          compute_kernel_config=self.prec.kernels[kernel])
        ttnn.deallocate(attn)
        cat = ttnn.experimental.nlp_concat_heads(out, memory_config=mc)
        ttnn.deallocate(out)
        o_kernel = "LI_O_PREFILL" if mc == ttnn.DRAM_MEMORY_CONFIG else "LI_O_DECODE"
        res = self._linear(cat, self.wo, o_kernel, mc)
        ttnn.deallocate(cat)
        return res

    # ---------------- prefill ----------------
    def prefill(self, x: Any, rot: Rot, kv_cache: list, page_table: Any, user_id: int,
                chunk_start: int = 0, chunk_page_table: Any = None, fill_len: int | None = None) -> Any:
        dram, m = ttnn.DRAM_MEMORY_CONFIG, self.mla
        seq = x.shape[-2]
        q, row = self._project(x, rot, "LI_QKV_PREFILL", dram)
        (cache,) = kv_cache
        cached = ttnn.typecast(row, cache.dtype) if row.dtype != cache.dtype else row
        fill = cached
        if fill_len is not None and fill_len < seq:  # only the rows the user's pages hold
            fill = ttnn.slice(cached, [0, 0, 0, 0], [1, 1, fill_len, m.row])
        table = chunk_page_table if chunk_page_table is not None else page_table
        ttnn.experimental.paged_fill_cache(cache, fill, table, batch_idx=0 if chunk_page_table is not None else user_id)
        config = sdpa_prefill(seq, chunk_start, self.layouts.grid, m.row)
        kernel = self.prec.kernels["SDPA_PREFILL"]
        if chunk_start > 0:
            attn = ttnn.transformer.chunked_flash_mla_prefill(
                q, cache, m.kv_lora_rank, page_table, chunk_start, scale=fp32_representable(self.scale),
                program_config=config, compute_kernel_config=kernel)
        else:
            # Attend to the rows as the cache holds them (rounded to its dtype), as a prefix hit's chunked op and
            # every decode step do.
            attn = ttnn.transformer.flash_mla_prefill(q, cached, m.kv_lora_rank, scale=self.scale,
                                                      program_config=config, compute_kernel_config=kernel)
        for t in {id(t): t for t in (q, row, cached, fill)}.values():
            ttnn.deallocate(t)
        return self._output(attn, "LI_QKV_PREFILL", dram)

    # ---------------- decode ----------------
    def decode(self, x: Any, rot: Rot, kv_cache: list, current_pos: Any, page_table: Any,
               writes: Sequence[Any] | None = None) -> Any:
        """x: the width-sharded residual [1, 1, B, dim]; rot: cos/sin [1, 1, B, rope] of each user's position."""
        l1, m, d = ttnn.L1_MEMORY_CONFIG, self.mla, self.layouts.decode
        users = x.shape[-2]
        flat = ttnn.sharded_to_interleaved(x, l1)
        q, row = self._project(flat, rot, "LI_QKV_DECODE", l1)
        ttnn.deallocate(flat)
        # Each user's row on its own core, as paged_update_cache writes it (a row per user, one head).
        row_users = ttnn.reshape(row, (1, users, 1, m.row))
        ttnn.deallocate(row)
        placed = ttnn.interleaved_to_sharded(row_users, per_user(1, m.row, d.q_cores))
        ttnn.deallocate(row_users)
        (cache,) = kv_cache
        for idxs in writes or (current_pos,):
            ttnn.experimental.paged_update_cache(cache, placed, update_idxs_tensor=idxs, page_table=page_table)
        ttnn.deallocate(placed)
        q_users = ttnn.transpose(q, 1, 2, memory_config=ttnn.DRAM_MEMORY_CONFIG)  # [1, B, nh, row]
        ttnn.deallocate(q)
        attn = ttnn.transformer.paged_flash_multi_latent_attention_decode(
            q_users, cache, None, m.kv_lora_rank, page_table, cur_pos_tensor=current_pos, scale=self.scale,
            memory_config=ttnn.DRAM_MEMORY_CONFIG, compute_kernel_config=self.prec.kernels["SDPA_DECODE"])
        ttnn.deallocate(q_users)
        heads = ttnn.transpose(attn, 1, 2, memory_config=l1)  # [1, nh, B, kv_lora]
        ttnn.deallocate(attn)
        return self._output(heads, "LI_QKV_DECODE", l1)
