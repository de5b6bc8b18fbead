"""Where each tensor of the model lives on a device and how each op spreads its work: memory and program configs,
as data computed once from the model's sizes and the device's grid, named for what they shard.

Decode follows tt_transformers' layout: the residual stream stays width-sharded in L1 (tensor parallel: each chip its
dim / N columns, on as many cores as divide their tiles, and the norms gather the whole width onto the one-chip
residual grid, which the QKV, MLP and LM-head matmuls read); the weights of
every decode matmul are width-sharded over the DRAM banks and multiplied with DRAM-sharded program configs, each
taking its input's width sharding as it comes; attention heads are height-sharded one user per core (Q and V on the
first B cores, K on the next B, so K and V update the cache in one fused op); rotary tables are per-user shards next
to the heads they rotate. Prefill runs on interleaved DRAM with 2-D multicast matmuls over the same weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from tt_models.backend import ttnn

TILE = 32
MAX_CORES = 64


def _tiles(n: int) -> int:
    return -(-n // TILE)


def largest_divisor(n: int, at_most: int = 8) -> int:
    return max(i for i in range(1, at_most + 1) if n % i == 0)


def core_count(tiles: int, cores: int) -> int:
    """How many cores split `tiles` whole tiles each: the divisor of `tiles` (at most `cores`, at most MAX_CORES)
    nearest 32 (enough cores to spread the reads, few enough that shards stay whole tiles), the larger on a tie.
    1 always divides, so every width has an answer; a width whose tiles are prime above the grid runs on one core."""
    counts = [c for c in range(1, min(MAX_CORES, cores) + 1) if tiles % c == 0]
    return min(counts, key=lambda c: (abs(c - 32), -c))


def residual_cores(dim_tiles: int, grid: tuple[int, int]) -> tuple[int, int]:
    """(x, y) of the grid holding the width-sharded residual: core_count's cores laid as few rows as fit the grid's
    width (the next count down when no rectangle holds it, e.g. a prime count wider than the grid)."""
    gx, gy = grid
    counts = [c for c in range(1, min(MAX_CORES, gx * gy) + 1) if dim_tiles % c == 0]
    for c in sorted(counts, key=lambda c: (abs(c - 32), -c)):
        for rows in range(1, gy + 1):
            if c % rows == 0 and c // rows <= gx:
                return c // rows, rows
    raise ValueError(f"no core grid divides {dim_tiles} tiles on a {gx}x{gy} grid")


def dram_sharded_weight(ttnn_: Any, k: int, n: int, banks: int) -> Any:
    """A [k, n] weight width-sharded over the DRAM banks: n is padded to whole tiles per bank, each bank holding a
    [k, padded_n / banks] column strip, as DRAM-sharded matmuls stream it. The strip width, ceil(n_tiles / banks)
    tiles, is what each bank's reader core computes: the program gives every worker ceil(N / workers) tiles and
    reads them contiguously from its bank, so any other strip width computes wrong columns without an error."""
    padded = -(-n // (TILE * banks)) * TILE * banks
    grid = ttnn_.CoreRangeSet({ttnn_.CoreRange(ttnn_.CoreCoord(0, 0), ttnn_.CoreCoord(banks - 1, 0))})
    spec = ttnn_.ShardSpec(grid, [k, padded // banks], ttnn_.ShardOrientation.ROW_MAJOR)
    return ttnn_.MemoryConfig(ttnn_.TensorMemoryLayout.WIDTH_SHARDED, ttnn_.BufferType.DRAM, spec)


@dataclass(frozen=True)
class MatmulDtypes:
    """Tile bytes a matmul's circular buffers hold: input, weight, output, and the accumulation format (fp32 with
    fp32 accumulation on, else bf16)."""

    in0: int = 2048
    in1: int = 1088
    out: int = 2048
    interm: int = 4096


def dram_matmul_cb_bytes(in0_block_w: int, weight_shard_tiles: int, dt: MatmulDtypes) -> int:
    """L1 per core the DRAM-sharded matmul's own circular buffers take, as measured on the real ttnn 0.81.1 (the
    sharded input and the output's storage shards are the tensors' own L1): the double-buffered input block, the
    weight stream triple-buffered (3 x in0_block_w x the strip per bank), and the output block of a strip's width
    rounded up to whole subblocks (8 tiles, 4 with fp32 accumulation), twice when the accumulation format differs
    from the output's. A device refuses a program whose buffers reach its lowest L1 buffer."""
    out_w = -(-weight_shard_tiles // (4 if dt.interm == 4096 else 8)) * (4 if dt.interm == 4096 else 8)
    cbs = 2 * in0_block_w * dt.in0 + 3 * in0_block_w * weight_shard_tiles * dt.in1 + out_w * dt.out
    return cbs + (out_w * dt.interm if dt.interm != dt.out else 0)


@dataclass(frozen=True)
class DramMatmul:
    """A decode matmul [32, k] x [k, n] whose input is width-sharded on `cores` cores (per_core_k tiles each) and
    whose weight streams from the DRAM banks (weight_shard_tiles columns per bank); its output lands width-sharded on
    out_cores cores (per_core_n tiles each). `why` says how the numbers were chosen."""

    program: Any
    k_tiles: int
    n_tiles: int
    cores: int
    per_core_k: int
    per_core_n: int
    out_cores: int
    weight_shard_tiles: int
    cb_bytes: int
    why: str

    def describe(self) -> str:
        pc = self.program
        return (f"K {self.k_tiles} x N {self.n_tiles} tiles: input on {self.cores} cores x {self.per_core_k} tiles, "
                f"in0_block_w {pc.in0_block_w}, per_core_N {pc.per_core_N} -> output on {self.out_cores} cores, "
                f"weight {self.weight_shard_tiles} tiles per DRAM bank, circular buffers {self.cb_bytes / 1024:.0f} "
                f"KiB per core ({self.why})")


def dram_matmul(k: int, n: int, cores: int, banks: int, out_cores: int | None = None,
                dtypes: MatmulDtypes = MatmulDtypes(), cb_budget: int = 1_180_000,
                grid_cores: int = MAX_CORES) -> DramMatmul:
    """DRAM-sharded program config for an input width-sharded on `cores` cores, which must split k's tiles evenly
    (the program gives each input core K / in0_block_w / cores blocks: an uneven split is refused, or miscomputed).

    in0_block_w: the largest divisor of the per-core width (at most 8) whose circular buffers fit cb_budget bytes
    per core: the weight stream holds 3 x in0_block_w x (columns per bank) tiles, so wide outputs get narrow blocks.
    per_core_N: n's tiles / out_cores when the output feeds another DRAM-sharded matmul (which needs its input split
    evenly: out_cores must divide n's tiles), else ceil(n's tiles / cores), as tt_transformers; widened until the
    output's cores fit the grid."""
    kt, nt = _tiles(k), _tiles(n)
    if kt % cores:
        raise ValueError(f"a DRAM-sharded matmul's input must split evenly: K {kt} tiles on {cores} cores")
    per_core_k = kt // cores
    shard = -(-nt // banks)
    widths = sorted((w for w in range(1, 9) if per_core_k % w == 0), reverse=True)
    w = next((w for w in widths if dram_matmul_cb_bytes(w, shard, dtypes) <= cb_budget), None)
    if w is None:
        raise ValueError(f"no DRAM-sharded matmul config for K {kt} x N {nt} tiles fits {cb_budget} B of L1 per "
                         f"core: one block of the weight stream ({shard} tiles per bank) needs "
                         f"{dram_matmul_cb_bytes(1, shard, dtypes)} B")
    why = [f"in0_block_w {w}: " + ("the per-core width" if w == per_core_k else
                                    f"largest divisor of {per_core_k} up to 8" if w == widths[0] else
                                    f"the widest block whose weight stream fits {cb_budget // 1024} KiB")]
    if out_cores is not None:
        if nt % out_cores:
            raise ValueError(f"output cores {out_cores} do not split N {nt} tiles evenly")
        per_core_n = nt // out_cores
        why.append(f"output on {out_cores} cores dividing N, the next matmul's input split")
    else:
        per_core_n = -(-nt // cores)
        while -(-nt // per_core_n) > grid_cores:
            per_core_n += 1
        why.append("output split like the input")
    pc = ttnn.MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(
        in0_block_w=w, per_core_M=1, per_core_N=per_core_n, fused_activation=None)
    return DramMatmul(pc, kt, nt, cores, per_core_k, per_core_n, -(-nt // per_core_n), shard,
                      dram_matmul_cb_bytes(w, shard, dtypes), "; ".join(why))


# Bytes of one 32x32 tile per dtype name (block floats carry one shared exponent per 16 values).
TILE_BYTES = {"BFLOAT16": 2048, "BFLOAT8_B": 1088, "BFLOAT4_B": 576, "FLOAT32": 4096, "UINT32": 4096,
              "INT32": 4096, "UINT16": 2048}
# Share of a core's L1 a prefill matmul's circular buffers may take: the rest stays for L1 buffers (allocated from
# the top of L1, which the circular buffers must not reach).
CB_SHARE_OF_L1 = 0.85


def tile_bytes(dtype: Any) -> int:
    return TILE_BYTES[dtype.name if hasattr(dtype, "name") else str(dtype).rsplit(".", 1)[-1]]


@dataclass(frozen=True)
class PrefillMatmul:
    program: Any
    rows: int  # rows per batch: the input runs as [1, m / rows, rows, k] when rows < m


def matmul_2d_cb_bytes(per_core_m: int, per_core_n: int, in0_block_w: int, in0: int, in1: int, out: int,
                       fp32_acc: bool) -> int:
    """L1 the 2-D multicast matmul's circular buffers take per core (matmul_op_multi_core_reuse_mcast_2d): double-
    buffered in0 and in1 blocks, the output block, and a separate accumulation block when its format (fp32 with
    fp32 accumulation, else bf16, as packer_l1_acc sets it) differs from the output's."""
    interm = 4096 if fp32_acc else 2048
    cbs = 2 * per_core_m * in0_block_w * in0 + 2 * in0_block_w * per_core_n * in1 + per_core_m * per_core_n * out
    return cbs + (per_core_m * per_core_n * interm if interm != out else 0)


def prefill_matmul(m: int, k: int, n: int, grid: tuple[int, int], in0: int = 2048, in1: int = 1088,
                   out: int = 2048, fp32_acc: bool = True, cb_budget: int = 1_180_000) -> PrefillMatmul:
    """2-D multicast program config for an [m, k] x [k, n] prefill matmul on up to grid (x, y) cores: rows of the
    output over the grid's rows, columns over its columns. A long m runs as batches of fewer rows (fuse_batch off),
    the most rows (then the widest k block) whose circular buffers fit cb_budget bytes per core: tt_transformers
    caps these by hand (2048 rows for QKV, 1024 for WO, 512 or 1024 for the MLP)."""
    gx = grid[0]
    gy = largest_divisor(_tiles(k), grid[1])  # in0 blocks of k split evenly over the rows that share them
    per_core_n = -(-_tiles(n) // gx)
    rows = m
    while True:
        per_core_m = max(1, -(-_tiles(rows) // gy))
        k_tiles = _tiles(k) // gy
        for w in sorted({d for d in range(1, 9) if k_tiles % d == 0}, reverse=True):
            if matmul_2d_cb_bytes(per_core_m, per_core_n, w, in0, in1, out, fp32_acc) <= cb_budget:
                return PrefillMatmul(ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
                    compute_with_storage_grid_size=ttnn.CoreCoord(gx, gy), in0_block_w=w, out_subblock_h=1,
                    out_subblock_w=largest_divisor(per_core_n, 4), per_core_M=per_core_m, per_core_N=per_core_n,
                    transpose_mcast=False, fused_activation=None, fuse_batch=rows == m), rows)
        if rows % 2 or rows // 2 < TILE * gy:
            raise ValueError(f"no prefill matmul config for [{m}, {k}] x [{k}, {n}] fits {cb_budget} B of L1 per "
                             f"core on a {grid} grid")
        rows //= 2


def width_sharded(rows: int, width: int, grid_xy: tuple[int, int]) -> Any:
    """[rows, width] split by columns over a grid_xy (x, y) block of cores from (0, 0)."""
    x, y = grid_xy
    return ttnn.create_sharded_memory_config((rows, width // (x * y)), ttnn.CoreGrid(x=x, y=y),
                                             ttnn.ShardStrategy.WIDTH, ttnn.ShardOrientation.ROW_MAJOR,
                                             use_height_and_width_as_shard_shape=True)


def per_user(rows: int, width: int, cores: Any) -> Any:
    """Height-sharded, one user per core of `cores`: each user's [rows (tile padded), width]."""
    spec = ttnn.ShardSpec(cores, [-(-rows // TILE) * TILE, width], ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)


@dataclass(frozen=True)
class DecodeLayouts:
    residual: Any  # memory config of the width-sharded residual stream [1, 1, B, dim / N] (N chips of TP, else 1)
    residual_grid: tuple[int, int]
    normed: Any  # the norms' output [1, 1, B, dim], width-sharded: the residual's own config on one chip
    norm: Any  # sharded rms_norm program config on the normed grid
    qkv: DramMatmul
    wo: DramMatmul
    w1_w3: DramMatmul
    w2: DramMatmul
    lm_head: list[DramMatmul]  # one per vocabulary split
    q_cores: Any  # cores of Q and V heads (first B), and of K heads (next B)
    k_cores: Any
    k_heads: Any  # K heads one user per core on k_cores
    scores: Any  # attention output regathered one user per core for concatenating heads
    rope_q: Any  # cos/sin rows next to Q heads, and next to K heads
    rope_k: Any
    trans_q: Any  # the rotation matrix tile on every Q core, and on every K core
    trans_k: Any
    sdpa: Any
    # Where the LM head's output goes: its vocabulary splits are gathered there (L1, or DRAM for vocabularies too
    # wide for L1, as tt_transformers does for Gemma's 262k).
    logits: Any = None


# What the concat of the LM head's splits and the ops reading the logits (argmax, sampling) may take in L1 beside them
# for their own circular buffers (a few tiles each).
LOGITS_OPS_L1 = 64 * 1024
# Holes decode leaves between the buffers it holds at the head (L1 is first-fit from the top, and the residual lands
# where the last layer's temporaries left room): 24 KiB below Gemma-3-12B's on a P150, in the simulator's allocator
# and the real one alike.
HEAD_L1_SLACK = 64 * 1024


def head_live_l1(residual_shard: int, normed_shard: int, rope_kinds: int, head_dim: int, act_tile: int) -> int:
    """L1 per core held while the LM head runs (L1 is allocated in lockstep over the banks, so a buffer on some
    cores takes its bytes on all): the residual and its normed copy (width-sharded: their shard per core), the
    rotation tiles of Q and K (one tile per user core) and the rotary cos/sin rows of Q and K for each kind of
    layer ([32, head_dim] per user core), which decode keeps for the whole step. Measured on the real ttnn 0.81.1:
    143,360 B before Gemma-3-12B's head on a P150 (the residual's 8 KiB, two rotation tiles, 8 x 16 KiB of rotary
    rows for its two kinds of layer), then the normed copy's 8 KiB."""
    elem = act_tile // (TILE * TILE)
    return residual_shard + normed_shard + 2 * act_tile + 4 * rope_kinds * TILE * head_dim * elem


def logits_memory(lm: list[DramMatmul], splits: list[int], logits_tile_bytes: int, l1_bank_bytes: int, banks: int,
                  live: int) -> Any:
    """L1 or DRAM interleaved for the decode logits [1, 1, 32, vocab] (tensor parallel: the chip's slice), from
    what the device checks when it runs the LM head: every program's circular buffers grow up from the bottom of
    L1 and must end below the lowest L1 buffer (buffers are allocated from the top), or the op is refused
    ("clash with L1 buffers"). When split j's matmul runs, L1 holds `live` (head_live_l1, plus HEAD_L1_SLACK of
    holes between), the splits before it (interleaved, ceil(tiles / banks) tiles per bank each) and split j's own
    sharded output; the concat then holds every split and the whole row. L1 when all of that stays clear of the
    matmuls' buffers (and of LOGITS_OPS_L1 for the concat and sampling ops), else DRAM (Gemma's 262k vocabulary on
    one chip or on two). Gemma-3-12B on a P150 in L1: the real ttnn refused the 12th split's program, its buffers
    ending at 1,271,168 and the lowest L1 buffer at 1,261,568."""
    def per_bank(tiles: int) -> int:
        return -(-tiles // banks) * logits_tile_bytes

    live += HEAD_L1_SLACK
    before = 0
    for mm, n in zip(lm, splits, strict=True):
        out_shard = mm.per_core_n * logits_tile_bytes
        if mm.cb_bytes + live + before + out_shard > l1_bank_bytes:
            return ttnn.DRAM_MEMORY_CONFIG
        before += per_bank(_tiles(n))
    whole = per_bank(sum(_tiles(n) for n in splits)) if len(splits) > 1 else 0
    if LOGITS_OPS_L1 + live + before + whole > l1_bank_bytes:
        return ttnn.DRAM_MEMORY_CONFIG
    return ttnn.L1_MEMORY_CONFIG


def whole_row_norm_cb_bytes(width: int, in_tile_bytes: int, fp32_acc: bool) -> int:
    """L1 per core the interleaved rms_norm's circular buffers take with a row-major gamma: whole rows of the input,
    of the accumulation (fp32: twice a bf16 row) and of gamma, plus fixed buffers (at most 64 tiles; measured on the
    real ttnn 0.81.1: 48 for a bf16 input with fp32 accumulation)."""
    per_tile = in_tile_bytes / 2048 + (2 if fp32_acc else 1) + 1
    return int((per_tile * _tiles(width) + 64) * 2048)


@dataclass(frozen=True)
class ModelLayouts:
    decode: DecodeLayouts
    weights: dict[str, Any]  # weight name -> DRAM-sharded memory config
    lm_head_splits: list[int]  # vocabulary columns per LM-head split
    sdpa_prefill: Any
    grid: tuple[int, int]
    cb_budget: int  # L1 bytes per core a prefill matmul's circular buffers may take
    # Prefill's interleaved rms_norm over the whole width takes gamma as a TILE row (streamed in blocks) where the
    # whole-row program's buffers would not fit L1 (one chip of a 5120-wide model with fp32 accumulation); else the
    # row-major sticks tt_transformers uses.
    prefill_norm_tile_gamma: bool = False

    def prefill_matmul(self, m: int, k: int, n: int, x: Any, w: Any, out_dtype: Any,
                       kernel: Any) -> PrefillMatmul:
        """The 2-D config for x [.., m, k] @ w [k, n] into out_dtype with this compute kernel config."""
        return prefill_matmul(m, k, n, self.grid, tile_bytes(x.dtype), tile_bytes(w.dtype), tile_bytes(out_dtype),
                              bool(kernel.fp32_dest_acc_en), self.cb_budget)


def lm_head_splits(vocab: int, cores: int, max_per_core: int = 668) -> list[int]:
    """Vocabulary columns per LM-head matmul: each split at most max_per_core columns per core (what one core's L1
    holds for a bf16 output row block), widths whole tiles per core so every split stays tile aligned."""
    step = (max_per_core * cores) // (TILE * cores) * (TILE * cores)
    splits, left = [], vocab
    while left > 0:
        splits.append(min(step, left))
        left -= splits[-1]
    return splits


def _matmul_dtypes(precisions: list[Any], weight: str, kernel: str, in0: str = "residual",
                   out: str = "residual") -> MatmulDtypes:
    """The largest tiles a decode matmul's circular buffers hold over every layer (one config serves them all)."""
    def most(attr: str) -> int:
        return max(tile_bytes(getattr(p, attr)) for p in precisions)

    fp32_acc = any(bool(p.kernels[kernel].fp32_dest_acc_en) for p in precisions)
    return MatmulDtypes(in0=most(in0), in1=most(weight), out=most(out), interm=4096 if fp32_acc else 2048)


def build_layouts(args: Any, device: Any, batch: int, residual_dim: int | None = None,
                  attention_users: int | None = None, precisions: list[Any] | None = None,
                  head_dtype: Any = None, written_dim: int | None = None) -> ModelLayouts:
    """residual_dim: the residual stream's columns per chip (tensor parallel: dim / N), the whole dim if None.
    written_dim: the width of WO's and w2's products (a 1xN mesh's padded residual, TPPlan.written_dim), dim if None.
    attention_users: the users whose heads one chip places (2-D meshes split the batch over a row's chips), batch
    if None; the attention output is regathered for all `batch` users before concatenating heads.
    precisions (one per layer) and head_dtype size the decode matmuls' circular buffers; None: bf16 inputs and
    outputs, bfloat8_b weights, fp32 accumulation."""
    heads_users = attention_users or batch
    grid_c = device.compute_with_storage_grid_size()
    grid = (grid_c.x, grid_c.y)
    banks = device.dram_grid_size().x
    if 2 * heads_users > grid[0] * grid[1]:
        raise ValueError(f"{heads_users} users need {2 * heads_users} cores for decode heads; the device has "
                         f"{grid[0] * grid[1]}")
    dim, hd = args.dim, args.head_dim
    qkv_n = hd * (args.n_heads + 2 * args.n_kv_heads)
    rx, ry = residual_cores(_tiles(dim), grid)
    rc = rx * ry
    normed = width_sharded(TILE, dim, (rx, ry))
    residual, residual_grid = normed, (rx, ry)
    if residual_dim is not None and residual_dim != dim:  # tt_transformers' DECODE_RESIDUAL_MEMCFG for dim / N
        residual_grid = residual_cores(_tiles(residual_dim), grid)
        residual = width_sharded(TILE, residual_dim, residual_grid)
    block_w = _tiles(dim) // rc
    norm = ttnn.LayerNormShardedMultiCoreProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(rx, ry), subblock_w=largest_divisor(block_w, 4), block_h=1,
        block_w=block_w, inplace=False)
    l1 = ttnn.get_memory_view(device, ttnn.BufferType.L1).total_bytes_per_bank
    budget = int(CB_SHARE_OF_L1 * l1)
    if precisions:
        dt = {name: _matmul_dtypes(precisions, w, kernel, **kw) for name, w, kernel, kw in (
            ("qkv", "wqkv", "LI_QKV_DECODE", {}), ("wo", "wo", "LI_O_DECODE", {}),
            ("w1_w3", "ff1_ff3", "LI_FF1_FF3", {}), ("w2", "ff2", "LI_FF2", {"in0": "activation"}))}
        final = precisions[-1].residual
        dt["lm_head"] = MatmulDtypes(in0=tile_bytes(final), in1=tile_bytes(head_dtype) if head_dtype else 1088,
                                     out=4096 if tile_bytes(final) == 4096 else 2048, interm=2048)
    else:
        dt = dict.fromkeys(("qkv", "wo", "w1_w3", "w2", "lm_head"), MatmulDtypes())
    cores = grid[0] * grid[1]

    def mm(name: str, k: int, n: int, in_cores: int, out_cores: int | None = None) -> DramMatmul:
        return dram_matmul(k, n, in_cores, banks, out_cores, dt[name], budget, cores)

    qkv = mm("qkv", dim, qkv_n, rc)
    out_dim = written_dim or dim
    wo = mm("wo", args.n_heads * hd, out_dim, args.n_heads)  # concatenated heads arrive one head per core
    # The gate*up product feeds w2 in the sharding it comes in, so its cores must split the MLP's hidden tiles
    # evenly: w1/w3 write their output on core_count(hidden tiles) cores, w2 reads it there.
    mlp_cores = core_count(_tiles(args.hidden_dim), cores)
    w1_w3 = mm("w1_w3", dim, args.hidden_dim, rc, mlp_cores)
    w2 = mm("w2", args.hidden_dim, out_dim, mlp_cores)
    splits = lm_head_splits(args.vocab_size, rc)
    lm = [mm("lm_head", dim, n, rc) for n in splits]
    # Head placement on an at-most-8-wide block from (0, 0): on wider grids (Blackhole's 13) 32 users would span two
    # ranges, which sends nlp_concat_heads_decode down its sub-core-grid path (it crashes in 0.81.1 without one).
    heads_grid = ttnn.CoreCoord(min(8, grid[0]), grid[1])
    full = ttnn.num_cores_to_corerangeset(2 * heads_users, heads_grid, True)
    q_cores = ttnn.num_cores_to_corerangeset(heads_users, heads_grid, True)
    k_cores = full.subtract(q_cores)
    score_cores = ttnn.num_cores_to_corerangeset(batch, heads_grid, True)
    padded_heads = _tiles(args.n_heads) * TILE
    decode = DecodeLayouts(
        residual=residual, residual_grid=residual_grid, normed=normed, norm=norm, qkv=qkv, wo=wo, w1_w3=w1_w3,
        w2=w2, lm_head=lm,
        q_cores=q_cores, k_cores=k_cores, k_heads=per_user(args.n_kv_heads, hd, k_cores),
        scores=per_user(padded_heads, hd, score_cores),
        rope_q=per_user(1, hd, q_cores), rope_k=per_user(1, hd, k_cores),
        trans_q=per_user(TILE, TILE, q_cores), trans_k=per_user(TILE, TILE, k_cores),
        sdpa=ttnn.SDPAProgramConfig(compute_with_storage_grid_size=grid_c, q_chunk_size=0, k_chunk_size=0,
                                    exp_approx_mode=False),
    )
    act_tile = tile_bytes(precisions[-1].residual) if precisions else 2048  # logits and rotary tables: bf16 or fp32
    rope_kinds = len({args.rope_kind(i) for i in range(args.n_layers)}) if hasattr(args, "rope_kind") else 1
    live = head_live_l1(_tiles(residual_dim or dim) // (residual_grid[0] * residual_grid[1]) * act_tile,
                        _tiles(dim) // rc * act_tile, rope_kinds, hd, act_tile)
    decode = replace(decode, logits=logits_memory(lm, splits, act_tile, l1, ttnn.get_memory_view(
        device, ttnn.BufferType.L1).num_banks, live))
    weights = {
        "wqkv": dram_sharded_weight(ttnn, dim, qkv_n, banks),
        "wo": dram_sharded_weight(ttnn, args.n_heads * hd, out_dim, banks),
        "w1_w3": dram_sharded_weight(ttnn, dim, args.hidden_dim, banks),
        "w2": dram_sharded_weight(ttnn, args.hidden_dim, out_dim, banks),
        **{f"lm_head{i}": dram_sharded_weight(ttnn, dim, n, banks) for i, n in enumerate(splits)},
    }
    norm_in = max(tile_bytes(p.residual) for p in precisions) if precisions else 2048
    norm_acc = any(bool(p.kernels["NORM"].fp32_dest_acc_en) for p in precisions) if precisions else True
    return ModelLayouts(decode=decode, weights=weights, lm_head_splits=splits, sdpa_prefill=None, grid=grid,
                        cb_budget=budget,
                        prefill_norm_tile_gamma=whole_row_norm_cb_bytes(args.dim, norm_in, norm_acc) > budget)


def sdpa_prefill(seq: int, chunk_start: int, grid: tuple[int, int], head_dim: int) -> Any:
    """Q/K chunks of 64 rows; from 2048 on, 256 for heads up to 128 wide and 128 for wider ones (Gemma 3's 256,
    multi-latent attention's 576): at 256 rows their circular buffers outgrow a core's L1 (head_dim 256, bf16 K/V,
    fp32 accumulation: 1,670,496 B of 1,499,136; MLA's 576: 2,065,760, measured on the real 0.81.1; tt-metal's
    DeepSeek-V3 prefill runs 128). A chunk after a prefix starts on a chunk boundary."""
    size = 64 if seq < 2048 else 256 if head_dim <= 128 else 128
    if chunk_start:
        size = min(size, chunk_start & -chunk_start)
    return ttnn.SDPAProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(*grid), q_chunk_size=size,
                                  k_chunk_size=size, exp_approx_mode=False)


def fp32_representable(x: float) -> float:
    """x rounded to the nearest fp32: some 0.81.1 bindings take only floats an fp32 holds exactly (measured:
    chunked_scaled_dot_product_attention's scale)."""
    import struct

    return struct.unpack("f", struct.pack("f", x))[0]


__all__ = ["ModelLayouts", "DecodeLayouts", "DramMatmul", "PrefillMatmul", "build_layouts", "sdpa_prefill",
           "core_count", "fp32_representable", "math"]
