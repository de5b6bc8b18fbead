"""The statically allocated circular buffers of 0.81.1's SDPA programs, per core, and the two checks the program
build makes with them: the region (from the L1 unreserved base up) must end within the core's L1, and below the
lowest L1 buffer (L1 buffers are allocated top-down).

The sizes were fitted to the real ttnn 0.81.1 on the mock N150: its error messages print the region's end, and
with an L1 tensor placed low every call reports it, accepted or not (188 probes over the MLA decode and prefill ops
and the non-MLA ones; the stored tt-metal sources are older than the wheel and guided the fit only). Decode
(sdpa_decode_program_factory.cpp): Q in and tilized, double-buffered K and V chunks, the mask / QK chunk, the
softmax statistics, the output intermediates, the reduction buffer the other cores of a head send (one per extra
core), the output, and the position / page-table sticks; bf16 Q with at most 16 causal heads runs on 16x32 tiles.
Prefill (sdpa_program_factory.cpp): the Q chunk (double-buffered when a core takes several, or causal with several
chunks), double-buffered K and V chunks, identity and causal-mask tiles, the QK chunk, the output intermediates and
statistics, the output rows; fp32 accumulation has its own set.
"""

from __future__ import annotations

from typing import Any

from .allocator import TILE_BYTES
from .errors import TTError
from .rules import rules
from .tensor import Tensor
from .types import TILE_SIZE, DataType

_SRC = "tt_metal/impl/program/program.cpp"
# (The program build's checks, for every SDPA op; the error names the op called.)
R = rules("transformer.flash_mla_prefill", _SRC)
BEYOND_L1 = R("Statically allocated circular buffers on core range [{}] grow to {} B which is beyond max L1 size of "
              "{} B", "mla-decode/nh-128", "mla-prefill/chunk-512", "mla-decode/nh-64")
CLASH = R("Statically allocated circular buffers in program {} clash with L1 buffers on core range [{}]. L1 buffer "
          "allocated at {} and static circular buffer region ends at {}", "mla-prefill/q-l1-clash",
          "mla-prefill/q-dram-chunk-128")


