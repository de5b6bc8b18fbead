"""The decoder-only transformer on TT-NN: embedding, decoder layers, final norm and LM head.

`prefill` runs one user's (chunk of a) prompt and returns the logits of the 32-row tile holding its last token;
`decode` runs one token for every batch slot. Both take device tensors; host-side orchestration (padding,
chunking, tracing) lives in tt_models/generator.py.
"""

from __future__ import annotations

from typing import Any

import torch

from tt_models.backend import ttnn
from tt_models.layers.attention import Rot
from tt_models.layers.decoder import DecoderLayer
from tt_models.model_args import ModelArgs
from tt_models.precision import dtype_of, layer_precision
from tt_models.rope import cos_sin_tables, transformation_matrix
from tt_models.weights import WeightStore

TILE = 32


class Transformer:
    def __init__(self, args: ModelArgs, mesh_device: Any, weights: WeightStore, profile: Any,
                 max_positions: int) -> None:
        args.check_tt_limits()
        self.args, self.device, self.profile = args, mesh_device, profile
        self.precisions = [layer_precision(profile, i) for i in range(args.n_layers)]
        self.tok_embeddings = weights.embedding("tok_embeddings.weight")
        self.layers = [DecoderLayer(args, weights, i, self.precisions[i]) for i in range(args.n_layers)]
        self.norm = weights.norm("norm.weight")
        head = "output.weight" if weights.has("output.weight") else "tok_embeddings.weight"  # tied embeddings
        head_dtype = profile.precision("LM_HEAD")
        self.lm_head = weights.linear([head], dtype_of(head_dtype), "output")
        # Logits keep the residual stream's precision: an fp32 stream (accuracy) gets fp32 logits, exact for greedy
        # checks; a bf16 stream gets bf16 logits, as the faster path on hardware (and HF in bf16) produces.
        final = self.precisions[-1].residual
        self.logits_dtype = ttnn.float32 if final == ttnn.float32 else ttnn.bfloat16
        cos, sin = cos_sin_tables(args.hf_config, args.head_dim, max_positions)
        self.max_positions = max_positions
        # Prefill slices [1, 1, S, hd] windows in TILE layout; decode gathers one row per user by embedding lookup.
        self.cos_tile = self._const(cos, ttnn.TILE_LAYOUT)
        self.sin_tile = self._const(sin, ttnn.TILE_LAYOUT)
        self.cos_rows = self._const(cos, ttnn.ROW_MAJOR_LAYOUT)
        self.sin_rows = self._const(sin, ttnn.ROW_MAJOR_LAYOUT)
        self.trans_mat = self._const(transformation_matrix(), ttnn.TILE_LAYOUT)

    def _const(self, t: torch.Tensor, layout: Any) -> Any:
        # Rotation tables match the residual precision: bf16 cos/sin alone cost ~0.3% on the logits.
        return ttnn.from_torch(t, self.precisions[0].residual, layout=layout, device=self.device)

    def kv_cache_dtype(self) -> Any:
        return self.precisions[0].kv_cache

    def _embed(self, tokens: Any, rows: int) -> Any:
        x = ttnn.embedding(tokens, self.tok_embeddings, layout=ttnn.TILE_LAYOUT)
        x = ttnn.reshape(x, (1, 1, rows, self.args.dim))
        residual = self.precisions[0].residual
        return ttnn.typecast(x, residual) if x.dtype != residual else x

    def _head(self, x: Any) -> Any:
        x = ttnn.rms_norm(x, epsilon=self.args.norm_eps, weight=self.norm)
        return ttnn.linear(x, self.lm_head, dtype=self.logits_dtype)

    def prefill(self, tokens: Any, start: int, last_token_idx: int | None, kv_cache: list, page_table: Any,
                user_id: int = 0, chunk_page_table: Any = None, fill_len: int | None = None) -> Any:
        """tokens [1, 1, 1, S] uint32 at positions start..start+S-1 -> logits [1, 1, 32, vocab] (float32) of the tile
        holding row last_token_idx; None (a chunk before the last) only fills the cache."""
        seq = tokens.shape[-1]
        if start + seq > self.max_positions:
            raise ValueError(f"positions up to {start + seq} exceed the rope table ({self.max_positions})")
        hd = self.args.head_dim
        rot = Rot(ttnn.slice(self.cos_tile, [0, 0, start, 0], [1, 1, start + seq, hd]),
                  ttnn.slice(self.sin_tile, [0, 0, start, 0], [1, 1, start + seq, hd]), self.trans_mat)
        x = self._embed(tokens, seq)
        for layer, cache in zip(self.layers, kv_cache, strict=True):
            x = layer.prefill(x, rot, cache, page_table, user_id, chunk_start=start,
                              chunk_page_table=chunk_page_table, fill_len=fill_len)
        if last_token_idx is None:
            return None
        # Only the tile holding the last prompt token goes through the final norm and the LM head.
        t0 = (last_token_idx // TILE) * TILE
        x = ttnn.slice(x, [0, 0, t0, 0], [1, 1, t0 + TILE, self.args.dim])
        return self._head(x)

    def decode(self, tokens: Any, current_pos: Any, rot_idxs: Any, page_table: Any, kv_cache: list) -> Any:
        """tokens [1, B] uint32, current_pos [B] int32 (-1 = empty slot), rot_idxs [1, B] uint32 (positions clamped
        at 0), page_table [B, W] int32 -> logits [1, 1, B, vocab] float32."""
        users, hd = tokens.shape[-1], self.args.head_dim
        cos = ttnn.reshape(ttnn.embedding(rot_idxs, self.cos_rows, layout=ttnn.TILE_LAYOUT), (1, users, 1, hd))
        sin = ttnn.reshape(ttnn.embedding(rot_idxs, self.sin_rows, layout=ttnn.TILE_LAYOUT), (1, users, 1, hd))
        rot = Rot(cos, sin, self.trans_mat)
        x = self._embed(tokens, users)
        for layer, cache in zip(self.layers, kv_cache, strict=True):
            x = layer.decode(x, rot, cache, current_pos, page_table)
        return self._head(x)
