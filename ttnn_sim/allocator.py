"""Device memory as the real allocator manages it: per chip, one address space per buffer type (DRAM, L1,
L1_SMALL) that every bank of that type shares in lockstep, so a buffer takes the same address range in all banks.

How much of each bank a buffer takes (measured on the real ttnn 0.81.1 with the mock N150 and P150):
  interleaved  pages round-robin over the banks: ceil(pages / banks) pages per bank;
  sharded      one shard per core of the grid (L1) or per DRAM bank: the pages of one shard;
a page is a 32x32 tile (TILE) or one row (ROW_MAJOR), its size rounded up to the buffer type's alignment, and the
bytes per bank rounded up to the allocator's alignment. DRAM is handed out bottom-up, L1 top-down, first fit; a
buffer that does not fit raises the device's out-of-memory error. The trace region and L1_SMALL are carved out of
DRAM and L1 when the device opens, as on hardware.
"""

from __future__ import annotations

import bisect
import math
import weakref
from dataclasses import dataclass
from typing import Any

from .errors import TTError
from .memory import BufferType, MemoryConfig, TensorMemoryLayout
from .types import TILE_SIZE, DataType, Layout, round_up

# Bytes of one 32x32 tile per dtype (block-float tiles carry one exponent byte per 16 values).
TILE_BYTES = {
    DataType.BFLOAT16: 2048, DataType.FLOAT32: 4096, DataType.UINT32: 4096, DataType.INT32: 4096,
    DataType.UINT16: 2048, DataType.UINT8: 1024, DataType.INT8: 1024, DataType.BFLOAT8_B: 1088, DataType.BFLOAT4_B: 576,
}
ELEMENT_BYTES = {
    DataType.BFLOAT16: 2, DataType.FLOAT32: 4, DataType.UINT32: 4, DataType.INT32: 4, DataType.UINT16: 2,
    DataType.UINT8: 1, DataType.INT8: 1,
}


@dataclass(frozen=True)
class ChipSpec:
    """One chip's worker grid and memory, as the real ttnn reports them (configs/devices/*.yaml `chip`)."""

    arch: str
    grid: tuple[int, int]  # compute_with_storage_grid_size (x, y)
    dram_banks: int
    dram_bank_bytes: int  # before the trace region is carved out
    l1_bank_bytes: int  # before L1_SMALL is carved out; one L1 bank per worker core
    dram_alignment: int  # page alignment in DRAM
    l1_alignment: int  # page alignment in L1
    allocator_alignment: int  # bytes per bank are rounded up to this
    trace_alignment: int = 8192  # the trace region is whole 8 KiB pages per DRAM bank
    # First L1 byte a program's circular buffers may use (below it: firmware and mailboxes); the L1 banks the
    # allocator manages run from here to the top of L1 (l1_unreserved_base + l1_bank_bytes = the core's L1 size).
    l1_unreserved_base: int = 0

    @property
    def l1_size(self) -> int:
        return self.l1_unreserved_base + self.l1_bank_bytes

    @property
    def l1_banks(self) -> int:
        return self.grid[0] * self.grid[1]


class _Space:
    """One buffer type's address space (identical in every bank): first-fit, from the bottom or the top.

    `blocks` lists the allocated ranges and `_free` the free ones (free_blocks), both sorted by address and kept
    in step, so a first fit looks through the free ranges only, however many buffers are allocated."""

    def __init__(self, size: int, top_down: bool) -> None:
        self.size, self.top_down = size, top_down
        self.blocks: list[tuple[int, int]] = []  # allocated (address, size), sorted by address
        self.allocated = 0
        self._free: list[tuple[int, int]] = [(0, size)] if size > 0 else []
        self._empty = 0  # empty blocks held: each may split a free range as free_blocks reports them

    def free_blocks(self) -> list[tuple[int, int]]:
        return list(self._free)

    def _scan_free(self) -> list[tuple[int, int]]:
        out, at = [], 0
        for addr, size in self.blocks:
            if addr > at:
                out.append((at, addr - at))
            at = addr + size
        if at < self.size:
            out.append((at, self.size - at))
        return out

    def allocate(self, nbytes: int) -> int | None:
        """First fit: the lowest free range that holds nbytes (bottom-up), or the highest (top-down)."""
        free = self._free
        n = len(free)
        order = range(n - 1, -1, -1) if self.top_down else range(n)
        for i in order:
            a, s = free[i]
            if s >= nbytes:
                break
        else:
            return None
        addr = a + s - nbytes if self.top_down else a
        bisect.insort(self.blocks, (addr, nbytes))
        self.allocated += nbytes
        if nbytes <= 0 or self._empty:  # an empty block may split a free range: recount
            self._empty += nbytes <= 0
            self._free = self._scan_free()
        elif s == nbytes:
            del free[i]
        else:
            free[i] = (a, s - nbytes) if self.top_down else (a + nbytes, s - nbytes)
        return addr

    def release(self, addr: int, nbytes: int) -> None:
        blocks = self.blocks
        i = bisect.bisect_left(blocks, (addr, nbytes))
        if i == len(blocks) or blocks[i] != (addr, nbytes):
            raise ValueError(f"no block ({addr}, {nbytes}) to release")
        del blocks[i]
        self.allocated -= nbytes
        if nbytes <= 0 or self._empty:
            self._empty -= nbytes <= 0
            self._free = self._scan_free()
            return
        free = self._free
        j = bisect.bisect_left(free, (addr, 0))
        start, end = addr, addr + nbytes
        if j < len(free) and free[j][0] == end:  # merge with the free range above
            end += free[j][1]
            del free[j]
        if j > 0 and free[j - 1][0] + free[j - 1][1] == start:  # and the one below
            start = free[j - 1][0]
            free[j - 1] = (start, end - start)
        else:
            free.insert(j, (start, end - start))


