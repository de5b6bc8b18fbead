"""Converts a Meta-named torch state dict into device tensors in TT layouts, cached on disk.

Each converted tensor is written once under the cache directory (keyed by the checkpoint's files, see
`weight_cache_dir`), so a second start loads the TT-layout tensors instead of re-converting and re-rounding them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

from tt_models.backend import ttnn
from tt_models.parallel import Shard


def _padded(t: torch.Tensor, shard: Shard | None) -> torch.Tensor:
    """t (its last two dims TT dims 2 and 3) with the shard's zeros appended along its pad_dim (the padded
    residual's columns; parallel.Shard)."""
    if shard is None or not shard.pad:
        return t
    return torch.nn.functional.pad(t, (0, shard.pad) if shard.pad_dim == 3 else (0, 0, 0, shard.pad))


def _pad_tag(shard: Shard) -> str:
    return f"p{shard.pad}d{shard.pad_dim}" if shard.pad else ""


def weight_cache_dir(model_dir: str | Path, tag: str) -> Path:
    """A cache folder that changes whenever a source weight file changes (name, size or mtime)."""
    from tt_models.checkpoint.gguf import cache_root

    root = cache_root() / "tt_weights"
    h = hashlib.sha1()
    for f in sorted(Path(model_dir).glob("*")):
        if f.suffix in (".safetensors", ".gguf", ".bin", ".json"):
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return root / f"{h.hexdigest()[:16]}-{tag}"


def _stacked(blocks: list[torch.Tensor], shard: Shard | None) -> torch.Tensor:
    """Per-expert [in, out] blocks as the TT layout of `WeightStore.experts`: [1, E, in, out] (the shard's padding
    appended), or [R, E / R, in, out] for a 2-D shard (chip (r, c) the (r * C + c)-th block)."""
    w = _padded(torch.stack(blocks), shard)
    if shard is not None and shard.mesh_dims is not None:
        return w.reshape(shard.mesh_shape[0], -1, *w.shape[1:]).contiguous()
    return w[None].contiguous()