def _round(x: int, a: int) -> int:
    return -(-x // a) * a


def _tile(dtype: DataType, rows: int = TILE_SIZE) -> int:
    # fp32 operands exist only at the simulator's reference precision, which mirrors a bf16 device run.
    full = TILE_BYTES[DataType.BFLOAT16 if dtype == DataType.FLOAT32 else dtype]
    return full * rows // TILE_SIZE


def _fp32_acc(kernel: Any) -> bool:
    return bool(getattr(kernel, "fp32_dest_acc_en", False)) if kernel is not None else False


def decode_bytes(q: Tensor, k: Tensor, v: Tensor | None, head_dim_v: int, users: int, *, paged: bool, mla: bool,
                 program_config: Any, kernel: Any, grid: tuple[int, int], causal: bool, pages: int, out_sharded: bool,
                 window: int | None, sink: bool, k_chunk: int | None = None, positions_tensor: bool = True) -> int:
    """The decode program's circular buffers per core. k_chunk: the chunk the host chose, where it chooses (the
    unpaged MLA op). positions_tensor False: the positions came as a list, compiled into the program."""
    nh, dh = q.shape[2], q.padded_shape[3]
    hv = head_dim_v if mla else dh
    qdt, kdt = q.dtype, k.dtype
    vdt = v.dtype if v is not None else kdt
    nkv = k.shape[1]
    pc_k = program_config.k_chunk_size if program_config is not None else 0
    if k_chunk is not None:
        pass
    elif pc_k:
        k_chunk = pc_k
    elif mla or program_config is not None:
        k_chunk = 0  # chosen per position at run time: buffers sized for a whole destination register
    elif paged:
        k_chunk = TILE_SIZE
    else:  # the unpaged op's host choice: the largest power-of-2 divisor of S, at most 512
        s, i = k.shape[2], 1
        while i < s and s % (1 << (i + 1)) == 0:
            i += 1
        k_chunk = min(512, 1 << i)
    cores = grid[0] * grid[1]
    per_head_batch = program_config.max_cores_per_head_batch if program_config is not None else cores
    if paged and not mla and program_config is None:
        per_head_batch = 1  # measured: the paged op without a config gives each head one core
    split = 1  # a height-sharded Q whose shards are shorter than the padded heads splits them
    if mla and q.is_sharded():
        shard_h = q.memory_config().shard_spec.shape[0]
        split = max(1, -(-nh // shard_h)) if shard_h < _round(nh, TILE_SIZE) else 1
    b = users * split
    per_head = max(1, (min(cores, per_head_batch * b * nkv) // b) // nkv)
    pnh_t = _round(nh, TILE_SIZE) // split // TILE_SIZE
    d_t, v_t = dh // TILE_SIZE, hv // TILE_SIZE
    sk = k_chunk // TILE_SIZE if k_chunk else (4 if _fp32_acc(kernel) else 8)
    rows = 16 if causal and nh <= 16 and qdt == DataType.BFLOAT16 else TILE_SIZE
    im = _tile(DataType.BFLOAT16, rows)
    total = 2 * pnh_t * d_t * _tile(qdt, rows)  # Q in, Q tilized
    total += 2 * sk * d_t * _tile(kdt) + 2 * sk * v_t * _tile(vdt)  # K, V chunks, double-buffered
    total += 2 * pnh_t * sk * im  # mask, QK chunk
    total += 2 * im + _tile(DataType.BFLOAT16)  # scale, zero, column identity (a full tile)
    total += 11 * pnh_t * im  # softmax statistics
    total += 4 * pnh_t * v_t * im  # output intermediates
    total += (pnh_t * v_t + 2 * pnh_t) * (per_head - 1) * im  # what the head's other cores send
    if not out_sharded:
        total += pnh_t * v_t * _tile(qdt)
    if positions_tensor:
        total += 2 * _round(4 * users, 32)  # the positions' stick, read by the writer and the compute kernel
    if paged:
        total += _round(4 * pages, 32)  # a page-table row
        if k.shape[2] < TILE_SIZE:
            total += pnh_t * sk * im
    if window:
        total += pnh_t * sk * im
    if sink:
        total += pnh_t * im
    return total


def _subblock(h_blocks: int, w_blocks: int) -> tuple[int, int]:
    for h, w in ((2, 4), (4, 2), (1, 8), (8, 1), (1, 7), (7, 1), (2, 3), (3, 2), (1, 6), (6, 1), (1, 5), (5, 1),
                 (2, 2), (1, 4), (4, 1), (1, 3), (3, 1), (1, 2), (2, 1), (1, 1)):
        if h <= 2 and h_blocks % h == 0 and w_blocks % w == 0:
            return h, w
    return 1, 1


def prefill_bytes(q: Tensor, k: Tensor, head_dim_v: int, *, program_config: Any, kernel: Any,
                  grid: tuple[int, int], causal: bool, page_table_cols: int | None, mask: Tensor | None,
                  v: Tensor | None = None) -> int:
    """The prefill program's circular buffers per core (page_table_cols: the chunked op's page-table row; v: the
    non-MLA ops' V, whose dtype its chunks take; MLA reads V from K)."""
    b, nh, sq = q.shape[0], q.shape[1], q.shape[2]
    dh = q.padded_shape[3]
    q_chunk = program_config.q_chunk_size if program_config is not None else TILE_SIZE
    k_chunk = program_config.k_chunk_size if program_config is not None else TILE_SIZE
    sq_t, sk_t = q_chunk // TILE_SIZE, k_chunk // TILE_SIZE
    d_t, v_t = dh // TILE_SIZE, head_dim_v // TILE_SIZE
    chunks = -(-sq // q_chunk)
    per_core = -(-(b * nh * chunks) // (grid[0] * grid[1]))
    bf = _tile(DataType.BFLOAT16)
    total = (2 if per_core > 1 or (causal and chunks > 1) else 1) * sq_t * d_t * _tile(q.dtype)
    total += 2 * sk_t * d_t * _tile(k.dtype) + 2 * sk_t * v_t * _tile((v if v is not None else k).dtype)
    total += 2 * bf  # identity scalars
    if causal:
        total += 2 * bf  # the causal mask's tiles
    if mask is not None:
        total += 2 * sq_t * sk_t * _tile(mask.dtype)
    if page_table_cols is not None:
        total += _round(4 * page_table_cols, 32)
    if _fp32_acc(kernel):
        total += sq_t * sk_t * 2 * bf + 2 * sq_t * v_t * bf + 7 * sq_t * bf + sq_t * v_t * _tile(q.dtype)
    else:
        h, w = _subblock(sq_t, v_t)
        out_rows = min(sq_t, 2, max(h, 8 // w))
        total += bf + sq_t * sk_t * bf + 2 * sq_t * v_t * bf + 5 * sq_t * bf + 2 * out_rows * v_t * _tile(q.dtype)
    return total


def check(op: str, device: Any, cb_bytes: int) -> None:
    """The program build's two checks of the circular-buffer region on every core of the grid (its error names
    the op called, as the real one reports the program of that call)."""
    mem = device.chip_memories()[0]
    chip = mem.chip
    end = chip.l1_unreserved_base + cb_bytes
    gx, gy = chip.grid
    cores = f"0-0 - {gx - 1}-{gy - 1}"
    if end > chip.l1_size:
        raise TTError(op, BEYOND_L1.error(cores, end, chip.l1_size).rule)
    lowest = mem.lowest_l1_buffer()
    if lowest is not None and end > lowest:
        raise TTError(op, CLASH.error(0, cores, lowest, end).rule)


def grid_of(program_config: Any, device: Any) -> tuple[int, int]:
    if program_config is not None:
        g = program_config.compute_with_storage_grid_size
        return g.x, g.y
    return device.chip_memories()[0].chip.grid
