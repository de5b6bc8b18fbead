"""Collective communication across the chips of a mesh: all_gather, reduce_scatter, all_reduce (and the experimental
async variants that take global semaphores), with the fabric configuration they need.

A device tensor on a MeshDevice holds one buffer per chip, in row-major mesh order (chip r * cols + c). A collective
over `cluster_axis` works within each line of chips along that mesh axis (axis 0: a column of chips, axis 1: a row);
without it, over every chip of the mesh. Each chip's result is computed from the buffers of its line, so a tensor
sharded the wrong way gives the wrong numbers, as on hardware; sums accumulate in fp32 and are rounded once into the
output dtype (reduce_scatter runs with fp32 accumulation on the device).

What ttnn 0.81.1 does (probed on mock N300 / T3K meshes, /work/notes/ccl_probe.md): every collective needs the fabric
(ttnn.set_fabric_config before the mesh is opened); all_gather refuses a single-chip line and, on a 1-D fabric, a 2-D
mesh without cluster_axis; reduce_scatter needs the scatter dim to split evenly (whole tiles on the two tiled dims).
"""

from __future__ import annotations

import enum
import math
import weakref
from collections.abc import Sequence
from typing import Any

import torch

from . import device as _device
from .compute import f32, output, per_device, per_device_write
from .device import MeshDevice
from .errors import TTError, refuse_options
from .memory import BufferType, MemoryConfig
from .tensor import Tensor, require_device, store_as
from .topology import gathered
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout


