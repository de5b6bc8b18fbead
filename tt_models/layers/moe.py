"""Mixture-of-experts MLP (Qwen3-MoE, Qwen2-MoE, Mixtral, GPT-OSS): a router picks experts_per_tok of the layer's
experts for each token and the token's output is the experts' gated MLPs summed with the router's weights.
Everything runs on the device, with no read-back, so a traced decode step replays whatever experts the new tokens
choose:

1. router logits = x @ W_router, in fp32 (a router decision flipped by rounding changes a token's whole MLP);
2. `topk` gives each token's k-th largest logit; the experts at or above it are selected (ge), and the weights are
   the softmax over all logits times that mask, or, renormalized (norm_topk_prob; Mixtral always), the softmax over
   the selected logits only (the others pushed to -1e30): exp(l_e) / sum over the selected of exp(l_j), HF's
   softmax-topk-renormalize with the common factor cancelled;
3. the tokens go in groups of 32 (one tile of rows) through `sparse_matmul`: gate and up projections of a group by
   an expert run only when some token of the group selected that expert (the sparsity entry is the group's summed
   weight for it), SiLU(gate) * up, then the down projection with the expert axis on the input;
4. each expert's output is multiplied by its token's weight (zero for experts the token did not select) and the
   experts summed;
5. Qwen2-MoE: plus the shared expert, a dense SwiGLU MLP every token runs, times sigmoid(x . shared_expert_gate)
   (plain linears on DRAM; on a mesh its hidden units split over the chips like the experts, _with_shared); GLM-4.5's
   shared experts are the same MLP without the gate.

GLM-4.5 (DeepSeek-V3's router) scores each expert with sigmoid(logit) instead of the softmax; a token takes the top
k of score + score_bias (a per-expert correction that only chooses; with DeepSeek-V3's group limit only from its
best groups, _group_limited), weighted by their scores, renormalized when norm_topk_prob, times routed_scaling
(_sigmoid_weights).

Decode and prefill share the sequence; decode's 32 user rows are one group. Every tensor is interleaved in DRAM:
the expert intermediates ([groups, experts, 32, moe_hidden_dim]) are too large for L1 at real widths.

Expert parallel over a 1xN mesh (attention tensor parallel as in tt_models/parallel.py; the MLP input is the whole
normed activation on every chip): chip d holds experts [d * E / N, (d + 1) * E / N). Its router weight has all
experts' columns with its own first (tt-metal's Mixtral swaps each chip's expert into column 0 the same way), so
the top-k and softmax, which do not depend on the order, give every chip the same weights, and the chip's own are
the first E / N columns; it runs its experts on every token and the chips' partial sums are reduce-scattered onto
the fractured residual, as the dense MLP's row-parallel w2. On an R x C mesh (the Galaxy split) the experts spread
over all R * C chips (chip (r, c) the (r * C + c)-th block), the MLP input is first gathered along the row (each chip
holds its row's share of the columns), and the partial sums are reduce-scattered along the row, then all-reduced
down the columns (collectives.reduce_experts).

expert_dispatch "all_to_all" (opt-in; docs/moe.md) instead sends each chip's share of the tokens to its experts'
chips with all_to_all_dispatch and brings the expert outputs back with all_to_all_combine (_forward_all_to_all)."""

from __future__ import annotations

from typing import Any

import torch

from tt_models.backend import ttnn
from tt_models.layers.collectives import gather_columns, reduce_experts
from tt_models.model_args import ModelArgs, UnsupportedModelError
from tt_models.parallel import TPPlan, experts_split, shared_expert_units, single_device_plan
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore, expert_names

TILE = 32
# Added to the logits of experts a token did not select before the renormalizing softmax: exp of it is 0.
_EXCLUDED = -1e30


def _largest_divisor(n: int, at_most: int) -> int:
    return max(d for d in range(1, min(n, at_most) + 1) if n % d == 0)