class WeightStore:
    def __init__(self, state_dict: dict[str, torch.Tensor], mesh_device: Any, cache_dir: Path | None,
                 norm_fp32: bool = False) -> None:
        self.sd = state_dict
        self.device = mesh_device
        self.cache_dir = cache_dir
        # RMSNorm weights in fp32 rather than bf16 (rms_norm takes either): Gemma's folded 1 + w, which bf16 would
        # round to 8 bits next to 1.0.
        self.norm_dtype = ttnn.float32 if norm_fp32 else ttnn.bfloat16

    def _mesh(self, shard: Shard | None) -> tuple[Any, str]:
        """The mesh mapper for a tensor (a shard over the TP group's chips, else a replica on each chip of a
        multi-chip mesh; none on one chip) and the cache-name suffix that tells the layouts apart."""
        n = self.device.get_num_devices()
        if n == 1:
            return None, ""
        if shard is not None and shard.mesh_dims is not None:
            d0, d1 = shard.mesh_dims
            return (ttnn.ShardTensor2dMesh(self.device, dims=shard.mesh_dims, mesh_shape=shard.mesh_shape),
                    f"-tp{shard.mesh_shape[0]}x{shard.mesh_shape[1]}d{d0}{d1}{_pad_tag(shard)}")
        if shard is not None:
            return ttnn.ShardTensorToMesh(self.device, dim=shard.dim), f"-tp{n}d{shard.dim}{_pad_tag(shard)}"
        return ttnn.ReplicateTensorToMesh(self.device), f"-rep{n}"

    def _as_tensor(self, name: str, make: Any, dtype: Any, layout: Any, memory_config: Any = None,
                   shard: Shard | None = None) -> Any:
        memory_config = memory_config or ttnn.DRAM_MEMORY_CONFIG
        mapper, suffix = self._mesh(shard)
        cache = None
        if self.cache_dir is not None:
            # ttnn.as_tensor places a cached tensor where it was first placed, whatever memory_config says: the
            # placement is part of the file's name, so a layout change converts anew instead of reusing it. So is
            # the split over the chips (suffix).
            cache = str(self.cache_dir / f"{name}{suffix}-"
                                         f"{hashlib.sha1(repr(memory_config).encode()).hexdigest()[:10]}")
        if mapper is None:
            return ttnn.as_tensor(make(), dtype, layout=layout, device=self.device, memory_config=memory_config,
                                  cache_file_name=cache)
        return ttnn.as_tensor(make(), dtype, layout=layout, device=self.device, memory_config=memory_config,
                              cache_file_name=cache, mesh_mapper=mapper)

    def has(self, name: str) -> bool:
        return name in self.sd

    def linear(self, names: list[str], dtype: Any, cache_name: str, memory_config: Any = None,
               columns: tuple[int, int] | None = None, shard: Shard | None = None) -> Any:
        """HF/Meta [out, in] weights, concatenated on out, stored transposed as [1, 1, in, out] tiles; `columns`
        keeps output columns [a, b) only (a split of the LM head; of each chip's slice when sharded by columns);
        `shard` lays it over the TP group's chips."""

        def make() -> torch.Tensor:
            w = torch.cat([self.sd[n] for n in names], dim=0)
            if shard is not None and shard.rows is not None:
                w = w[shard.rows]
            if columns is not None:
                if shard is not None and shard.parts(3) > 1:
                    w = w.reshape(shard.parts(3), -1, w.shape[-1])[:, columns[0] : columns[1]]
                    w = w.reshape(-1, w.shape[-1])
                else:
                    w = w[columns[0] : columns[1]]
            return _padded(w.t(), shard).contiguous()[None, None]

        return self._as_tensor(cache_name, make, dtype, ttnn.TILE_LAYOUT, memory_config, shard)

    def experts(self, names: list[str], dtype: Any, cache_name: str, shard: Shard | None = None) -> Any:
        """One [out, in] weight per expert, stacked and transposed as [1, experts, in, out] tiles (what
        sparse_matmul multiplies each expert's tokens with); `shard`: each chip its own block of experts (1-D: on
        dim 1; 2-D, mesh_dims (0, 1): chip (r, c) the (r * C + c)-th block, the stack laid as [R, E / R, in, out])."""
        return self._as_tensor(cache_name, lambda: _stacked([self.sd[n].t() for n in names], shard), dtype,
                               ttnn.TILE_LAYOUT, shard=shard)

    def hidden_blocks(self, name: str, hidden_axis: int, parts: int, units: int, dtype: Any, cache_name: str,
                      shard: Shard | None = None) -> Any:
        """A dense MLP weight [out, in] (Qwen2-MoE's shared expert) with its hidden units (rows: hidden_axis 0, w1 /
        w3; columns: 1, w2) split into `parts` blocks of `units`, the last ones padded with zero units, stacked as
        `experts` stacks experts' weights: each chip of `shard` its block, [1, 1, in, out]."""
        def make() -> torch.Tensor:
            w = self.sd[name]
            w = w if hidden_axis == 1 else w.t()  # [other, hidden]
            w = torch.nn.functional.pad(w, (0, parts * units - w.shape[1]))
            blocks = w.reshape(w.shape[0], parts, units).unbind(1)  # each [other, units]
            return _stacked([b if hidden_axis == 0 else b.t() for b in blocks], shard)

        return self._as_tensor(cache_name, make, dtype, ttnn.TILE_LAYOUT, shard=shard)

    def router(self, name: str, dtype: Any, cache_name: str, orders: list[torch.Tensor],
               grid: tuple[int, int] | None = None) -> Any:
        """A router [E, in] as [1, 1, in, E] tiles, each chip's copy with its columns in that chip's order
        (orders[d]: chip d's, row-major over a 2-D `grid`)."""
        if len(orders) == 1:
            return self.linear([name], dtype, cache_name)
        if grid is None:
            return self.linear([name], dtype, cache_name, shard=Shard(3, len(orders), torch.cat(orders)))
        rows, cols = grid

        def make() -> torch.Tensor:
            w = self.sd[name]
            return torch.stack([torch.cat([w[orders[r * cols + c]].t() for c in range(cols)], dim=1)
                                for r in range(rows)])[:, None].contiguous()

        return self._as_tensor(cache_name, make, dtype, ttnn.TILE_LAYOUT,
                               shard=Shard(None, len(orders), None, (0, 3), grid))

    def bias(self, names: list[str], cache_name: str, shard: Shard | None = None, dtype: Any = None) -> Any:
        def make() -> torch.Tensor:
            b = torch.cat([self.sd[n] for n in names])
            b = b[shard.rows] if shard is not None and shard.rows is not None else b
            return _padded(b, shard)[None, None, None]

        return self._as_tensor(cache_name, make, dtype or ttnn.bfloat16, ttnn.TILE_LAYOUT, shard=shard)

    def expert_bias(self, names: list[str], cache_name: str, shard: Shard | None = None) -> Any:
        """One bias [out] per expert, stacked as [1, experts, 1, out] tiles: added to sparse_matmul's per-expert
        output blocks [groups, experts, 32, out] (broadcast over groups and rows); `shard` as for `experts`."""
        def make() -> torch.Tensor:
            b = _padded(torch.stack([self.sd[n] for n in names])[:, None], shard)
            if shard is not None and shard.mesh_dims is not None:
                return b.reshape(shard.mesh_shape[0], -1, *b.shape[1:]).contiguous()
            return b[None].contiguous()

        return self._as_tensor(cache_name, make, ttnn.bfloat16, ttnn.TILE_LAYOUT, shard=shard)

    def router_bias(self, name: str, cache_name: str, orders: list[torch.Tensor],
                    grid: tuple[int, int] | None = None, dtype: Any = None) -> Any:
        """A router's bias [E] as [1, 1, 1, E] (bf16 unless `dtype`), each chip's copy in that chip's column order
        (as `router`)."""
        if len(orders) == 1:
            return self.bias([name], cache_name, dtype=dtype)
        if grid is None:
            return self.bias([name], cache_name, shard=Shard(3, len(orders), torch.cat(orders)), dtype=dtype)
        rows, cols = grid

        def make() -> torch.Tensor:
            b = self.sd[name]
            return torch.stack([torch.cat([b[orders[r * cols + c]] for c in range(cols)])
                                for r in range(rows)])[:, None, None].contiguous()

        return self._as_tensor(cache_name, make, dtype or ttnn.bfloat16, ttnn.TILE_LAYOUT,
                               shard=Shard(None, len(orders), None, (0, 3), grid))

    def sinks(self, name: str, cache_name: str, scale: float, decode: bool, shard: Shard | None = None) -> Any:
        """Per-head attention sink logits, divided by the softmax scale (the SDPA kernels multiply the sink by it,
        as the Q.K logits): prefill's [1, heads, 1, 1], or decode's [heads, 32] with the sink in column 0 (one tile
        wide, as paged SDPA decode reads it); `shard` splits the heads (dim 1 / dim 0) over the chips."""
        def make() -> torch.Tensor:
            s = self.sd[name].float() / scale
            if not decode:
                return s.reshape(1, -1, 1, 1)
            return torch.nn.functional.pad(s[:, None], (0, 31))

        return self._as_tensor(cache_name, make, ttnn.bfloat16, ttnn.TILE_LAYOUT, shard=shard)

    def norm(self, name: str, shard: Shard | None = None, scale: float = 1.0) -> Any:
        """RMSNorm weight as [1, 1, dim/32, 32] row-major sticks, the layout rms_norm reads; `shard` (on dim 2):
        each chip its own columns' sticks, for the distributed rms_norm (a padded residual's: zeros appended).
        `scale` != 1 (the distributed norm over a padded residual, parallel.TPPlan.norm_scale): the weight times it,
        in fp32 so that the product is the checkpoint's value scaled, not re-rounded to bf16."""
        def make() -> torch.Tensor:
            w = self.sd[name].float() * scale if scale != 1.0 else self.sd[name]
            if shard is not None and shard.pad:
                w = torch.nn.functional.pad(w, (0, shard.pad))
            return w.reshape(1, 1, -1, 32)

        dtype = ttnn.float32 if scale != 1.0 else self.norm_dtype
        return self._as_tensor(name if scale == 1.0 else f"{name}.x{scale:.8f}", make, dtype, ttnn.ROW_MAJOR_LAYOUT,
                               shard=shard)

    def norm_row(self, name: str) -> Any:
        """RMSNorm weight as one TILE row [1, 1, 1, dim] (padded to a tile's 32 rows on the device): the layout with
        which rms_norm streams a wide row in blocks instead of holding it whole in L1."""
        return self._as_tensor(name + ".row", lambda: self.sd[name].reshape(1, 1, 1, -1), self.norm_dtype,
                               ttnn.TILE_LAYOUT)

    def embedding(self, name: str, shard: Shard | None = None) -> Any:
        """The table [1, 1, vocab, dim] in row-major rows; `shard` (on dim 3): each chip its residual columns."""
        return self._as_tensor(name, lambda: _padded(self.sd[name], shard)[None, None], ttnn.bfloat16,
                               ttnn.ROW_MAJOR_LAYOUT, shard=shard)