class MemoryView:
    """ttnn.get_memory_view's result."""

    def __init__(self, space: _Space, banks: int) -> None:
        free = space.free_blocks()
        self.num_banks = banks
        self.total_bytes_per_bank = space.size
        self.total_bytes_allocated_per_bank = space.allocated
        self.total_bytes_free_per_bank = space.size - space.allocated
        self.largest_contiguous_bytes_free_per_bank = max((s for _, s in free), default=0)
        self.block_table = [{"address": str(a), "size": str(s), "allocated": "yes"} for a, s in space.blocks]


class ChipMemory:
    """The allocator state of one chip."""

    def __init__(self, chip: ChipSpec, trace_region_size: int, l1_small_size: int) -> None:
        self.chip = chip
        trace_per_bank = round_up(-(-trace_region_size // chip.dram_banks), chip.trace_alignment) \
            if trace_region_size else 0
        small = round_up(l1_small_size, chip.allocator_alignment) if l1_small_size else 0
        self.spaces = {
            BufferType.DRAM: _Space(chip.dram_bank_bytes - trace_per_bank, top_down=False),
            BufferType.L1: _Space(chip.l1_bank_bytes - small, top_down=True),
            BufferType.L1_SMALL: _Space(small, top_down=True),
            BufferType.TRACE: _Space(trace_per_bank, top_down=False),
        }

    def banks(self, buffer_type: BufferType) -> int:
        if buffer_type in (BufferType.DRAM, BufferType.TRACE):
            return self.chip.dram_banks
        return self.chip.l1_banks if self.spaces[buffer_type].size else 0

    def view(self, buffer_type: BufferType) -> MemoryView:
        return MemoryView(self.spaces[buffer_type], self.banks(buffer_type))

    def lowest_l1_buffer(self) -> int | None:
        """Absolute address of the lowest L1 buffer (L1 is allocated top-down, in lockstep over the banks), which a
        program's statically allocated circular buffers, growing up from l1_unreserved_base, must not reach."""
        blocks = self.spaces[BufferType.L1].blocks
        return self.chip.l1_unreserved_base + blocks[0][0] if blocks else None


def page_bytes(dtype: DataType, layout: Layout, width: int) -> int:
    if layout == Layout.TILE:
        return TILE_BYTES[dtype]
    return width * ELEMENT_BYTES[dtype]


def bytes_per_bank(chip: ChipSpec, shape: tuple[int, ...], dtype: DataType, layout: Layout,
                   mc: MemoryConfig) -> tuple[int, int]:
    """(bytes each bank holds, total bytes) of a tensor placed with memory config mc."""
    dims = [1] * max(0, 2 - len(shape)) + [int(d) for d in shape]
    width, height = dims[-1], math.prod(dims[:-1])
    if layout == Layout.TILE:  # the padded shape: the last two dims rounded up to whole tiles
        width, height = round_up(width, TILE_SIZE), math.prod(dims[:-2]) * round_up(dims[-2], TILE_SIZE)
    align = chip.dram_alignment if mc.buffer_type == BufferType.DRAM else chip.l1_alignment
    page = round_up(page_bytes(dtype, layout, width), align)
    if mc.nd_shard_spec is not None:
        return _nd_bytes_per_bank(chip, shape, dtype, layout, mc, align)
    if mc.memory_layout == TensorMemoryLayout.INTERLEAVED or mc.shard_spec is None:
        pages = (height // TILE_SIZE) * (width // TILE_SIZE) if layout == Layout.TILE else height
        banks = chip.dram_banks if mc.buffer_type == BufferType.DRAM else chip.l1_banks
        per_bank = -(-pages // banks) * page
        total = pages * page
    else:
        sh, sw = mc.shard_spec.shape
        if layout == Layout.TILE:
            shard_pages = -(-sh // TILE_SIZE) * -(-sw // TILE_SIZE)
            per_bank = shard_pages * page
        else:
            per_bank = sh * round_up(page_bytes(dtype, layout, sw), align)
        total = per_bank * mc.shard_spec.num_cores()
    return round_up(per_bank, chip.allocator_alignment), total


def _nd_bytes_per_bank(chip: ChipSpec, shape: tuple[int, ...], dtype: DataType, layout: Layout, mc: MemoryConfig,
                       align: int) -> tuple[int, int]:
    """An ND-sharded buffer: every shard takes a whole shard's pages (a part-filled last shard too), and a core holds
    ceil(shards / cores) of them (ROUND_ROBIN_1D deals them in turn, CONTIGUOUS_1D in runs; GRID_2D, which no
    measured case uses, is counted the same). Measured on the mock T3K for TILE bf16: [1, 1, 128, 512] in [1, 1, 64,
    64] shards on 8 cores, 16,384 B a core; in [1, 1, 32, 32] shards on 4 cores, 32,768 B; [3, 8, 64, 64] in [2, 1,
    32, 64] shards on 8 cores, 32,768 B (the distance between two such buffers)."""
    from .placement import nd_shard_grid

    spec = mc.nd_shard_spec
    shard = [int(d) for d in spec.shard_shape]
    shards = math.prod(nd_shard_grid(shape, layout, shard))
    physical = [1] * max(0, 2 - len(shard)) + shard
    if layout == Layout.TILE:
        shard_bytes = math.prod(physical[:-2]) * (physical[-2] // TILE_SIZE) * (physical[-1] // TILE_SIZE) * \
            round_up(page_bytes(dtype, layout, physical[-1]), align)
    else:
        shard_bytes = math.prod(physical[:-1]) * round_up(page_bytes(dtype, layout, physical[-1]), align)
    per_bank = -(-shards // spec.num_cores()) * shard_bytes
    return round_up(per_bank, chip.allocator_alignment), per_bank * spec.num_cores()


_BT_NAME = {BufferType.DRAM: "DRAM", BufferType.L1: "L1", BufferType.L1_SMALL: "L1_SMALL"}


class Allocation:
    """A tensor's buffer on every chip of its mesh; freed by deallocate or when the tensor is collected."""

    __slots__ = ("chips", "space", "address", "nbytes", "_finalizer", "__weakref__")

    def __init__(self, chips: list[ChipMemory], buffer_type: BufferType, nbytes: int, total: int) -> None:
        self.chips, self.nbytes = chips, nbytes
        self.space = buffer_type
        addrs = []
        for i, chip in enumerate(chips):
            space = chip.spaces[buffer_type]
            addr = space.allocate(nbytes) if nbytes else 0
            if addr is None:
                for done, a in zip(chips[:i], addrs, strict=False):
                    done.spaces[buffer_type].release(a, nbytes)
                free = space.free_blocks()
                raise TTError("allocate", (
                    f"Out of Memory: Not enough space to allocate {total} B {_BT_NAME[buffer_type]} buffer across "
                    f"{chip.banks(buffer_type)} banks, where each bank needs to store {nbytes} B, but bank size is "
                    f"{space.size} B (allocated: {space.allocated} B, free: {space.size - space.allocated} B, "
                    f"largest free block: {max((s for _, s in free), default=0)} B)."))
            addrs.append(addr)
        self.address = addrs[0] if addrs else 0
        self._finalizer = weakref.finalize(self, _release, [c.spaces[buffer_type] for c in chips], addrs, nbytes)

    def free(self) -> None:
        self._finalizer()


def _release(spaces: list[_Space], addrs: list[int], nbytes: int) -> None:
    if nbytes:
        for space, addr in zip(spaces, addrs, strict=True):
            space.release(addr, nbytes)


def allocate(device: Any, shape: tuple[int, ...], dtype: DataType, layout: Layout, mc: MemoryConfig) -> Allocation:
    chips = device.chip_memories()
    per_bank, total = bytes_per_bank(chips[0].chip, shape, dtype, layout, mc)
    return Allocation(chips, mc.buffer_type, per_bank, total)