def sparse_program(ttnn_: Any, k: int, n: int, grid: tuple[int, int], fp32_acc: bool) -> Any:
    """The 1-D multicast (mcast_in0) program config sparse_matmul takes for one 32-row block [32, k] x [k, n]: the
    output's n tiles in per_core_N-tile blocks, one core each, on an x-by-y rectangle of the grid (the op multicasts
    the input to the bounding box of the cores with work and refuses a box with idle cores: the blocks must fill
    whole rows); the fewest tiles per core that allow such a rectangle. The input's k tiles stream in blocks of up
    to 8, output subblocks as wide as the destination registers allow."""
    kt, nt = k // TILE, -(-n // TILE)
    gx, gy = grid
    for per_core_n in range(1, nt + 1):
        blocks = -(-nt // per_core_n)
        widths = [x for x in range(min(blocks, gx), 0, -1) if blocks % x == 0 and blocks // x <= gy]
        if widths:
            x, y = widths[0], blocks // widths[0]
            break
    return ttnn_.MatmulMultiCoreReuseMultiCast1DProgramConfig(
        compute_with_storage_grid_size=ttnn_.CoreCoord(x, y), in0_block_w=_largest_divisor(kt, 8),
        out_subblock_h=1, out_subblock_w=_largest_divisor(per_core_n, 4 if fp32_acc else 8), out_block_h=1,
        out_block_w=per_core_n, per_core_M=1, per_core_N=per_core_n, fuse_batch=False, fused_activation=None,
        mcast_in0=True)


def _top_mask(x: Any, k: int, rows: int) -> Any:
    """[1, 1, rows, n]: 1.0 where x is at or above its row's k-th largest value (the row's top k; ties at the k-th
    all count), else 0.0; x is left to the caller."""
    dram = ttnn.DRAM_MEMORY_CONFIG
    values, indices = ttnn.topk(x, k=k, dim=-1, memory_config=dram)
    ttnn.deallocate(indices)
    kth = ttnn.slice(values, [0, 0, 0, k - 1], [1, 1, rows, k], memory_config=dram)
    if k > 1:  # k = 1: the slice is the whole tensor, another handle on the same buffer (0.81.1 probed), which
        ttnn.deallocate(values)  # a forced deallocate would free under kth
    mask = ttnn.ge(x, kth, memory_config=dram)
    ttnn.deallocate(kth)
    return mask


# How an expert-parallel MoE layer gets its tokens to the experts' chips (Transformer's `expert_dispatch`):
# "reduce" (the default) runs every token through each chip's experts and reduces the partial sums; "all_to_all"
# sends each chip's share of the tokens to its experts' chips with all_to_all_dispatch and brings their outputs back
# with all_to_all_combine (1 x N meshes).
EXPERT_DISPATCH = ("reduce", "all_to_all")


class MoE:
    def __init__(self, args: ModelArgs, weights: WeightStore, layer: int, prec: LayerPrecision,
                 device: Any, plan: TPPlan | None = None, expert_dispatch: str = "reduce") -> None:
        chips = plan.devices if plan is not None else 1  # (the plan has checked that the experts split evenly)
        if expert_dispatch not in EXPERT_DISPATCH:
            raise UnsupportedModelError(f"expert_dispatch {expert_dispatch!r}: expected one of {EXPERT_DISPATCH}")
        # all_to_all on one chip is the plain layer (nothing to dispatch). The ops run along each row of chips (the
        # line: all N of a 1 x N mesh, the C of an R x C mesh's row).
        self.all_to_all = expert_dispatch == "all_to_all" and chips > 1
        self.line = (plan.grid[1] if plan.two_d else chips) if self.all_to_all else 1
        if self.all_to_all and TILE % self.line:
            raise UnsupportedModelError(f"expert_dispatch 'all_to_all': {self.line} chips do not split 32-row tiles "
                                        f"of tokens evenly")
        p = f"layers.{layer}.feed_forward."
        self.plan, self.prec, self.k, self.norm_topk = plan, prec, args.experts_per_tok, args.norm_topk_prob
        self.n_experts, self.dim, self.hidden = args.n_experts, args.dim, args.moe_hidden_dim
        self.local = args.n_experts // chips  # experts per chip
        grid2d = plan.grid if plan is not None and plan.two_d else None
        # The router stays bf16 in every profile (as tt-metal's MoE routers): its output is computed in fp32. On a
        # mesh each chip's copy has its own experts' columns first; all_to_all instead routes each chip's own rows
        # with one copy in the experts' order (the dispatched top-k ids are global; its sparsity comes from them).
        orders = [torch.roll(torch.arange(args.n_experts), -d * self.local) for d in range(chips)]
        self.sigmoid, self.scaling = args.router_scoring == "sigmoid", args.routed_scaling
        self.groups = args.expert_groups
        self.router = self.router_global = None
        if self.all_to_all:
            self.router_global = weights.router(p + "gate.weight", ttnn.bfloat16, p + "gate.global",
                                                [torch.arange(args.n_experts)])
        else:
            self.router = weights.router(p + "gate.weight", ttnn.bfloat16, p + "gate", orders, grid2d)
        experts = experts_split(plan) if plan is not None else None
        # The down projection writes the residual: on a 1xN mesh with a padded residual (TPPlan.dim_pad), its
        # output has the zero columns too, so the reduce-scatter gives each chip whole tiles.
        down = experts_split(plan, written=True) if plan is not None else None
        self.out_dim = plan.padded_width if plan is not None else self.dim
        self.w1 = weights.experts(expert_names(layer, self.n_experts, "w1"), prec.ff1_ff3, p + "experts.w1", experts)
        self.w3 = weights.experts(expert_names(layer, self.n_experts, "w3"), prec.ff1_ff3, p + "experts.w3", experts)
        self.w2 = weights.experts(expert_names(layer, self.n_experts, "w2"), prec.ff2, p + "experts.w2", down)
        # GPT-OSS: the router's bias (in each chip's column order, as its weight) and each expert's biases,
        # [1, experts, 1, out], added to the sparse products' per-expert blocks.
        self.router_bias = self.router_bias_global = self.b1 = self.b3 = self.b2 = None
        self.score_bias = None
        if self.sigmoid:  # fp32, as the scores it is added to (HF keeps the buffer fp32); padded experts' -1e30
            self.score_bias = (weights.router_bias(p + "gate.score_bias", p + "gate.score_bias.global",
                                                   [torch.arange(args.n_experts)], dtype=ttnn.float32)
                               if self.all_to_all else
                               weights.router_bias(p + "gate.score_bias", p + "gate.score_bias", orders, grid2d,
                                                   dtype=ttnn.float32))
        elif args.moe_bias or args.experts_padded_from:  # (padded experts: their never-chosen logits)
            if self.all_to_all:
                self.router_bias_global = weights.router_bias(p + "gate.bias", p + "gate.bias.global",
                                                              [torch.arange(args.n_experts)])
            else:
                self.router_bias = weights.router_bias(p + "gate.bias", p + "gate.bias", orders, grid2d)
        if args.moe_bias:
            self.b1, self.b3, self.b2 = (
                weights.expert_bias(expert_names(layer, self.n_experts, w, "bias"), p + f"experts.b{w[1]}",
                                    down if w == "w2" else experts)
                for w in ("w1", "w3", "w2"))
        self.swiglu_clamp = args.swiglu_clamp
        # Qwen2-MoE's shared expert: its hidden units split over the chips as the experts are (chip d the d-th
        # block; each chip's partial output joins its experts' partial sum before the reduction), its gate [dim, 1]
        # on every chip.
        self.shared = None
        if args.shared_expert_dim:
            units, q = shared_expert_units(args, plan or single_device_plan(args)), p + "shared_expert."
            self.shared = tuple(
                weights.hidden_blocks(q + f"{w}.weight", 1 if w == "w2" else 0, chips, units,
                                      prec.ff2 if w == "w2" else prec.ff1_ff3, q + w, down if w == "w2" else experts)
                for w in ("w1", "w3", "w2"))
            self.shared_gate = (weights.router(p + "shared_expert_gate.weight", ttnn.bfloat16,
                                               p + "shared_expert_gate", [torch.arange(1)] * chips, grid2d)
                                if args.shared_expert_gated else None)
        grid = device.compute_with_storage_grid_size()
        grid = (grid.x, grid.y)
        acc = {name: bool(prec.kernels[name].fp32_dest_acc_en) for name in ("LI_FF1_FF3", "LI_FF2")}
        self.up_program = sparse_program(ttnn, self.dim, self.hidden, grid, acc["LI_FF1_FF3"])
        self.down_program = sparse_program(ttnn, self.hidden, self.out_dim, grid, acc["LI_FF2"])
        self.router_kernel = ttnn.WormholeComputeKernelConfig(
            math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False, fp32_dest_acc_en=True,
            packer_l1_acc=True)
        if self.all_to_all:
            self.device, self.chips = device, chips
            # Chip d holds experts [d * E / N, (d + 1) * E / N): the expert-to-chip map both ops read.
            mapping = torch.eye(chips, dtype=torch.int32).repeat_interleave(self.local, dim=0)
            self.expert_mapping = ttnn.from_torch(mapping.reshape(1, 1, self.n_experts, chips), ttnn.uint16,
                                                  layout=ttnn.ROW_MAJOR_LAYOUT, device=device,
                                                  memory_config=ttnn.DRAM_MEMORY_CONFIG,
                                                  mesh_mapper=ttnn.ReplicateTensorToMesh(device))
            self._splits: dict[int, tuple[Any, Any]] = {}
            self._zeros: dict[Any, Any] = {}
            self._scores: dict[int, Any] = {}
            self.row_first = None
            if grid2d:  # each row's first expert (row r holds experts [r * E / R, (r + 1) * E / R)), on its chips
                rows_ = grid2d[0]
                first = (torch.arange(rows_, dtype=torch.float32) * (self.n_experts // rows_)).reshape(rows_, 1, 1, 1)
                self.row_first = ttnn.from_torch(first, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device,
                                                 memory_config=ttnn.DRAM_MEMORY_CONFIG,
                                                 mesh_mapper=ttnn.ShardTensor2dMesh(device, dims=(0, None),
                                                                                    mesh_shape=grid2d))

    def _weights(self, x: Any, rows: int) -> Any:
        """[1, 1, rows, experts] fp32: each token's weight for each expert, zero where it did not select it; on a
        mesh in the chip's router order, its own experts first."""
        dram = ttnn.DRAM_MEMORY_CONFIG
        logits = ttnn.linear(x, self.router, bias=self.router_bias, dtype=ttnn.float32, memory_config=dram,
                             compute_kernel_config=self.router_kernel)
        if self.sigmoid:
            return self._sigmoid_weights(logits, rows)
        selected = _top_mask(logits, self.k, rows)  # 1.0 where the expert is among the token's top k
        if self.norm_topk:
            off = ttnn.sub(selected, 1.0, memory_config=dram)  # 0 where selected, -1 elsewhere
            excluded = ttnn.mul(off, -_EXCLUDED, memory_config=dram)
            masked = ttnn.add(logits, excluded, memory_config=dram)
            for t in (off, excluded, selected, logits):
                ttnn.deallocate(t)
            weights = ttnn.softmax(masked, dim=-1, numeric_stable=True, memory_config=dram,
                                   compute_kernel_config=self.router_kernel)
            ttnn.deallocate(masked)
            return weights
        probs = ttnn.softmax(logits, dim=-1, numeric_stable=True, memory_config=dram,
                             compute_kernel_config=self.router_kernel)
        weights = ttnn.mul(probs, selected, memory_config=dram)
        for t in (probs, selected, logits):
            ttnn.deallocate(t)
        return weights

    def _sigmoid_weights(self, logits: Any, rows: int) -> Any:
        """GLM-4.5's routing weights from the router logits [1, 1, rows, experts] fp32 (consumed): the experts at or
        above the k-th largest sigmoid(logit) + score_bias are selected; each weight is the expert's sigmoid score
        (0 where not selected), divided by the selected scores' sum when norm_topk_prob, times routed_scaling. The
        sigmoid is fused into the ops that read the logits."""
        dram, sig = ttnn.DRAM_MEMORY_CONFIG, [ttnn.UnaryOpType.SIGMOID]
        choice = ttnn.add(logits, self.score_bias, input_tensor_a_activations=sig, memory_config=dram)
        if self.groups:
            limited = self._group_limited(choice, rows)
            ttnn.deallocate(choice)
            choice = limited
        selected = _top_mask(choice, self.k, rows)
        ttnn.deallocate(choice)
        weights = ttnn.mul(logits, selected, input_tensor_a_activations=sig, memory_config=dram)
        for t in (logits, selected):
            ttnn.deallocate(t)
        if self.norm_topk:  # (HF adds 1e-20 to the sum, which no fp32 sum of sigmoids this size notices)
            total = ttnn.sum(weights, dim=-1, keepdim=True, memory_config=dram)
            normed = ttnn.mul(weights, total, input_tensor_b_activations=[ttnn.UnaryOpType.RECIP],
                              memory_config=dram)
            for t in (weights, total):
                ttnn.deallocate(t)
            weights = normed
        if self.scaling != 1.0:
            scaled = ttnn.mul(weights, self.scaling, memory_config=dram)
            ttnn.deallocate(weights)
            weights = scaled
        return weights

    def _group_limited(self, choice: Any, rows: int) -> Any:
        """DeepSeek-V3's group limit on the choice [1, 1, rows, experts] fp32 (a new tensor; choice is left to the
        caller): each group of consecutive experts is scored by the sum of its two best choices, and the experts
        outside a token's topk_group best groups get -1e30 (HF: -inf), so its top k comes from those groups only.
        Every reshape here changes the last dim, which moves the pages: each is a copy, freed after use."""
        dram = ttnn.DRAM_MEMORY_CONFIG
        groups, kept = self.groups
        grouped = ttnn.reshape(choice, (1, rows, groups, self.n_experts // groups))
        best2, indices = ttnn.topk(grouped, k=2, dim=-1, memory_config=dram)
        ttnn.deallocate(indices)
        score = ttnn.sum(best2, dim=-1, keepdim=True, memory_config=dram)  # [1, rows, groups, 1]
        ttnn.deallocate(best2)
        flat = ttnn.reshape(score, (1, 1, rows, groups))
        ttnn.deallocate(score)
        chosen = _top_mask(flat, kept, rows)  # 1.0 for the token's best groups
        ttnn.deallocate(flat)
        off = ttnn.sub(chosen, 1.0, memory_config=dram)  # 0 for a chosen group, -1 otherwise
        ttnn.deallocate(chosen)
        excluded = ttnn.mul(off, -_EXCLUDED, memory_config=dram)
        ttnn.deallocate(off)
        column = ttnn.reshape(excluded, (1, rows, groups, 1))
        ttnn.deallocate(excluded)
        masked = ttnn.add(grouped, column, memory_config=dram)
        for t in (grouped, column):
            ttnn.deallocate(t)
        out = ttnn.reshape(masked, (1, 1, rows, self.n_experts))
        ttnn.deallocate(masked)
        return out

    def _sparsity(self, x: Any, rows: int) -> tuple[Any, Any]:
        """This chip's routing weights [1, groups, 32, experts] (its own experts' columns) and the sparsity
        [1, groups, 1, experts] bf16 row-major sparse_matmul reads: one entry per (group, expert), non-zero when some
        token of the group selected the expert."""
        dram, experts = ttnn.DRAM_MEMORY_CONFIG, self.local
        weights = self._weights(x, rows)
        if experts < self.n_experts:  # this chip's experts: the first columns in its router order
            every = weights
            weights = ttnn.slice(every, [0, 0, 0, 0], [1, 1, rows, experts], memory_config=dram)
            ttnn.deallocate(every)
        grouped_w = ttnn.reshape(weights, (1, rows // TILE, TILE, experts))
        hit = ttnn.sum(grouped_w, dim=2, keepdim=True, memory_config=dram)
        hit_bf16 = ttnn.typecast(hit, ttnn.bfloat16, memory_config=dram)
        ttnn.deallocate(hit)
        sparsity = ttnn.to_layout(hit_bf16, ttnn.ROW_MAJOR_LAYOUT, memory_config=dram)
        ttnn.deallocate(hit_bf16)
        return grouped_w, sparsity

    def _experts(self, xg: Any, sparsity: Any) -> Any:
        """The tokens [1, groups, 32, dim] through this chip's experts (a (group, expert) block only where the
        sparsity entry is non-zero) -> [groups, experts, 32, dim] (with the down projection's bias)."""
        groups, experts = xg.shape[1], self.local
        dram = ttnn.DRAM_MEMORY_CONFIG
        prec, kern = self.prec, self.prec.kernels
        gate = ttnn.sparse_matmul(xg, self.w1, sparsity=sparsity, program_config=self.up_program,
                                  memory_config=dram, dtype=prec.residual, compute_kernel_config=kern["LI_FF1_FF3"])
        up = ttnn.sparse_matmul(xg, self.w3, sparsity=sparsity, program_config=self.up_program,
                                memory_config=dram, dtype=prec.residual, compute_kernel_config=kern["LI_FF1_FF3"])
        blocks = (groups, experts, TILE, self.hidden)
        h = self._glu(ttnn.reshape(gate, blocks), ttnn.reshape(up, blocks))
        sparsity_a = ttnn.reshape(sparsity, (1, 1, groups, experts))
        out = ttnn.sparse_matmul(h, self.w2, sparsity=sparsity_a, program_config=self.down_program,
                                 is_input_a_sparse=True, is_input_b_sparse=False, memory_config=dram,
                                 dtype=prec.residual, compute_kernel_config=kern["LI_FF2"])  # [groups, E, 32, dim]
        ttnn.deallocate(h)
        return self._bias(out, self.b2, prec.residual)

    def forward(self, x: Any, memory_config: Any) -> Any:
        """x: [1, 1, rows, dim] interleaved (rows a multiple of 32) -> [1, 1, rows, dim] (on a mesh: this chip's
        columns of the sum over the chips' experts) in memory_config."""
        if self.all_to_all:
            return self._forward_all_to_all(x, memory_config)
        rows, dim = x.shape[-2], self.dim
        groups = rows // TILE
        dram = ttnn.DRAM_MEMORY_CONFIG
        grouped_w, sparsity = self._sparsity(x, rows)
        xg = ttnn.reshape(x, (1, groups, TILE, dim))
        out = self._experts(xg, sparsity)
        ttnn.deallocate(sparsity)
        # Each (group, expert) block's rows times their tokens' weights for that expert: [groups, E, 32, 1].
        scale = ttnn.permute(grouped_w, (1, 3, 2, 0), memory_config=dram)
        ttnn.deallocate(grouped_w)
        weighted = ttnn.mul(out, scale, dtype=self.prec.residual, memory_config=dram)
        ttnn.deallocate(out)
        ttnn.deallocate(scale)
        summed = ttnn.sum(weighted, dim=1, keepdim=True, memory_config=dram)
        ttnn.deallocate(weighted)
        out = self._with_shared(x, ttnn.reshape(summed, (1, 1, rows, self.out_dim)))
        return out if self.plan is None else reduce_experts(out, self.plan, memory_config)

    def _with_shared(self, x: Any, routed: Any) -> Any:
        """routed [1, 1, rows, out_dim] plus Qwen2-MoE's shared expert of x [1, 1, rows, dim]:
        sigmoid(x . gate) * w2(SiLU(w1 x) * w3 x) (GLM-4.5: without the gate), on a mesh this chip's share of its
        hidden units (a partial sum, as the routed one)."""
        if self.shared is None:
            return routed
        dram, prec, kern = ttnn.DRAM_MEMORY_CONFIG, self.prec, self.prec.kernels
        w1, w3, w2 = self.shared
        gate = ttnn.linear(x, w1, dtype=prec.residual, memory_config=dram, compute_kernel_config=kern["LI_FF1_FF3"])
        up = ttnn.linear(x, w3, dtype=prec.residual, memory_config=dram, compute_kernel_config=kern["LI_FF1_FF3"])
        h = ttnn.mul(gate, up, input_tensor_a_activations=[ttnn.UnaryOpType.SILU], dtype=prec.activation,
                     memory_config=dram)
        for t in (gate, up):
            ttnn.deallocate(t)
        y = ttnn.linear(h, w2, dtype=prec.residual, memory_config=dram, compute_kernel_config=kern["LI_FF2"])
        ttnn.deallocate(h)
        if self.shared_gate is None:
            out = ttnn.add(routed, y, dtype=prec.residual, memory_config=dram)
            for t in (routed, y):
                ttnn.deallocate(t)
            return out
        # The gate's logit in fp32, as the router's; sigmoid fused on it in the multiply (broadcast over the row).
        logit = ttnn.linear(x, self.shared_gate, dtype=ttnn.float32, memory_config=dram,
                            compute_kernel_config=self.router_kernel)  # [1, 1, rows, 1]
        scaled = ttnn.mul(y, logit, input_tensor_b_activations=[ttnn.UnaryOpType.SIGMOID], dtype=prec.residual,
                          memory_config=dram)
        for t in (y, logit):
            ttnn.deallocate(t)
        out = ttnn.add(routed, scaled, dtype=prec.residual, memory_config=dram)
        for t in (routed, scaled):
            ttnn.deallocate(t)
        return out

    def _split(self, rows: int) -> tuple[Any, Any]:
        """Per chip d of the line (T = rows / N tokens each, chip d the rows [d * T, (d + 1) * T)): `mine` [1, T]
        uint32, the rows it takes; `place` [1, rows] uint32, for each row its own index among them, or T (the zero
        row appended after them) for another chip's. Embedding lookups: gathers, so nothing of the other rows
        mixes in. One pair per row count, made on first use (decode: 32 rows, before the trace is captured)."""
        if rows not in self._splits:
            n, t = self.line, rows // self.line
            r = torch.arange(rows)
            place = torch.cat([torch.where((r >= d * t) & (r < (d + 1) * t), r - d * t, t) for d in range(n)])

            def shard(ids: torch.Tensor) -> Any:
                return ttnn.from_torch(ids.to(torch.int32).reshape(1, -1), ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT,
                                       device=self.device, memory_config=ttnn.DRAM_MEMORY_CONFIG,
                                       mesh_mapper=mapper)

            mapper = (ttnn.ShardTensor2dMesh(self.device, dims=(None, 1), mesh_shape=self.plan.grid)
                      if self.plan.two_d else ttnn.ShardTensorToMesh(self.device, dim=1))

            self._splits[rows] = (shard(r), shard(place))
        return self._splits[rows]

    def _ones(self, rows: int) -> Any:
        """moe_expert_token_remap's scores for `rows` dispatched rows: [1, 1, rows, experts] bf16 row-major ones
        (as tt-metal's remap_topk_mask); one per row count, made on first use like _split's."""
        if rows not in self._scores:
            self._scores[rows] = ttnn.from_torch(torch.ones(1, 1, rows, self.n_experts), ttnn.bfloat16,
                                                 layout=ttnn.ROW_MAJOR_LAYOUT, device=self.device,
                                                 memory_config=ttnn.DRAM_MEMORY_CONFIG,
                                                 mesh_mapper=ttnn.ReplicateTensorToMesh(self.device))
        return self._scores[rows]

    def _top_k(self, x: Any) -> tuple[Any, Any]:
        """x [1, 1, T, dim] -> each token's k expert ids [1, 1, T, k] uint16 (global ids) and their routing weights
        [1, 1, T, k] fp32, slot by slot: the softmax over the k selected logits (renormalized: Mixtral, Qwen3-MoE
        with norm_topk_prob, GPT-OSS) or the softmax over all experts at the k selected."""
        dram = ttnn.DRAM_MEMORY_CONFIG
        logits = ttnn.linear(x, self.router_global, bias=self.router_bias_global, dtype=ttnn.float32,
                             memory_config=dram, compute_kernel_config=self.router_kernel)
        if self.sigmoid:  # every expert's weight (0 unless selected): the top k of them are the selected ones
            weights = self._sigmoid_weights(logits, x.shape[-2])
            values, indices = ttnn.topk(weights, k=self.k, dim=-1, memory_config=dram)
            ttnn.deallocate(weights)
            return indices, values
        if not self.norm_topk:
            probs = ttnn.softmax(logits, dim=-1, numeric_stable=True, memory_config=dram,
                                 compute_kernel_config=self.router_kernel)
            ttnn.deallocate(logits)
            values, indices = ttnn.topk(probs, k=self.k, dim=-1, memory_config=dram)
            ttnn.deallocate(probs)
            return indices, values
        values, indices = ttnn.topk(logits, k=self.k, dim=-1, memory_config=dram)
        ttnn.deallocate(logits)
        weights = ttnn.softmax(values, dim=-1, numeric_stable=True, memory_config=dram,
                               compute_kernel_config=self.router_kernel)
        ttnn.deallocate(values)
        return indices, weights

    def _forward_all_to_all(self, x: Any, memory_config: Any) -> Any:
        """expert_dispatch "all_to_all" (x: the whole normed activation on every chip), along each row of chips
        (the line; 2-D: see _own_row): chip d of the line takes its rows [d * T, (d + 1) * T), routes them, and
        all_to_all_dispatch sends each to the chips holding its k experts (bf16 row-major, global expert ids
        uint16); each chip runs its experts on the dispatched rows (in the original row order: chip q's rows land
        at [q * T, (q + 1) * T)) with the sparsity moe_expert_token_remap computes from the dispatched ids, as
        tt-metal's MoE models do (a (32-row block, expert) pair runs when a row of the block selected the expert),
        all_to_all_combine brings each token's k expert outputs home, where they are weighted and summed. The
        chips' token rows, each at its place among zero rows, are then reduce-scattered onto the fractured residual
        (exact: one non-zero term per sum)."""
        rows, dim = x.shape[-2], self.dim
        groups, t = rows // TILE, rows // self.line
        dram, bf16 = ttnn.DRAM_MEMORY_CONFIG, ttnn.bfloat16
        topology = ttnn.Topology.Linear
        mine_ids, place_ids = self._split(rows)
        mine = ttnn.embedding(mine_ids, x, layout=ttnn.TILE_LAYOUT, memory_config=dram)  # [1, T, dim]
        mine = ttnn.reshape(mine, (1, 1, t, dim))
        indices, weights = self._top_k(mine)
        if mine.dtype != bf16:  # the reference profile's fp32 activations: the op carries bf16 only
            rounded = ttnn.typecast(mine, bf16, memory_config=dram)
            ttnn.deallocate(mine)
            mine = rounded
        tokens = ttnn.to_layout(mine, ttnn.ROW_MAJOR_LAYOUT, memory_config=dram)
        ttnn.deallocate(mine)
        if self.row_first is not None:
            indices, weights = self._own_row(indices, weights)
        if indices.dtype != ttnn.uint16:  # (top-k of fp32 gives uint32 indices; the ops take uint16)
            narrow = ttnn.typecast(indices, ttnn.uint16, memory_config=dram)
            ttnn.deallocate(indices)
            indices = narrow
        ids = ttnn.to_layout(indices, ttnn.ROW_MAJOR_LAYOUT, memory_config=dram)
        ttnn.deallocate(indices)
        sent, meta = ttnn.all_to_all_dispatch(tokens, ids, self.expert_mapping, cluster_axis=1, topology=topology,
                                              memory_config=dram, output_concat_dim=2)  # [1, 1, rows, dim]
        for tt in (tokens, ids):
            ttnn.deallocate(tt)
        # The sparsity of the dispatched rows: per 32-row block and local expert, 1 where a row of the block
        # selected the expert ([1, 1, groups, E / N] uint16; the scores are tt-metal's constant mask of ones).
        local_w, sparsity = ttnn.moe_expert_token_remap(self._ones(rows), self.expert_mapping, meta,
                                                        memory_config=dram, reduction_size=TILE)
        ttnn.deallocate(local_w)
        xt = ttnn.to_layout(sent, ttnn.TILE_LAYOUT, memory_config=dram)
        ttnn.deallocate(sent)
        out = self._experts(ttnn.reshape(xt, (1, groups, TILE, dim)), sparsity)  # [groups, E / N, 32, out_dim]
        ttnn.deallocate(xt)
        ttnn.deallocate(sparsity)
        if groups > 1 and self.local > 1:
            per_expert = ttnn.permute(out, (1, 0, 2, 3), memory_config=dram)
            ttnn.deallocate(out)
            out = per_expert
        # (one group or one expert: the blocks are already in that order; a permute would hand back a view of
        # its input on the device, which deallocating the input frees)
        per_expert = ttnn.reshape(out, (self.local, 1, rows, self.out_dim))
        if per_expert.dtype != bf16:
            rounded = ttnn.typecast(per_expert, bf16, memory_config=dram)
            ttnn.deallocate(per_expert)
            per_expert = rounded
        expert_rows = ttnn.to_layout(per_expert, ttnn.ROW_MAJOR_LAYOUT, memory_config=dram)
        ttnn.deallocate(per_expert)
        back = ttnn.all_to_all_combine(expert_rows, meta, self.expert_mapping, cluster_axis=1, topology=topology,
                                       memory_config=dram, output_shard_dim=2)  # [k, 1, T, out_dim]: slot by slot
        for tt in (expert_rows, meta):
            ttnn.deallocate(tt)
        slots = ttnn.to_layout(back, ttnn.TILE_LAYOUT, memory_config=dram)
        ttnn.deallocate(back)
        scale = ttnn.permute(weights, (3, 1, 2, 0), memory_config=dram)  # [k, 1, T, 1]
        if self.k > 1:  # (k = 1: the same layout, a view of the weights)
            ttnn.deallocate(weights)
        weighted = ttnn.mul(slots, scale, dtype=self.prec.residual, memory_config=dram)
        for tt in (slots, scale):
            ttnn.deallocate(tt)
        summed = ttnn.sum(weighted, dim=0, keepdim=True, memory_config=dram)  # [1, 1, T, out_dim]
        ttnn.deallocate(weighted)
        table = ttnn.concat([summed, self._zero_row(summed.dtype)], dim=2, memory_config=dram)
        ttnn.deallocate(summed)
        placed = ttnn.embedding(place_ids, table, layout=ttnn.TILE_LAYOUT, memory_config=dram)  # [1, rows, out_dim]
        ttnn.deallocate(table)
        out = self._with_shared(x, ttnn.reshape(placed, (1, 1, rows, self.out_dim)))  # (every row, this chip's units)
        return reduce_experts(out, self.plan, memory_config)

    def _own_row(self, indices: Any, weights: Any) -> tuple[Any, Any]:
        """2-D: the ops reach only the experts of this chip's row. A slot whose expert another row holds gets
        weight 0 and the row's first expert instead (sent there and combined like any slot, then dropped); the
        other row's chips, which took the same tokens, add that expert's share in the reduction down the columns.
        Ids are small integers, exact in fp32."""
        dram, span = ttnn.DRAM_MEMORY_CONFIG, float(self.n_experts // self.plan.grid[0])
        ids = ttnn.typecast(indices, ttnn.float32, memory_config=dram)
        ttnn.deallocate(indices)
        rel = ttnn.sub(ids, self.row_first, memory_config=dram)  # the id within this row's experts
        ttnn.deallocate(ids)
        above = ttnn.ge(rel, 0.0, memory_config=dram)
        beyond = ttnn.ge(rel, span, memory_config=dram)
        own = ttnn.sub(above, beyond, memory_config=dram)  # 1.0 where this row holds the slot's expert, else 0.0
        for tt in (above, beyond):
            ttnn.deallocate(tt)
        kept = ttnn.mul(weights, own, memory_config=dram)
        ttnn.deallocate(weights)
        local = ttnn.mul(rel, own, memory_config=dram)
        ttnn.deallocate(rel)
        ttnn.deallocate(own)
        ids = ttnn.add(local, self.row_first, memory_config=dram)
        ttnn.deallocate(local)
        narrow = ttnn.typecast(ids, ttnn.uint16, memory_config=dram)
        ttnn.deallocate(ids)
        return narrow, kept

    def _zero_row(self, dtype: Any) -> Any:
        if dtype not in self._zeros:
            self._zeros[dtype] = ttnn.from_torch(torch.zeros(1, 1, 1, self.out_dim), dtype, layout=ttnn.TILE_LAYOUT,
                                                 device=self.device, memory_config=ttnn.DRAM_MEMORY_CONFIG,
                                                 mesh_mapper=ttnn.ReplicateTensorToMesh(self.device))
        return self._zeros[dtype]

    def _bias(self, blocks: Any, bias: Any, dtype: Any) -> Any:
        """Per-expert blocks [groups, E, 32, n] plus each expert's bias [1, E, 1, n] (GPT-OSS); the blocks of
        experts a group skipped are zero and get the bias too, which their zero routing weight then drops."""
        if bias is None:
            return blocks
        out = ttnn.add(blocks, bias, dtype=dtype, memory_config=ttnn.DRAM_MEMORY_CONFIG)
        ttnn.deallocate(blocks)
        return out

    def _glu(self, gate: Any, up: Any) -> Any:
        """The experts' gated activation of the gate and up blocks [groups, E, 32, hidden]: SiLU(gate) * up, or
        GPT-OSS's clamped SwiGLU (up + 1) * g * sigmoid(alpha * g), g = min(gate, limit), up clamped to
        [-limit, limit], each step an element-wise op (as tt-metal's GPT-OSS experts apply it); both after the
        experts' biases."""
        dram, act = ttnn.DRAM_MEMORY_CONFIG, self.prec.activation
        if self.swiglu_clamp is None:
            h = ttnn.mul(gate, up, input_tensor_a_activations=[ttnn.UnaryOpType.SILU], dtype=act, memory_config=dram)
            ttnn.deallocate(gate)
            ttnn.deallocate(up)
            return h
        alpha, limit = self.swiglu_clamp
        gate = self._bias(gate, self.b1, self.prec.residual)
        up = self._bias(up, self.b3, self.prec.residual)
        g = ttnn.clamp(gate, None, limit, memory_config=dram)
        u = ttnn.clamp(up, -limit, limit, memory_config=dram)
        ttnn.deallocate(gate)
        ttnn.deallocate(up)
        scaled = ttnn.mul(g, alpha, memory_config=dram)
        glu = ttnn.mul(g, scaled, input_tensor_b_activations=[ttnn.UnaryOpType.SIGMOID], memory_config=dram)
        for t in (g, scaled):
            ttnn.deallocate(t)
        u1 = ttnn.add(u, 1.0, memory_config=dram)
        ttnn.deallocate(u)
        h = ttnn.mul(u1, glu, dtype=act, memory_config=dram)
        ttnn.deallocate(u1)
        ttnn.deallocate(glu)
        return h

    def _whole(self, x: Any) -> Any:
        """The normed activation with every column, interleaved in DRAM (a new tensor, or x itself): on a 2-D mesh
        each chip holds its row's share of the columns, gathered along the row."""
        xi = ttnn.to_memory_config(x, ttnn.DRAM_MEMORY_CONFIG)
        if self.plan is None or not self.plan.two_d:
            return xi
        whole = gather_columns(xi, self.plan, ttnn.DRAM_MEMORY_CONFIG)
        if xi is not x:
            ttnn.deallocate(xi)
        if not self.plan.dim_pad:
            return whole
        # A padded residual: the model's columns (the router and the experts read unpadded weights).
        real = ttnn.slice(whole, [0, 0, 0, 0], [1, 1, whole.shape[-2], self.dim], memory_config=ttnn.DRAM_MEMORY_CONFIG)
        ttnn.deallocate(whole)
        return real

    def _run(self, x: Any, memory_config: Any) -> Any:
        xi = self._whole(x)
        out = self.forward(xi, memory_config)
        if xi is not x:
            ttnn.deallocate(xi)
        return out

    def decode(self, x: Any) -> Any:
        """x: the width-sharded normed residual of the decode rows."""
        return self._run(x, ttnn.L1_MEMORY_CONFIG)

    def prefill(self, x: Any) -> Any:
        return self._run(x, ttnn.DRAM_MEMORY_CONFIG)