class ShapeOnlyWeights(WeightStore):
    """Device weights of the right shapes, dtypes and placements with no host data (ttnn.empty): how much a model
    takes on a device, and whether it fits, without reading or materializing its checkpoint."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], mesh_device: Any, norm_fp32: bool = False) -> None:
        super().__init__({}, mesh_device, None, norm_fp32)
        self.shapes = shapes

    def has(self, name: str) -> bool:
        return name in self.shapes

    def _empty(self, shape: tuple[int, ...], dtype: Any, layout: Any, memory_config: Any = None) -> Any:
        # One buffer of this (per-chip) shape on every chip of the mesh.
        return ttnn.empty(list(shape), dtype, layout, self.device, memory_config or ttnn.DRAM_MEMORY_CONFIG)

    @staticmethod
    def _out(names_out: int, shard: Shard | None) -> int:
        if shard is None:
            return names_out
        pad = shard.pad if shard.pad_dim == 3 else 0
        return ((len(shard.rows) if shard.rows is not None else names_out) + pad) // shard.parts(3)

    def linear(self, names: list[str], dtype: Any, cache_name: str, memory_config: Any = None,
               columns: tuple[int, int] | None = None, shard: Shard | None = None) -> Any:
        out = self._out(sum(self.shapes[n][0] for n in names), shard) if columns is None else columns[1] - columns[0]
        k_pad = shard.pad if shard is not None and shard.pad_dim == 2 else 0
        k = (self.shapes[names[0]][1] + k_pad) // (shard.parts(2) if shard is not None else 1)
        return self._empty((1, 1, k, out), dtype, ttnn.TILE_LAYOUT, memory_config)

    def experts(self, names: list[str], dtype: Any, cache_name: str, shard: Shard | None = None) -> Any:
        out, k = self.shapes[names[0]]
        return self._empty((1, len(names) // (shard.devices if shard is not None else 1), k,
                            out + (shard.pad if shard is not None else 0)), dtype, ttnn.TILE_LAYOUT)

    def hidden_blocks(self, name: str, hidden_axis: int, parts: int, units: int, dtype: Any, cache_name: str,
                      shard: Shard | None = None) -> Any:
        other = self.shapes[name][1 - hidden_axis] + (shard.pad if shard is not None and hidden_axis == 1 else 0)
        k, n = (other, units) if hidden_axis == 0 else (units, other)
        return self._empty((1, parts // (shard.devices if shard is not None else 1), k, n), dtype, ttnn.TILE_LAYOUT)

    def router(self, name: str, dtype: Any, cache_name: str, orders: list[torch.Tensor],
               grid: tuple[int, int] | None = None) -> Any:
        experts, k = self.shapes[name]
        return self._empty((1, 1, k, experts), dtype, ttnn.TILE_LAYOUT)

    def bias(self, names: list[str], cache_name: str, shard: Shard | None = None, dtype: Any = None) -> Any:
        out = self._out(sum(self.shapes[n][0] for n in names), shard)
        return self._empty((1, 1, 1, out), dtype or ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def expert_bias(self, names: list[str], cache_name: str, shard: Shard | None = None) -> Any:
        return self._empty((1, len(names) // (shard.devices if shard is not None else 1), 1,
                            self.shapes[names[0]][0] + (shard.pad if shard is not None else 0)), ttnn.bfloat16,
                           ttnn.TILE_LAYOUT)

    def router_bias(self, name: str, cache_name: str, orders: list[torch.Tensor],
                    grid: tuple[int, int] | None = None, dtype: Any = None) -> Any:
        return self._empty((1, 1, 1, self.shapes[name][0]), dtype or ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def sinks(self, name: str, cache_name: str, scale: float, decode: bool, shard: Shard | None = None) -> Any:
        heads = self.shapes[name][0] // (shard.parts(0 if decode else 1) if shard is not None else 1)
        return self._empty((heads, 32) if decode else (1, heads, 1, 1), ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def norm(self, name: str, shard: Shard | None = None, scale: float = 1.0) -> Any:
        n = shard.parts(2) if shard is not None else 1
        width = self.shapes[name][0] + (shard.pad if shard is not None else 0)
        return self._empty((1, 1, width // 32 // n, 32), ttnn.float32 if scale != 1.0 else self.norm_dtype,
                           ttnn.ROW_MAJOR_LAYOUT)

    def norm_row(self, name: str) -> Any:
        return self._empty((1, 1, 1, self.shapes[name][0]), self.norm_dtype, ttnn.TILE_LAYOUT)

    def embedding(self, name: str, shard: Shard | None = None) -> Any:
        vocab, dim = self.shapes[name]
        n = shard.parts(3) if shard is not None else 1
        return self._empty((1, 1, vocab, (dim + (shard.pad if shard is not None else 0)) // n), ttnn.bfloat16,
                           ttnn.ROW_MAJOR_LAYOUT)


def meta_shapes(args: Any) -> dict[str, tuple[int, ...]]:
    """The Meta-named weights of a model with these sizes and their [out, in] (or [n]) shapes."""
    hd, dim = args.head_dim, args.dim
    shapes: dict[str, tuple[int, ...]] = {"tok_embeddings.weight": (args.vocab_size, dim), "norm.weight": (dim,)}
    if not args.tie_word_embeddings:
        shapes["output.weight"] = (args.vocab_size, dim)
    for i in range(args.n_layers):
        p = f"layers.{i}."
        shapes.update({p + "attention_norm.weight": (dim,), p + "ffn_norm.weight": (dim,)})
        shapes.update(mla_shapes(args, i) if args.mla is not None else {
            p + "attention.wq.weight": (args.n_heads * hd, dim), p + "attention.wk.weight": (args.n_kv_heads * hd, dim),
            p + "attention.wv.weight": (args.n_kv_heads * hd, dim), p + "attention.wo.weight": (dim, args.n_heads * hd),
        })
        shapes.update(mlp_shapes(args, i))
        if args.sandwich_norms:
            shapes.update({p + "post_attention_norm.weight": (dim,), p + "post_ffn_norm.weight": (dim,)})
        if args.qkv_bias:
            shapes.update({p + "attention.wq.bias": (args.n_heads * hd,),
                           p + "attention.wk.bias": (args.n_kv_heads * hd,),
                           p + "attention.wv.bias": (args.n_kv_heads * hd,)})
        if args.qk_norm:
            shapes.update({p + "attention.q_norm.weight": (hd,), p + "attention.k_norm.weight": (hd,)})
        if args.o_bias:
            shapes[p + "attention.wo.bias"] = (dim,)
        if args.attention_sinks:
            shapes[p + "attention.sinks"] = (args.n_heads,)
    return shapes


def mla_shapes(args: Any, layer: int) -> dict[str, tuple[int, ...]]:
    """DeepSeek-V3's attention weights (hf_to_meta's names): the query projection (or its low-rank pair and norm),
    the latent projection and its norm, each head's absorbed matrices, WO."""
    m, p, dim, nh = args.mla, f"layers.{layer}.attention.", args.dim, args.n_heads
    q_width = nh * (m.nope_dim + m.rope_dim)
    shapes: dict[str, tuple[int, ...]] = (
        {p + "wq.weight": (q_width, dim)} if m.q_lora_rank is None else
        {p + "q_a_proj.weight": (m.q_lora_rank, dim), p + "q_a_layernorm.weight": (m.q_lora_rank,),
         p + "q_b_proj.weight": (q_width, m.q_lora_rank)})
    shapes.update({p + "kv_a_proj_with_mqa.weight": (m.row, dim), p + "kv_a_layernorm.weight": (m.kv_lora_rank,),
                   p + "wo.weight": (dim, nh * m.v_dim)})
    for h in range(nh):
        shapes.update({f"{p}uk.{h}.weight": (m.kv_lora_rank, m.nope_dim), f"{p}uv.{h}.weight": (m.v_dim,
                                                                                                 m.kv_lora_rank)})
    return shapes


