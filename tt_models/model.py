"""The decoder-only transformer on TT-NN: embedding, decoder layers, final norm and LM head.

`prefill` runs one user's (chunk of a) prompt and returns the logits of the 32-row tile holding its last token;
`decode` runs one token for every batch slot. Both take device tensors; host-side orchestration (padding,
chunking, tracing) lives in tt_models/generator.py. Where tensors live and how ops spread their work comes from
tt_models/layouts.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from tt_models.backend import ttnn
from tt_models.layers.attention import Rot, UserSplit
from tt_models.layers.collectives import gather_vocab, reduce_inputs, replicate, to_host, users_mapper
from tt_models.layers.decoder import DecoderLayer
from tt_models.layers.norm import ResidualNorm
from tt_models.layouts import ModelLayouts, build_layouts
from tt_models.model_args import ModelArgs
from tt_models.parallel import TPPlan, column_parallel, plan_tensor_parallel, residual_columns
from tt_models.precision import dtype_of, fixed_kernel, layer_precision
from tt_models.rope import cos_sin_tables, transformation_matrix
from tt_models.weights import WeightStore

TILE = 32


@dataclass(frozen=True)
class RopeTables:
    """Doubled cos/sin of every position on the device: TILE for prefill's slices, row-major for decode's lookups."""

    cos_tile: Any
    sin_tile: Any
    cos_rows: Any
    sin_rows: Any


class Transformer:
    def __init__(self, args: ModelArgs, mesh_device: Any, weights: WeightStore, profile: Any,
                 max_positions: int, max_batch: int, expert_dispatch: str = "reduce") -> None:
        """expert_dispatch: how MoE layers split over a mesh reach their experts (tt_models/layers/moe.py
        EXPERT_DISPATCH: "reduce", every token through each chip's experts; "all_to_all", dispatch / combine)."""
        args.check_tt_limits()
        self.args, self.device, self.profile = args, mesh_device, profile
        # Tensor parallel over the mesh's chips (one chip: nothing split); layouts are per chip, for its share.
        self.plan: TPPlan = plan_tensor_parallel(args, tuple(mesh_device.shape))
        self.local_args = self.plan.local_args(args)
        # Decode always runs whole tiles of users (32 per device), the empty rows at position -1.
        self.decode_rows = -(-max_batch // TILE) * TILE
        # 2-D mesh: each chip of a row runs decode attention for its share of the users (tt_transformers on a
        # Galaxy), when the row's chips divide them; everything else runs every user.
        cols = self.plan.grid[1] if self.plan.two_d else 1
        self.split_users = self.plan.two_d and self.decode_rows % cols == 0
        self.attention_users = self.decode_rows // cols if self.split_users else self.decode_rows
        # Tensor parallel: the residual stream is fractured, each chip holding plan.dim of its columns.
        self.precisions = [layer_precision(profile, i) for i in range(args.n_layers)]
        if args.mla is not None:
            # The latent cache is bfloat8_b in every hardware profile, as tt-metal's DeepSeek-V3 keeps it: a bf16 row
            # of 576 is more than paged_update_cache's circular buffers fit in a core's L1 (1,510,768 B of 1,499,136
            # on an N150, measured on the real 0.81.1). fp32 (the simulator's reference precision) stays.
            self.precisions = [replace(p, kv_cache=ttnn.bfloat8_b) if p.kv_cache == ttnn.bfloat16 else p
                               for p in self.precisions]
        head_dtype = dtype_of(profile.precision("LM_HEAD"))
        self.layouts: ModelLayouts = build_layouts(self.local_args, mesh_device, self.decode_rows,
                                                   residual_dim=self.plan.dim, attention_users=self.attention_users,
                                                   precisions=self.precisions, head_dtype=head_dtype,
                                                   written_dim=self.plan.written_dim)
        # Tensor parallel: each chip looks up its columns of the table (tt_transformers shards it by hidden dim).
        self.tok_embeddings = weights.embedding("tok_embeddings.weight", shard=residual_columns(self.plan, 3))
        self.layers = [DecoderLayer(args, weights, i, self.precisions[i], self.layouts, self.plan, expert_dispatch)
                       for i in range(args.n_layers)]
        self.norm = ResidualNorm(weights, "norm.weight", args.norm_eps, fixed_kernel("NORM"), self.plan, self.layouts)
        head = "output.weight" if weights.has("output.weight") else "tok_embeddings.weight"  # tied embeddings
        bounds, start = [], 0
        for n in self.layouts.lm_head_splits:
            bounds.append((start, start + n))
            start += n
        # Tensor parallel: each chip its vocabulary slice (the splits above are of that slice).
        self.lm_head = [weights.linear([head], head_dtype, f"output.{i}.{a}-{b}", self.layouts.weights[f"lm_head{i}"],
                                       columns=None if len(bounds) == 1 else (a, b), shard=column_parallel(self.plan))
                        for i, (a, b) in enumerate(bounds)]
        # Logits keep the residual stream's precision: bf16 (what argmax on device reads), fp32 only at the
        # simulator's reference precision.
        final = self.precisions[-1].residual
        self.logits_dtype = ttnn.float32 if final == ttnn.float32 else ttnn.bfloat16
        self.rope_dtype = ttnn.float32 if final == ttnn.float32 else ttnn.bfloat16
        self.max_positions, self.max_batch = max_positions, max_batch
        # One RoPE table per kind of layer (Gemma 3: local and global bases; every other family: one).
        self.rope_kinds = sorted({args.rope_kind(i) for i in range(args.n_layers)}, key=str)
        self.rope = {kind: self._rope_tables(kind) for kind in self.rope_kinds}
        trans = transformation_matrix()
        self.trans_mat = self._const(trans, ttnn.TILE_LAYOUT)
        d = self.layouts.decode
        # Decode reads the rotation tile on every core of the heads it rotates.
        per_core = trans.repeat(1, 1, self.attention_users, 1)
        self.trans_q = self._const(per_core, ttnn.TILE_LAYOUT, d.trans_q)
        self.trans_k = self._const(per_core, ttnn.TILE_LAYOUT, d.trans_k)
        self.user_split = self._user_split(cols) if self.split_users else None
        # Each layer's KV-cache group: the block table (page_table[g]) it reads and writes. One group unless vLLM's
        # hybrid KV cache gives sliding-window layers their own (set with the cache: allocate_kv_cache).
        self.kv_groups: tuple[int, ...] = (0,) * args.n_layers

    @property
    def n_kv_groups(self) -> int:
        """How many page tables the layers read (one per KV-cache group)."""
        return max(self.kv_groups) + 1

    def _table(self, tables: Any, layer: int) -> Any:
        """Layer `layer`'s page table: `tables` is one table for every layer, or a sequence with one per group."""
        return tables[self.kv_groups[layer]] if isinstance(tables, (list, tuple)) else tables

    def _rope_tables(self, kind: str | None) -> RopeTables:
        cos, sin = cos_sin_tables(self.args.hf_config, self.args.rope_dim, self.max_positions, kind,
                                  self.args.rotary_dim)
        # Prefill slices [1, 1, S, hd] windows in TILE layout; decode gathers one row per user by embedding lookup.
        return RopeTables(self._const(cos, ttnn.TILE_LAYOUT), self._const(sin, ttnn.TILE_LAYOUT),
                          self._const(cos, ttnn.ROW_MAJOR_LAYOUT), self._const(sin, ttnn.ROW_MAJOR_LAYOUT))

    def _user_split(self, cols: int) -> UserSplit:
        """Chip (r, c)'s users [c * U, (c + 1) * U): the rows of the QKV product it takes."""
        ids = torch.arange(self.decode_rows, dtype=torch.int32).reshape(1, -1)
        return UserSplit(ttnn.from_torch(ids, ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT, device=self.device,
                                         memory_config=ttnn.DRAM_MEMORY_CONFIG,
                                         mesh_mapper=users_mapper(self.device, self.plan, 1)))

    def users_mapper(self, dim: int) -> Any:
        """How a per-user decode input (users along tensor dim `dim`) is laid over the mesh: each chip the users its
        attention runs (2-D: its share of the row's; else all of them)."""
        return users_mapper(self.device, self.plan, dim) if self.split_users else replicate(self.device)

    def _const(self, t: torch.Tensor, layout: Any, memory_config: Any = None) -> Any:
        return ttnn.from_torch(t, self.rope_dtype, layout=layout, device=self.device,
                               memory_config=memory_config or ttnn.DRAM_MEMORY_CONFIG,
                               mesh_mapper=replicate(self.device))

    def kv_cache_dtype(self) -> Any:
        return self.precisions[0].kv_cache

    def _embed(self, tokens: Any, rows: int) -> Any:
        x = ttnn.embedding(tokens, self.tok_embeddings, layout=ttnn.TILE_LAYOUT)
        x = ttnn.reshape(x, (1, 1, rows, self.plan.dim))
        residual = self.precisions[0].residual
        x = ttnn.typecast(x, residual) if x.dtype != residual else x
        if self.args.embed_scale is not None:
            scaled = ttnn.multiply(x, self.args.embed_scale)
            ttnn.deallocate(x)
            x = scaled
        return x

    def full_vocab(self, logits: Any) -> Any:
        """Logits over the whole vocabulary on every chip (tensor parallel: the chips' slices all-gathered), for
        on-device argmax and sampling; the logits themselves on one chip."""
        return gather_vocab(logits, self.plan)

    def to_host(self, t: Any, vocab_sliced: bool) -> torch.Tensor:
        """A prefill / decode output as one torch tensor: logits straight from the LM head (vocab_sliced; tensor
        parallel: each chip's slice, concatenated), or something whole on every chip (token ids)."""
        return to_host(t, self.plan, self.device, vocab_sliced)

    def _head(self, x: Any) -> Any:
        """Final norm and LM head on the width-sharded residual [1, 1, 32, dim] (tensor parallel: each chip's
        [1, 1, 32, dim / N], gathered by the norm): one DRAM-sharded matmul per vocabulary split, gathered into
        [1, 1, 32, vocab] in L1, or DRAM for a very wide vocabulary (tensor parallel: each chip's [1, 1, 32,
        vocab / N] slice)."""
        d = self.layouts.decode
        x = self.norm.decode(x, d)
        parts = []
        for w, mm in zip(self.lm_head, d.lm_head, strict=True):
            part = ttnn.linear(x, w, dtype=self.logits_dtype, memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG,
                               program_config=mm.program, compute_kernel_config=fixed_kernel("LM_HEAD"))
            flat = ttnn.sharded_to_interleaved(part, d.logits)
            ttnn.deallocate(part)
            parts.append(reduce_inputs(flat, self.plan, d.logits))  # 2-D: sum over the row's columns
        ttnn.deallocate(x)
        if len(parts) == 1:
            return parts[0]
        logits = ttnn.concat(parts, dim=-1, memory_config=d.logits)
        for p in parts:
            ttnn.deallocate(p)
        return logits

    def prefill(self, tokens: Any, start: int, last_token_idx: int | None, kv_cache: list, page_table: Any,
                user_id: int = 0, chunk_page_table: Any = None, fill_len: int | None = None,
                return_hidden: bool = False) -> Any:
        """tokens [1, 1, 1, S] uint32 at positions start..start+S-1 -> logits [1, 1, 32, vocab] of the tile holding
        row last_token_idx; None (a chunk before the last) only fills the cache. return_hidden: the final hidden
        states [1, 1, S, dim] (tensor parallel: each chip's dim / N columns) instead, for `logits_tile` on any rows
        (prompt logprobs). page_table and chunk_page_table: one for every layer, or a sequence with one per KV-cache
        group (kv_groups)."""
        seq = tokens.shape[-1]
        if start + seq > self.max_positions:
            raise ValueError(f"positions up to {start + seq} exceed the rope table ({self.max_positions})")
        hd = self.args.rope_dim
        rots = {kind: Rot(ttnn.slice(t.cos_tile, [0, 0, start, 0], [1, 1, start + seq, hd]),
                          ttnn.slice(t.sin_tile, [0, 0, start, 0], [1, 1, start + seq, hd]), self.trans_mat)
                for kind, t in self.rope.items()}
        x = self._embed(tokens, seq)
        for i, (layer, cache) in enumerate(zip(self.layers, kv_cache, strict=True)):
            x = layer.prefill(x, rots[self.args.rope_kind(i)], cache, self._table(page_table, i), user_id,
                              chunk_start=start, chunk_page_table=self._table(chunk_page_table, i), fill_len=fill_len)
        if return_hidden:
            return x
        if last_token_idx is None:
            return None
        # Only the tile holding the last prompt token goes through the final norm and the LM head.
        return self.logits_tile(x, last_token_idx)

    def logits_tile(self, hidden: Any, row: int) -> Any:
        """Logits [1, 1, 32, vocab] of the 32-row tile of prefill hidden states [1, 1, S, dim] holding `row`."""
        t0 = (row // TILE) * TILE
        x = ttnn.slice(hidden, [0, 0, t0, 0], [1, 1, t0 + TILE, self.plan.dim])
        return self._head(ttnn.to_memory_config(x, self.layouts.decode.residual))

    def _decode_rot(self, rot_idxs: Any, t: RopeTables) -> Rot:
        """Each user's cos/sin rows (gathered by position), placed next to its Q heads and next to its K heads."""
        d, users, hd = self.layouts.decode, rot_idxs.shape[-1], self.args.head_dim
        if self.args.mla is not None:
            # Multi-latent attention rotates its users as rows: [1, 1, B, rope], each user's row at its position.
            rd = self.args.rope_dim
            rows = [ttnn.reshape(ttnn.embedding(rot_idxs, r, layout=ttnn.TILE_LAYOUT), (1, 1, users, rd))
                    for r in (t.cos_rows, t.sin_rows)]
            return Rot(rows[0], rows[1], self.trans_mat)
        tables = []
        for rows in (t.cos_rows, t.sin_rows):
            t = ttnn.embedding(rot_idxs, rows, layout=ttnn.TILE_LAYOUT)  # [1, B, hd]
            t = ttnn.transpose(ttnn.unsqueeze_to_4D(t), 1, 2)  # [1, B, 1, hd]: a user's row on its own tile
            tables.append((ttnn.interleaved_to_sharded(t, d.rope_q), ttnn.interleaved_to_sharded(t, d.rope_k)))
            ttnn.deallocate(t)
        (cos_q, cos_k), (sin_q, sin_k) = tables
        if users != self.attention_users or hd != self.args.head_dim:
            raise ValueError(f"decode attention runs {self.attention_users} users per chip, got {users}")
        return Rot(cos_q, sin_q, self.trans_q, cos_k, sin_k, self.trans_k, self.user_split)

    def decode(self, tokens: Any, current_pos: Any, rot_idxs: Any, page_table: Any, kv_cache: list,
               writes: Sequence[Any] | None = None) -> Any:
        """tokens [1, B] uint32, current_pos [B] int32 (-1 = empty slot), rot_idxs [1, B] uint32 (positions clamped
        at 0), page_table [B, W] int32 (or a sequence of them, one per KV-cache group: kv_groups) -> logits
        [1, 1, B (padded to 32), vocab]. With the users split over a row's chips (2-D), current_pos, rot_idxs and
        page_table hold each chip's own users (users_mapper).

        writes (speculative decoding's verify step): several rows hold one user's consecutive positions (same page
        table row), and each layer writes the new K/V with one paged_fused_update_cache per entry of `writes`
        ([B] int32 like current_pos, -1 where the row is written by another entry), so that no single call has two
        rows writing one cache tile: the device's update kernel reads, modifies and writes back a whole tile per
        row on that row's core, and two cores doing so to one tile race. Attention then reads each row's causal
        prefix as a decode step at its position would."""
        users = tokens.shape[-1]
        rots = {kind: self._decode_rot(rot_idxs, t) for kind, t in self.rope.items()}
        x = ttnn.to_memory_config(self._embed(tokens, users), self.layouts.decode.residual)
        for i, (layer, cache) in enumerate(zip(self.layers, kv_cache, strict=True)):
            x = layer.decode(x, rots[self.args.rope_kind(i)], cache, current_pos, self._table(page_table, i), writes)
        return self._head(x)