# --- enums and the fabric configuration ---
class _Named(enum.Enum):
    """Enums that print as the real ones do: Topology.Ring, not <Topology.Ring: 2>."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class Topology(_Named):
    """ttnn.Topology (ttnn._ttnn.operations.ccl.Topology): how the chips of a collective are connected."""

    Ring = 2
    Linear = 1
    Mesh = 3
    Torus = 4


class FabricConfig(_Named):
    """ttnn.FabricConfig: the chip-to-chip fabric set up when a mesh opens."""

    DISABLED = 0
    FABRIC_1D = 2
    FABRIC_1D_RING = 3
    FABRIC_1D_NEIGHBOR_EXCHANGE = 1
    FABRIC_2D = 4
    FABRIC_2D_TORUS_XY = 7
    FABRIC_2D_TORUS_X = 5
    FABRIC_2D_TORUS_Y = 6
    CUSTOM = 8


class FabricReliabilityMode(_Named):
    STRICT_INIT = 0
    RELAXED_INIT = 1
    DYNAMIC_RECONFIG = 2


class FabricTensixConfig(_Named):
    DISABLED = 0
    MUX = 1


class FabricUDMMode(_Named):
    DISABLED = 0
    ENABLED = 1


class FabricManagerMode(_Named):
    ENABLED = 0
    INIT_FABRIC = 1
    TERMINATE_FABRIC = 2
    DEFAULT = 3


class ReduceType(_Named):
    """ttnn.ReduceType (ttnn._ttnn.operations.reduction): the math_op of experimental.all_reduce_async."""

    Sum = 0
    Mean = 1
    Max = 2
    Min = 3
    Std = 4
    Var = 5
    Prod = 6


_2D_FABRICS = (FabricConfig.FABRIC_2D, FabricConfig.FABRIC_2D_TORUS_X, FabricConfig.FABRIC_2D_TORUS_Y,
               FabricConfig.FABRIC_2D_TORUS_XY)
_fabric = FabricConfig.DISABLED
# Meshes keep the fabric they opened with: set_fabric_config(DISABLED) while they are open does not tear it down.
_kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class FabricRouterConfig:
    """ttnn._ttnn.fabric.FabricRouterConfig: the fabric routers' settings (max_packet_payload_size_bytes; None
    keeps the fabric's default). The simulator's collectives move whole buffers, so the packet size changes no
    value; set_fabric_config records it."""

    def __init__(self) -> None:
        self.max_packet_payload_size_bytes: int | None = None


def set_fabric_config(
    config: FabricConfig,
    reliability_mode: FabricReliabilityMode = FabricReliabilityMode.STRICT_INIT,
    num_planes: int | None = None,
    fabric_tensix_config: FabricTensixConfig = FabricTensixConfig.DISABLED,
    fabric_udm_mode: FabricUDMMode = FabricUDMMode.DISABLED,
    fabric_manager_mode: FabricManagerMode = FabricManagerMode.DEFAULT,
    router_config: Any = None,
) -> None:
    """Select the fabric the meshes opened from now on set up (process-wide, like tt-metal's): before opening the
    mesh, and back to FabricConfig.DISABLED after closing it. As in ttnn 0.81.1 (tt_metal/impl/context/
    metal_env.cpp), only DISABLED may be set while a device is open, and the open meshes keep their fabric."""
    global _fabric
    if not isinstance(config, FabricConfig):
        raise TTError("set_fabric_config", f"config must be a ttnn.FabricConfig, got {config!r}")
    if router_config is not None and not isinstance(router_config, FabricRouterConfig):
        raise TypeError(f"set_fabric_config(): incompatible function arguments: router_config must be a "
                        f"ttnn._ttnn.fabric.FabricRouterConfig, got {type(router_config).__name__}")
    open_now = [d for d in _device._open if d.is_open]
    if open_now and config is not FabricConfig.DISABLED:
        raise TTError("set_fabric_config", f"SetFabricConfig({config.name}) is not allowed while devices are still "
                                           f"open: it would reinitialize the control plane underneath running fabric "
                                           f"kernels and dangle the ControlPlane& held by the fabric firmware "
                                           f"initializer. Close the mesh device before changing the fabric config to "
                                           f"a non-DISABLED value.")
    for d in open_now:
        _kept.setdefault(d, _fabric)
    _fabric = config


def get_fabric_config() -> FabricConfig:
    return _fabric


class GlobalSemaphore:
    """What ttnn.create_global_semaphore returns: a semaphore at one L1 address on a set of cores of every chip.
    The simulator's collectives run synchronously, so it only records where it lives."""

    def __init__(self, mesh_device: MeshDevice, cores: Any, initial_value: int, buffer_type: BufferType) -> None:
        self.mesh_device = mesh_device
        self.cores = cores
        self.value = int(initial_value)
        self.buffer_type = buffer_type


def create_global_semaphore(mesh_device: MeshDevice, cores: Any, initial_value: int,
                            buffer_type: BufferType = BufferType.L1) -> GlobalSemaphore:
    if not isinstance(mesh_device, MeshDevice):
        raise TTError("create_global_semaphore", f"mesh_device must be a MeshDevice, got {type(mesh_device).__name__}")
    mesh_device.check_open("create_global_semaphore")
    return GlobalSemaphore(mesh_device, cores, initial_value, buffer_type)


def reset_global_semaphore_value(global_semaphore: GlobalSemaphore, reset_value: int) -> None:
    global_semaphore.value = int(reset_value)


# --- which chips take part ---
_ASYNC_WITHOUT_FABRIC = ("experimental.all_gather_async", "experimental.all_reduce_async")


def _fabric_of(dev: MeshDevice) -> FabricConfig:
    return _kept.get(dev, _fabric)


def _require_fabric(op: str, dev: MeshDevice) -> None:
    if _fabric_of(dev) is FabricConfig.DISABLED and op in _ASYNC_WITHOUT_FABRIC:
        # ttnn/cpp/ttnn/operations/ccl/ccl_common.cpp: these pick their topology from the fabric config first.
        raise TTError(op, "Unsupported fabric config (no fabric: call ttnn.set_fabric_config(ttnn.FabricConfig."
                          "FABRIC_1D) before ttnn.open_mesh_device)")
    if _fabric_of(dev) is FabricConfig.DISABLED:
        # tt_metal/fabric/control_plane.cpp: the fabric context exists only when the mesh opened with a fabric.
        raise TTError(op, "Trying to get un-initialized fabric context (call ttnn.set_fabric_config(ttnn.FabricConfig."
                          "FABRIC_1D) before ttnn.open_mesh_device)")


def _lines(op: str, dev: MeshDevice, cluster_axis: int | None) -> list[list[int]]:
    """The lines of chips (mesh indices, in mesh order) a collective runs within: one per chip along the other
    axis, or the whole mesh when cluster_axis is None."""
    rows, cols = dev.shape
    if cluster_axis is None:
        return [list(range(rows * cols))]
    if isinstance(cluster_axis, bool) or not isinstance(cluster_axis, int) or cluster_axis < 0:
        raise TTError(op, f"cluster_axis must be a non-negative int or None, got {cluster_axis!r}")
    if cluster_axis > 1:
        raise TTError(op, f"ShapeBase[] index out of range. {cluster_axis} not in [-4, 2)")
    if cluster_axis == 0:
        return [[r * cols + c for r in range(rows)] for c in range(cols)]
    return [[r * cols + c for c in range(cols)] for r in range(rows)]


def _line_of(lines: list[list[int]], n: int) -> list[tuple[list[int], int]]:
    """Per chip: its line and its position in it."""
    where: list[tuple[list[int], int]] = [([], 0)] * n
    for line in lines:
        for pos, chip in enumerate(line):
            where[chip] = (line, pos)
    return where


def _check_shards(op: str, t: Tensor) -> None:
    """A collective moves whole per-chip buffers: every chip must hold a buffer of the tensor's shape."""
    shapes = {tuple(s.shape) for s in t._shards}
    if len(shapes) > 1:
        raise TTError(op, f"the input's per-device shards have inconsistent shapes {sorted(shapes)}: a collective "
                          f"needs the same shape on every device")
    if t.num_shards != t.device_or_none.get_num_devices():
        raise TTError(op, f"the input has {t.num_shards} shards for {t.device_or_none.get_num_devices()} devices")


def _normalize_dim(op: str, dim: int, rank: int) -> int:
    """tt_metal/common/shape.cpp get_normalized_index."""
    d = dim + rank if dim < 0 else dim
    if not 0 <= d < rank:
        raise TTError(op, f"Index is out of bounds for the rank, should be between 0 and {rank - 1} however is {d}")
    return d


class _MeshBuffers:
    """Every chip's buffer of one tensor, handed to each chip's computation (a collective reads the other chips').
    Holds the tensor's shard list itself, which trace replay refreshes in place."""

    __slots__ = ("shards", "sums")

    def __init__(self, t: Tensor) -> None:
        self.shards = t._shards
        self.sums: list = []  # (line, its sum) of the current run: every chip of a line reads the same sum

    def __repr__(self) -> str:
        return "_MeshBuffers"


_CHIP_INDEX: dict[int, Tensor] = {}


def _chip_index(n: int) -> Tensor:
    """A host tensor whose buffer on chip i is the scalar i: tells each chip's computation which chip it is."""
    t = _CHIP_INDEX.get(n)
    if t is None:
        t = Tensor.make([torch.tensor(i, dtype=torch.int32) for i in range(n)], DataType.INT32, Layout.ROW_MAJOR,
                        None)
        _CHIP_INDEX[n] = t
    return t


def _gather_kernel(chip: torch.Tensor, mesh: _MeshBuffers, where: list, dim: int) -> torch.Tensor:
    line, _ = where[int(chip)]
    return torch.cat([mesh.shards[j] for j in line], dim=dim)


def _sum_line(mesh: _MeshBuffers, line: list[int], first: bool) -> torch.Tensor:
    """The fp32 sum of a line's buffers, in line order, computed once per line in one run of the op over the chips
    (chip 0 runs first and starts afresh: a trace replay rewrites the buffers in place)."""
    if first:
        mesh.sums = []
    for key, total in mesh.sums:
        if key == line:
            return total.clone()
    total = f32(mesh.shards[line[0]]).clone()
    for j in line[1:]:
        total += f32(mesh.shards[j])
    mesh.sums.append((list(line), total))
    return total.clone()


def _reduce_scatter_kernel(chip: torch.Tensor, mesh: _MeshBuffers, where: list, dim: int) -> torch.Tensor:
    line, pos = where[int(chip)]
    total = _sum_line(mesh, line, int(chip) == 0)
    size = total.shape[dim] // len(line)
    return total.narrow(dim, pos * size, size)


def _all_reduce_kernel(chip: torch.Tensor, mesh: _MeshBuffers, where: list) -> torch.Tensor:
    line, _ = where[int(chip)]
    return _sum_line(mesh, line, int(chip) == 0)


def _ring_size(lines: list[list[int]]) -> int:
    return len(lines[0])


_ELEMENT_BYTES = {DataType.BFLOAT16: 2, DataType.FLOAT32: 4, DataType.UINT32: 4, DataType.INT32: 4,
                  DataType.UINT16: 2, DataType.UINT8: 1}


# --- the collectives ---
@device_op(kernel_replay=True)
def all_gather(
    input_tensor: Tensor,
    dim: int,
    *,
    cluster_axis: int | None = None,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    subdevice_id: Any = None,
    sub_core_grids: Any = None,
    num_links: int | None = None,
    topology: Topology | None = None,
    chunks_per_sync: int | None = None,
    num_workers_per_link: int | None = None,
    num_buffers_per_channel: int | None = None,
    use_l1_small_for_semaphores: bool = False,
) -> Tensor:
    """Every chip of a line gets the concatenation, along dim, of the line's buffers in mesh order; with
    output_tensor, written into that tensor's buffers (which the call returns)."""
    return _all_gather("all_gather", input_tensor, dim, cluster_axis, memory_config, output_tensor)


def _check_output_tensor(op: str, input_tensor: Tensor, out: Tensor, dim: int, ring: int) -> None:
    """ttnn/cpp/ttnn/operations/ccl/all_gather/device/all_gather_device_operation.cpp, a given output tensor, in the
    device's order (messages measured on the mock T3K): a device tensor, the input's layout and dtype, its rank,
    and the gathered shape."""
    require_device(op, out)
    if out.layout != input_tensor.layout:
        raise TTError(op, f"Output tensor layout Layout::{out.layout.name} should be same as input tensor layout "
                          f"Layout::{input_tensor.layout.name}")
    if out.dtype != input_tensor.dtype:
        raise TTError(op, f"Output tensor dtype DataType::{out.dtype.name} should be same as input tensor dtype "
                          f"DataType::{input_tensor.dtype.name}")
    expected = list(input_tensor.shape)
    expected[dim] *= ring
    if len(out.shape) != len(expected):
        raise TTError(op, f"Output tensor shape should have same number of dimensions as input tensor but has "
                          f"{len(out.shape)}")
    if list(out.shape) != expected:
        raise TTError(op, f"Output tensor shape must be Shape({expected}), got Shape({list(out.shape)})")


def _write_into(dst: torch.Tensor, src: torch.Tensor) -> None:
    dst.copy_(src)


def _all_gather(op: str, input_tensor: Tensor, dim: int, cluster_axis: int | None, memory_config: Any,
                output_tensor: Tensor | None = None, reverse: bool = False) -> Tensor:
    dev = require_device(op, input_tensor)
    if not isinstance(dim, int):
        raise TTError(op, f"dim must be an int, got {dim!r}")
    rank = len(input_tensor.shape)
    # ttnn/cpp/ttnn/operations/ccl/all_gather/all_gather.cpp, before any fabric access.
    if not -rank <= dim < rank:
        raise TTError(op, f"Invalid gather dim {dim} for {rank}D input tensor")
    _require_fabric(op, dev)
    _check_shards(op, input_tensor)
    lines = _lines(op, dev, cluster_axis)
    # ttnn/cpp/ttnn/operations/ccl/all_gather/device/all_gather_device_operation.cpp
    if _ring_size(lines) <= 1:
        raise TTError(op, f"all_gather collective will only work for num_devices > 1, got {_ring_size(lines)}")
    rows, cols = dev.shape
    if _fabric_of(dev) not in _2D_FABRICS and cluster_axis is None and rows > 1 and cols > 1:
        raise TTError(op, "1D fabric on a 2D mesh_device requires cluster_axis to be set")
    d = dim % rank
    if output_tensor is not None:
        _check_output_tensor(op, input_tensor, output_tensor, d, _ring_size(lines))
    _check_composite_l1(op, dev, input_tensor, d, _ring_size(lines))
    if reverse:
        lines = [line[::-1] for line in lines]
    where = _line_of(lines, input_tensor.num_shards)
    shards = per_device(_gather_kernel, _chip_index(input_tensor.num_shards), _MeshBuffers(input_tensor), where, d)
    topology = gathered(input_tensor.tensor_topology(), cluster_axis)
    if output_tensor is not None:
        # The op writes the gathered buffers into the given tensor, which it returns (in its memory config).
        result = Tensor.make([store_as(s, output_tensor.dtype) for s in shards], output_tensor.dtype,
                             output_tensor.layout, None)
        per_device_write(_write_into, output_tensor, result)
        output_tensor._topology = topology
        return output_tensor
    out = output(input_tensor, shards, memory_config=memory_config or input_tensor.memory_config())
    out._topology = topology
    return out


# A program's statically allocated circular buffers grow up from the L1 unreserved base and must end below the lowest
# L1 buffer (tt_metal/impl/program/program.cpp, validate_circular_buffer_region; checked when the program runs).
_CB_CLASH = ("Statically allocated dataflow buffers in program {} clash with L1 buffers on core range [{}]. L1 buffer "
             "allocated at {} and static dataflow buffer region ends at {}")


def _check_composite_l1(op: str, dev: MeshDevice, t: Tensor, dim: int, ring: int) -> None:
    """ttnn 0.81.1 gathers a TILE tensor that is not whole tiles along the gather dim with its composite path
    (ccl/all_gather/all_gather.cpp use_composite_all_gather -> composite_common::composite_all_gather): the input
    broadcast to every chip of the line (`ring` tiled copies in the input's memory config), then ttnn.concat of the
    copies, which (too wide for ConcatTiledUnalignedProgramFactory's band buffers) untilizes them and concatenates
    the row-major rows before tilizing the result, all in the input's buffer type whatever memory_config says. The
    row-major concat (data_movement/concat/device/concat_program_factory.cpp) stages whole output rows in its
    circular buffer: one row (aligned) per page, two pages when both fit half of L1 above the unreserved base, else
    one (8 x 32,776 bf16 logits: 524,416 B, one page; measured on a mock T3K with the error's own numbers), and the
    device refuses it when that reaches the lowest L1 buffer ("clash with L1 buffers"). Modelled here: the staged
    tiled copies and the row-major result in the input's buffer type beside what L1 already holds, against that
    buffer (Gemma-3-27B's logits gathered from L1 on a T3K: the real ttnn's buffer at 625,280, the simulator's at
    626,560, both below the concat's 630,240);
    from DRAM only the L1 already in use can clash. Interleaved inputs only (the composite first moves a sharded one
    to an interleaved config). Not modelled: the composite's other programs and staging (its untilize copies, the
    transposes a row not aligned for DRAM takes), which make the real op refuse some gathers under heavier L1 use
    than this accounts for (measured: 8 x 4,104 bf16 columns from L1 beside 1 MB per bank of other L1 buffers)."""
    from .allocator import ELEMENT_BYTES, Allocation, bytes_per_bank
    from .memory import TensorMemoryLayout
    from .types import round_up

    shape = tuple(int(x) for x in t.shape)
    rank = len(shape)
    if t.layout != Layout.TILE or rank < 2 or dim < rank - 2 or shape[dim] % TILE_SIZE == 0:
        return
    mc = t.memory_config()
    if mc.memory_layout != TensorMemoryLayout.INTERLEAVED:
        return
    chips = dev.chip_memories()
    chip = chips[0].chip
    gathered = list(shape)
    gathered[dim] *= ring
    row_dtype = DataType.FLOAT32 if t.dtype == DataType.FLOAT32 else DataType.BFLOAT16  # bfloat8_b: as bf16
    align = chip.l1_alignment if mc.buffer_type == BufferType.L1 else chip.dram_alignment
    page = round_up(gathered[-1] * ELEMENT_BYTES[row_dtype], align)
    cb = page * (2 if 2 * page <= chip.l1_size // 2 - chip.l1_unreserved_base else 1)
    staged = []
    try:
        copy, copy_total = bytes_per_bank(chip, shape, t.dtype, Layout.TILE, mc)
        staged += [Allocation(chips, mc.buffer_type, copy, copy_total) for _ in range(ring)]
        rows, rows_total = bytes_per_bank(chip, tuple(gathered), row_dtype, Layout.ROW_MAJOR, mc)
        staged.append(Allocation(chips, mc.buffer_type, rows, rows_total))
        end = chip.l1_unreserved_base + cb
        lowest = chips[0].lowest_l1_buffer()
        if lowest is not None and end > lowest:
            gx, gy = chip.grid
            pages = math.prod(gathered[:-1])
            cores = min(pages, gx * gy)  # one row per core, column-major (split_work_to_cores)
            raise TTError(op, _CB_CLASH.format(0, f"0-0 - {(cores - 1) // gy}-{min(cores, gy) - 1}", lowest, end))
    finally:
        for a in staged:
            a.free()


def _normalize_dim_4d(dim: int, rank: int) -> int:
    """Where dim of a rank-`rank` tensor falls in the device's 4-D view (composite_common::normalize_dim_4d)."""
    if rank == 2:
        return dim + 2
    diff = rank - 4
    return dim if dim < abs(diff) else dim - diff


def _check_scatter_dim(op: str, t: Tensor, dev: MeshDevice, dim: int, ring: int, num_links: int | None) -> None:
    """ttnn/cpp/ttnn/operations/experimental/ccl/reduce_scatter_common/reduce_scatter_validate_utils.cpp, in the
    device's order. The op pads a dim that splits evenly but not into whole tiles (the composite path), so the
    checks below meet only a dim whose logical size does not split over the chips."""
    shape = tuple(t.shape)
    rank = len(shape)
    if num_links is not None and num_links <= 0:
        raise TTError(op, "num_links must be greater than 0")
    if rank <= 1:
        raise TTError(op, "reduce_scatter currently supports rank 2 tensors at minimum")
    if shape[dim] % ring == 0:
        return
    if t.layout == Layout.ROW_MAJOR:
        mc = t.memory_config()
        align = dev.chip.l1_alignment if mc.buffer_type == BufferType.L1 else dev.chip.dram_alignment
        if shape[-1] * _ELEMENT_BYTES.get(t.dtype, 2) % align:
            raise TTError(op, "reduce_scatter currently requires aligned pages")
    dim4 = _normalize_dim_4d(dim, rank)
    padded = list(t.padded_shape) if t.layout == Layout.TILE else list(shape)
    if dim4 in (2, 3):
        if (padded[dim] // TILE_SIZE) % ring:
            raise TTError(op, f"Number of tiles at dimension {dim} must be divisible by ring_size")
    elif padded[dim] % ring:
        raise TTError(op, f"Dimension {dim} must be divisible by ring_size")
    # The device accepts a tiled dim of whole tiles whose logical size does not split (e.g. 33 over 2 chips) and
    # returns a truncated slice (logical size // chips) of padded data; the simulator refuses it.
    raise TTError(op, f"dim {dim} of logical size {shape[dim]} does not split evenly over {ring} devices (the device "
                      f"returns a truncated slice of size {shape[dim] // ring} holding tile padding; not simulated)")


def _reduce_scatter(op: str, input_tensor: Tensor, dim: int, cluster_axis: int | None, memory_config: Any,
                    num_links: int | None) -> Tensor:
    dev = require_device(op, input_tensor)
    rank = len(input_tensor.shape)
    if not isinstance(dim, int):
        raise TTError(op, f"dim must be an int, got {dim!r}")
    d = _normalize_dim(op, dim, rank)
    _require_fabric(op, dev)
    _check_shards(op, input_tensor)
    lines = _lines(op, dev, cluster_axis)
    ring = _ring_size(lines)
    _check_scatter_dim(op, input_tensor, dev, d, ring, num_links)
    if ring <= 1:
        # ttnn/cpp/ttnn/operations/ccl/reduce_scatter/device/reduce_scatter_program_factory.cpp: no neighbour.
        raise TTError(op, "DEBUG: forward_coord or backward_coord is null (a reduce over a single device)")
    where = _line_of(lines, input_tensor.num_shards)
    shards = per_device(_reduce_scatter_kernel, _chip_index(input_tensor.num_shards), _MeshBuffers(input_tensor),
                        where, d)
    return output(input_tensor, shards, memory_config=memory_config or input_tensor.memory_config())


@device_op(kernel_replay=True)
def reduce_scatter(
    input_tensor: Tensor,
    dim: int,
    *,
    cluster_axis: int | None = None,
    subdevice_id: Any = None,
    memory_config: MemoryConfig | None = None,
    intermediate_memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    num_links: int | None = None,
    topology: Topology | None = None,
    chunks_per_sync: int | None = None,
    num_workers_per_link: int | None = None,
    num_buffers_per_channel: int | None = None,
    compute_kernel_config: Any = None,
    use_l1_small_for_semaphores: bool = False,
) -> Tensor:
    """The sum over a line of chips, split along dim: the chip at position i of the line gets the i-th slice.
    Without cluster_axis on a 2-D mesh the whole mesh is one line (the real op scatters over axis 0, then axis 1,
    which leaves the same slice on each chip)."""
    refuse_options("reduce_scatter", output_tensor=output_tensor)
    return _reduce_scatter("reduce_scatter", input_tensor, dim, cluster_axis, memory_config, num_links)


def _all_reduce(op: str, input_tensor: Tensor, cluster_axis: int | None, memory_config: Any) -> Tensor:
    dev = require_device(op, input_tensor)
    _require_fabric(op, dev)
    _check_shards(op, input_tensor)
    lines = _lines(op, dev, cluster_axis)
    if _ring_size(lines) <= 1:
        raise TTError(op, "DEBUG: forward_coord or backward_coord is null (a reduce over a single device)")
    where = _line_of(lines, input_tensor.num_shards)
    shards = per_device(_all_reduce_kernel, _chip_index(input_tensor.num_shards), _MeshBuffers(input_tensor), where)
    return output(input_tensor, shards, memory_config=memory_config or input_tensor.memory_config())


@device_op(kernel_replay=True)
def all_reduce(
    input_tensor: Tensor,
    *,
    cluster_axis: int | None = None,
    subdevice_id: Any = None,
    memory_config: MemoryConfig | None = None,
    num_links: int | None = None,
    topology: Topology | None = None,
) -> Tensor:
    """Every chip of a line gets the sum of the line's buffers."""
    return _all_reduce("all_reduce", input_tensor, cluster_axis, memory_config)


# --- ttnn.experimental: the async variants (global semaphores; synchronous here) ---
def _require_semaphores(op: str, sems: Any) -> None:
    items = list(sems) if isinstance(sems, (list, tuple)) else [sems]
    if not items or any(not isinstance(s, GlobalSemaphore) for s in items):
        raise TTError(op, f"multi_device_global_semaphore must be global semaphore(s) from "
                          f"ttnn.create_global_semaphore, got {sems!r}")


def _gather_with_semaphores(op: str, input_tensor: Tensor, dim: Any, sems: Any, rest: tuple,
                            persistent_output_buffer: Tensor | None, cluster_axis: int | None,
                            memory_config: MemoryConfig | None, reverse: bool = False) -> Tensor:
    """The async gathers' two overloads: (input, dim, semaphores) and (input, persistent_output_buffer, dim,
    semaphores), the latter told apart positionally."""
    if rest or dim is None or isinstance(dim, Tensor):
        persistent_output_buffer = dim if isinstance(dim, Tensor) else persistent_output_buffer
        dim, sems = sems, (rest[0] if rest else None)
    refuse_options(op, persistent_output_buffer=persistent_output_buffer)
    _require_semaphores(op, sems)
    return _all_gather(op, input_tensor, dim, cluster_axis, memory_config, reverse=reverse)


@device_op(kernel_replay=True)
def all_gather_async(
    input_tensor: Tensor,
    dim: Any = None,
    multi_device_global_semaphore: Any = None,
    *rest: Any,
    num_links: int | None = None,
    memory_config: MemoryConfig | None = None,
    topology: Topology = Topology.Ring,
    subdevice_id: Any = None,
    use_optimal_ccl_for_llama: bool = False,
    barrier_semaphore: Any = None,
    sub_core_grids: Any = None,
    num_workers_per_link: int | None = None,
    num_buffers_per_channel: int | None = None,
    persistent_output_buffer: Tensor | None = None,
    cluster_axis: int | None = None,
    use_broadcast: bool = False,
    chunks_per_sync: int | None = None,
) -> Tensor:
    """ttnn.experimental.all_gather_async: all_gather with the caller's semaphores. Both the (input_tensor, dim,
    multi_device_global_semaphore) and the (input_tensor, persistent_output_buffer, dim,
    multi_device_global_semaphore) overloads are accepted."""
    return _gather_with_semaphores("experimental.all_gather_async", input_tensor, dim, multi_device_global_semaphore,
                                   rest, persistent_output_buffer, cluster_axis, memory_config)


@device_op(kernel_replay=True)
def all_gather_async_reversed(
    input_tensor: Tensor,
    dim: Any = None,
    multi_device_global_semaphore: Any = None,
    *rest: Any,
    num_links: int | None = None,
    memory_config: MemoryConfig | None = None,
    topology: Topology = Topology.Ring,
    subdevice_id: Any = None,
    use_optimal_ccl_for_llama: bool = False,
    barrier_semaphore: Any = None,
    sub_core_grids: Any = None,
    num_workers_per_link: int | None = None,
    num_buffers_per_channel: int | None = None,
    persistent_output_buffer: Tensor | None = None,
    cluster_axis: int | None = None,
    use_broadcast: bool = False,
    chunks_per_sync: int | None = None,
) -> Tensor:
    """ttnn.experimental.all_gather_async_reversed: all_gather_async with the line's chips in reverse order along
    the gathered dim (the first two of 0.81.1's overloads; the (dim, cluster_axis, mesh_device, topology, semaphore)
    one is not simulated)."""
    return _gather_with_semaphores("experimental.all_gather_async_reversed", input_tensor, dim,
                                   multi_device_global_semaphore, rest, persistent_output_buffer, cluster_axis,
                                   memory_config, reverse=True)


@device_op(kernel_replay=True)
def reduce_scatter_minimal_async(
    input_tensor: Tensor,
    persistent_output_buffers: Sequence[Tensor] | None = None,
    dim: int | None = None,
    multi_device_global_semaphore: Any = None,
    *,
    barrier_semaphore: Any = None,
    num_links: int | None = None,
    memory_config: MemoryConfig | None = None,
    intermediate_memory_config: MemoryConfig | None = None,
    topology: Topology = Topology.Ring,
    subdevice_id: Any = None,
    cluster_axis: int | None = None,
    chunks_per_sync: int | None = None,
    num_workers_per_link: int | None = None,
    num_buffers_per_channel: int | None = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    op = "experimental.reduce_scatter_minimal_async"
    if not isinstance(dim, int):
        raise TTError(op, f"dim must be an int, got {dim!r}")
    _require_semaphores(op, multi_device_global_semaphore)
    if persistent_output_buffers is None:
        return _reduce_scatter(op, input_tensor, dim, cluster_axis, memory_config, num_links)
    # [intermediate, output]: the kernels stage partial sums in the first and write the result into the second,
    # which the op returns; the result takes the output buffer's place and format.
    buffers = list(persistent_output_buffers)
    if len(buffers) != 2 or not all(isinstance(b, Tensor) for b in buffers):
        raise TTError(op, f"persistent_output_buffers must be [intermediate, output] tensors, got {buffers!r}")
    out_buf = buffers[1]
    out = _reduce_scatter(op, input_tensor, dim, cluster_axis, out_buf.memory_config(), num_links)
    if tuple(out.shape) != tuple(out_buf.shape) or out.dtype != out_buf.dtype:
        raise TTError(op, f"the persistent output buffer {tuple(out_buf.shape)} {out_buf.dtype} does not hold the "
                          f"output {tuple(out.shape)} {out.dtype}")
    out_buf._rebind(out)
    return out_buf


@device_op(kernel_replay=True)
def all_reduce_async(
    input_tensor: Tensor,
    cluster_axis: int | None = None,
    mesh_device: MeshDevice | None = None,
    barrier_semaphores: Sequence[GlobalSemaphore] | None = None,
    rs_global_semaphores: Sequence[GlobalSemaphore] | None = None,
    ag_global_semaphores: Sequence[GlobalSemaphore] | None = None,
    math_op: Any = None,
    *,
    memory_config: MemoryConfig | None = None,
    topology: Topology | None = Topology.Linear,
    num_links: int | None = None,
    subdevice_id: Any = None,
    num_devices: int | None = None,
) -> Tensor:
    """ttnn.experimental.all_reduce_async, the (input_tensor, cluster_axis, mesh_device, semaphores..., math_op)
    overload ttnn.all_reduce runs, and the (input_tensor, num_devices, semaphores..., math_op) one (by keyword):
    a sum over the num_devices chips holding the tensor; only ReduceType.Sum is simulated."""
    op = "experimental.all_reduce_async"
    if math_op is not ReduceType.Sum:
        raise TTError(op, f"math_op {math_op!r} is not supported by the simulator (only ttnn.ReduceType.Sum)")
    if num_devices is not None:
        dev = require_device(op, input_tensor)
        if num_devices != dev.get_num_devices():
            raise TTError(op, f"num_devices {num_devices}: the input is on {dev.get_num_devices()} devices (the "
                              f"simulator reduces over the devices holding the tensor)")
        return _all_reduce(op, input_tensor, None, memory_config)
    if mesh_device is not None and input_tensor.device_or_none is not mesh_device:
        raise TTError(op, "input_tensor is not on mesh_device")
    return _all_reduce(op, input_tensor, cluster_axis, memory_config)


def apply_device_delay(mesh_device: MeshDevice, delays: Sequence[Sequence[int]], *, subdevice_id: Any = None) -> None:
    """ttnn.apply_device_delay: each chip spins delays[row][col] cycles before its next op (a skew for testing the
    collectives' semaphores). The simulator's collectives run synchronously, so a delay changes nothing but is
    validated as ttnn 0.81.1 validates it (debug/device/apply_device_delay_device_operation.cpp; messages measured
    on the mock T3K)."""
    op = "apply_device_delay"
    if not isinstance(mesh_device, MeshDevice):
        raise TTError(op, f"mesh_device must be a MeshDevice, got {type(mesh_device).__name__}")
    mesh_device.check_open(op)
    rows, cols = mesh_device.shape
    delays = [list(r) for r in delays]
    if len(delays) != rows:
        raise TTError(op, f"delays rows ({len(delays)}) must match mesh rows ({rows})")
    for r, row in enumerate(delays):
        if len(row) != cols:
            raise TTError(op, f"delays cols for row {r} ({len(row)}) must match mesh cols ({cols})")


def using_distributed_env() -> bool:
    """ttnn.using_distributed_env(): whether this process is one of several sharing a mesh (multi-host); the
    simulator runs in one process, as the real ttnn does on one host (False, as measured)."""
    return False


__all__ = [
    "FabricConfig",
    "FabricRouterConfig",
    "FabricManagerMode",
    "FabricReliabilityMode",
    "FabricTensixConfig",
    "FabricUDMMode",
    "GlobalSemaphore",
    "ReduceType",
    "Topology",
    "all_gather",
    "all_reduce",
    "apply_device_delay",
    "create_global_semaphore",
    "get_fabric_config",
    "reduce_scatter",
    "reset_global_semaphore_value",
    "set_fabric_config",
    "using_distributed_env",
]