def expert_names(layer: int, experts: int, which: str, kind: str = "weight") -> list[str]:
    """The Meta names of one projection (w1 gate, w3 up, w2 down) of every expert of a MoE layer, in expert order
    (kind "bias": their biases, GPT-OSS)."""
    return [f"layers.{layer}.feed_forward.experts.{e}.{which}.{kind}" for e in range(experts)]


def mlp_shapes(args: Any, layer: int) -> dict[str, tuple[int, ...]]:
    """Layer `layer`'s MLP weights: w1/w3/w2 of a dense MLP, or the router (gate) and every expert's w1/w3/w2."""
    p, dim = f"layers.{layer}.feed_forward.", args.dim
    if not args.is_moe(layer):
        return {p + "w1.weight": (args.hidden_dim, dim), p + "w3.weight": (args.hidden_dim, dim),
                p + "w2.weight": (dim, args.hidden_dim)}
    hid, n = args.moe_hidden_dim, args.n_experts
    shapes = {p + "gate.weight": (n, dim)}
    for which, shape in (("w1", (hid, dim)), ("w3", (hid, dim)), ("w2", (dim, hid))):
        shapes.update({name: shape for name in expert_names(layer, n, which)})
        if args.moe_bias:  # GPT-OSS: a bias on the router and on each expert's projections
            shapes.update({name: shape[:1] for name in expert_names(layer, n, which, "bias")})
    if args.router_scoring == "sigmoid":  # GLM-4.5: the bias added to the scores to choose (padded: -1e30)
        shapes[p + "gate.score_bias"] = (n,)
    elif args.moe_bias or args.experts_padded_from:  # (padded experts: their -1e30 logits)
        shapes[p + "gate.bias"] = (n,)
    if args.shared_expert_dim:  # Qwen2-MoE's shared expert and its gate (GLM-4.5's: ungated)
        s = args.shared_expert_dim
        shapes.update({p + "shared_expert.w1.weight": (s, dim), p + "shared_expert.w3.weight": (s, dim),
                       p + "shared_expert.w2.weight": (dim, s)})
        if args.shared_expert_gated:
            shapes[p + "shared_expert_gate.weight"] = (1, dim)
    return shapes


def check_state_dict(state_dict: dict[str, torch.Tensor], args: Any) -> None:
    """Refuse a checkpoint whose tensors are not exactly the ones this model reads, naming them: a missing weight, a
    weight of another shape, or a tensor the model would leave unused (e.g. an o_proj bias, an extra norm) would
    otherwise give wrong output without an error. `args` as the checkpoint describes it (MLP unpadded)."""
    want = meta_shapes(args)
    if args.tie_word_embeddings:  # hf_to_meta names the one shared tensor both ways
        want["output.weight"] = want["tok_embeddings.weight"]
    missing = sorted(n for n in want if n not in state_dict)
    unused = sorted(n for n in state_dict if n not in want)
    wrong = sorted(f"{n} {tuple(state_dict[n].shape)} (expected {want[n]})" for n in want
                   if n in state_dict and tuple(state_dict[n].shape) != tuple(want[n]))

    def names(items: list[str]) -> str:
        return ", ".join(items[:8]) + (f" and {len(items) - 8} more" if len(items) > 8 else "")

    problems = ([f"missing {names(missing)}"] if missing else []) + ([f"unused {names(unused)}"] if unused else [])
    problems += [f"wrong shape {names(wrong)}"] if wrong else []
    if problems:
        from tt_models.model_args import UnsupportedModelError

        raise UnsupportedModelError("the checkpoint's tensors are not the ones this model reads (names in the TT "
                                    "model's Meta layout): " + "; ".join(problems))
