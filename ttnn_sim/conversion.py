"""Moving tensors between torch, host and device: from_torch/to_torch/as_tensor, to/from device, layout and dtype
changes, in-place host->device copies, deallocation, and the mesh mappers that split or gather across chips."""

from __future__ import annotations

import gc
import hashlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .device import MeshDevice
from .errors import TTError, refuse_options
from .memory import DRAM_MEMORY_CONFIG, MemoryConfig, memory_config_from_data, memory_config_to_data
from .placement import BFP_TILE_ONLY
from .rules import rules
from .tensor import Tensor, _place, check_layout_for_dtype, default_dtype_for, require_device, store_as
from .trace import device_op, forbid_host_read
from .types import BLOCK_FLOAT_TYPES, TILE_SIZE, DataType, Layout

if TYPE_CHECKING:
    from .data_movement import Spec

F = rules("from_torch", "ttnn/core/tensor/py_to_tt_tensor.cpp")
F_BFP_TILE = F("Layout must be Layout::TILE for bfloat8_b or bfloat4_b!", "from_torch/bfp8-row-major",
               "from_torch/bfp8-tile-l1")

L = rules("to_layout", "core/to_layout/to_layout_op.cpp")
L_DTYPE = L("dtype cannot be different from tensor dtype when converting to ROW_MAJOR_LAYOUT on device (allowed "
            "exception: BFLOAT8_B -> BFLOAT16, which untilize handles natively)!", "to_layout/tile-to-rm-fp32",
            "to_layout/tile-to-rm-bfp8", "to_layout/bfp8-to-rm-bf16")

Y = rules("typecast", "copy/typecast/device/typecast_device_op.cpp")
Y_LAYOUTS = Y("Typecast operation requires Input and Output memory layout to match. Input layout: {}, Output "
              "layout: {}", "typecast/height-sharded-to-dram", "typecast/dram-to-height-sharded",
              "typecast/height-sharded-to-width-sharded", "typecast/height-sharded-other-grid")
Y_PAGE = Y("Typecast operation requires sharded input tensor page size ({} bytes) to be aligned to L1 ({} bytes)",
           "typecast/row-major-height-sharded-w7", "typecast/row-major-height-sharded-w8")

# What ttnn.to_torch hands back for each TT dtype.
_TO_TORCH = {
    DataType.BFLOAT16: torch.bfloat16,
    DataType.BFLOAT8_B: torch.float32,
    DataType.BFLOAT4_B: torch.float32,
    DataType.FLOAT32: torch.float32,
    DataType.UINT32: torch.uint32,
    DataType.INT32: torch.int32,
    DataType.UINT16: torch.uint16,
    DataType.UINT8: torch.uint8,
    DataType.INT8: torch.int8,
}


# --- mesh mappers and composers ---
class ReplicateTensorToMesh:
    def __init__(self, mesh_device: MeshDevice) -> None:
        self.mesh_device = mesh_device

    def map(self, t: torch.Tensor) -> list[torch.Tensor]:
        return [t] * self.mesh_device.get_num_devices()


class ShardTensorToMesh:
    def __init__(self, mesh_device: MeshDevice, dim: int) -> None:
        self.mesh_device = mesh_device
        self.dim = dim

    def map(self, t: torch.Tensor) -> list[torch.Tensor]:
        n = self.mesh_device.get_num_devices()
        if t.shape[self.dim] % n:
            raise TTError("ShardTensorToMesh", f"dim {self.dim} of size {t.shape[self.dim]} does not split into {n}")
        return list(torch.chunk(t, n, dim=self.dim))


class ShardTensor2dMesh:
    """Shards dims[0] over mesh rows and dims[1] over mesh columns (None replicates along that axis)."""

    def __init__(self, mesh_device: MeshDevice, dims: tuple, mesh_shape: Any = None) -> None:
        self.mesh_device = mesh_device
        self.dims = dims
        self.rows, self.cols = tuple(mesh_shape or mesh_device.shape)

    def map(self, t: torch.Tensor) -> list[torch.Tensor]:
        row_dim, col_dim = self.dims
        rows = list(torch.chunk(t, self.rows, row_dim)) if row_dim is not None else [t] * self.rows
        out = []
        for r in rows:
            out += list(torch.chunk(r, self.cols, col_dim)) if col_dim is not None else [r] * self.cols
        return out


class ConcatMeshToTensor:
    def __init__(self, mesh_device: MeshDevice, dim: int) -> None:
        self.mesh_device = mesh_device
        self.dim = dim

    def compose(self, shards: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(shards, dim=self.dim)


class ConcatMesh2dToTensor:
    def __init__(self, mesh_device: MeshDevice, mesh_shape: Any, dims: tuple) -> None:
        self.rows, self.cols = tuple(mesh_shape)
        self.dims = dims

    def compose(self, shards: list[torch.Tensor]) -> torch.Tensor:
        row_dim, col_dim = self.dims
        rows = [torch.cat(shards[r * self.cols : (r + 1) * self.cols], col_dim) for r in range(self.rows)]
        return torch.cat(rows, row_dim)


def replicate_tensor_to_mesh_mapper(mesh_device: MeshDevice) -> ReplicateTensorToMesh:
    return ReplicateTensorToMesh(mesh_device)


def shard_tensor_to_mesh_mapper(mesh_device: MeshDevice, dim: int) -> ShardTensorToMesh:
    return ShardTensorToMesh(mesh_device, dim)


def concat_mesh_to_tensor_composer(mesh_device: MeshDevice, dim: int) -> ConcatMeshToTensor:
    return ConcatMeshToTensor(mesh_device, dim)


# --- torch <-> ttnn ---
def from_torch(
    tensor: torch.Tensor,
    dtype: DataType | None = None,
    *,
    spec: Any = None,
    tile: Any = None,
    pad_value: float | None = None,
    layout: Layout = Layout.ROW_MAJOR,
    device: MeshDevice | None = None,
    memory_config: MemoryConfig | None = None,
    mesh_mapper: Any = None,
    cq_id: int | None = None,
    preserve_nan_values: bool = False,
    col_tilize: bool = False,
    enable_bfloat_opt: bool = False,
) -> Tensor:
    refuse_options("from_torch", spec=spec, col_tilize=col_tilize)
    if not isinstance(tensor, torch.Tensor):
        raise TTError("from_torch", f"expects a torch.Tensor, got {type(tensor).__name__}")
    small_tile = _small_tile(tensor, tile, layout, device)
    dtype = dtype or default_dtype_for(tensor)
    F_BFP_TILE.require(dtype not in BLOCK_FLOAT_TYPES or layout == Layout.TILE)
    parts = mesh_mapper.map(tensor) if mesh_mapper is not None else [tensor]
    shards = [store_as(p.detach(), dtype) for p in parts]
    host = Tensor.make(shards, dtype, layout, None)
    if device is not None and hasattr(mesh_mapper, "device_for"):
        device = mesh_mapper.device_for(device)  # a mapper onto a submesh of the mesh
    out = _place(host, device, memory_config) if device is not None else host
    out._tile = small_tile
    if device is not None and mesh_mapper is not None:
        from .topology import of_mapper

        out._topology = of_mapper(mesh_mapper, device)
    return out


# Tile shapes other than 32x32 the simulator models, and the device ops that take tensors stored in them (ttnn_sim/
# trace.py refuses such a tensor in any other op). tt-metal's test_nlp_concat_heads.py stores every input in 16x32
# tiles (tests/ttnn/utils_for_testing.py select_tile); 0.81.1 accepts that and returns the op's output in 32x32 tiles
# (probed on the mock N150). With whole 32-row tiles of rows a 16x32 tile holds the same values in the same padded
# shape, so only the tile bookkeeping differs: buffers are sized as 32x32 tiles of the same bytes.
SMALL_TILES = {(16, 32)}
SMALL_TILE_OPS = frozenset({"nlp_concat_heads"})


def _small_tile(tensor: torch.Tensor, tile: Any, layout: Layout, device: Any) -> tuple[int, int] | None:
    """from_torch's tile=: None for the default 32x32 tiles, else the (h, w) of a modelled smaller tile."""
    if tile is None:
        return None
    shape = tuple(tile.tile_shape)
    if shape == (TILE_SIZE, TILE_SIZE):
        return None
    if shape not in SMALL_TILES:
        raise TTError("from_torch", f"tile {list(shape)}: the simulator models 32x32 and 16x32 tiles only")
    if layout != Layout.TILE or device is None:
        raise TTError("from_torch", f"tile {list(shape)}: the simulator models it for TILE tensors placed on a "
                                    "device only")
    if tensor.dim() < 2 or tensor.shape[-2] % TILE_SIZE or tensor.shape[-1] % TILE_SIZE:
        raise TTError("from_torch", f"tile {list(shape)}: the simulator models it for whole 32x32 blocks only (shape "
                                    f"{list(tensor.shape)})")
    return shape


def to_torch(
    tensor: Tensor,
    dtype: torch.dtype | None = None,
    *,
    torch_rank: int | None = None,
    mesh_composer: Any = None,
    device: Any = None,
    cq_id: int | None = None,
) -> torch.Tensor:
    if not isinstance(tensor, Tensor):
        raise TTError("to_torch", f"expects a ttnn.Tensor, got {type(tensor).__name__}")
    if tensor._deallocated:
        raise TTError("to_torch", "tensor was deallocated")
    forbid_host_read("to_torch", tensor.device_or_none)
    if mesh_composer is not None:
        out = mesh_composer.compose(list(tensor._shards))
    elif tensor.num_shards > 1 and tensor.device_or_none is not None:
        raise TTError("to_torch", f"tensor lives on {tensor.num_shards} chips: pass mesh_composer= to gather it")
    else:
        out = tensor.shard(0).clone()
    out = out.to(dtype or _TO_TORCH[tensor.dtype])
    if torch_rank is not None:
        while out.dim() > torch_rank:
            if out.shape[0] != 1:
                raise TTError("to_torch", f"cannot squeeze to rank {torch_rank}: leading dim is {out.shape[0]}")
            out = out.squeeze(0)
    return out


def _cache_path(cache_file_name: str, dtype: DataType, layout: Layout, mapper: Any) -> Path:
    tag = type(mapper).__name__ if mapper is not None else "single"
    if mapper is not None:
        tag += "_" + hashlib.sha1(repr(sorted(vars(mapper).items(), key=str)).encode()).hexdigest()[:8]
    return Path(f"{cache_file_name}_dtype_{dtype.name}_layout_{layout.name}_{tag}.pt")


def as_tensor(
    tensor: torch.Tensor | None,
    dtype: DataType | None = None,
    *,
    layout: Layout = Layout.ROW_MAJOR,
    device: MeshDevice | None = None,
    memory_config: MemoryConfig | None = None,
    cache_file_name: str | Path | None = None,
    preprocess: Any = None,
    mesh_mapper: Any = None,
    cache_dump_mode: bool = False,
) -> Tensor:
    """from_torch with an on-disk cache of the converted tensor: a second start skips the (block-float) rounding.

    As in the real ttnn, the file keeps the memory config the tensor was first made with, and a cache hit places the
    tensor with that one: the memory_config argument only applies when the file is written. A caller that changes
    a tensor's placement must change its cache_file_name too."""
    if cache_file_name is None:
        if preprocess is not None:
            tensor = preprocess(tensor)
        return from_torch(tensor, dtype, layout=layout, device=device, memory_config=memory_config,
                          mesh_mapper=mesh_mapper)
    dtype = dtype or default_dtype_for(tensor)
    path = _cache_path(str(cache_file_name), dtype, layout, mesh_mapper)
    stored = torch.load(path, weights_only=True) if path.exists() else None
    if isinstance(stored, dict):
        host = Tensor.make(stored["shards"], dtype, layout, None)
        memory_config = memory_config_from_data(stored["memory_config"]) or DRAM_MEMORY_CONFIG
    else:  # no file (or one from before placements were stored): convert and write it
        if tensor is None:
            raise TTError("as_tensor", f"no cached tensor at {path} and no torch tensor given")
        if preprocess is not None:
            tensor = preprocess(tensor)
        host = from_torch(tensor, dtype, layout=layout, mesh_mapper=mesh_mapper)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # processes sharing the cache never write one file
        torch.save({"shards": [s.contiguous() for s in host._shards],
                    "memory_config": memory_config_to_data(memory_config)}, tmp)
        tmp.replace(path)
    return _place(host, device, memory_config) if device is not None else host


def to_device(
    tensor: Tensor, device: MeshDevice, memory_config: MemoryConfig | None = None, *, queue_id: int | None = None
) -> Tensor:
    if tensor.device_or_none is not None:
        if tensor.device_or_none is device:
            return tensor
        raise TTError("to_device", "tensor already lives on another device")
    return _place(tensor, device, memory_config)


def from_device(tensor: Tensor, blocking: bool = True, *, queue_id: int | None = None) -> Tensor:
    if tensor._deallocated:
        raise TTError("from_device", "tensor was deallocated")
    forbid_host_read("from_device", tensor.device_or_none)
    return Tensor.make([s.clone() for s in tensor._shards], tensor.dtype, tensor.layout, None)


def to_layout_spec(a: Spec, layout: Layout, dtype: DataType | None, memory_config: MemoryConfig | None) -> Spec:
    """A device to_layout's output: tilize takes any dtype asked; untilize none but bfloat8_b -> bfloat16, and
    gives block floats back as bfloat16 (bfloat4_b it cannot untilize)."""
    from .data_movement import Spec

    mc = memory_config or a.mc
    if layout == Layout.ROW_MAJOR:
        L_DTYPE.require(dtype in (None, a.dtype) or (a.dtype == DataType.BFLOAT8_B and dtype == DataType.BFLOAT16))
        if a.dtype == DataType.BFLOAT4_B:
            raise TTError("to_layout", BFP_TILE_ONLY.message)
        return Spec(a.shape, DataType.BFLOAT16 if a.dtype in BLOCK_FLOAT_TYPES else a.dtype, layout, mc)
    return Spec(a.shape, dtype or a.dtype, layout, mc)


@device_op()
def _device_to_layout(tensor: Tensor, layout: Layout, dtype: DataType | None, memory_config: Any) -> Tensor:
    from .data_movement import Spec

    require_device("to_layout", tensor)
    out = to_layout_spec(Spec.of(tensor), layout, dtype, memory_config)
    shards = [store_as(s, out.dtype) if out.dtype != tensor.dtype else s for s in tensor._shards]
    return Tensor.make(shards, out.dtype, out.layout, tensor.device_or_none, out.mc, op="to_layout")


def to_layout(
    tensor: Tensor,
    layout: Layout,
    dtype: DataType | None = None,
    memory_config: MemoryConfig | None = None,
    sub_core_grids: Any = None,
    pad_value: float | None = None,
) -> Tensor:
    """The same layout hands back the tensor itself (a dtype or memory config asked is then ignored, as on the
    device)."""
    if tensor._deallocated:
        raise TTError("to_layout", "tensor was deallocated")
    if tensor.layout == layout:
        return tensor
    if tensor.device_or_none is None:
        # On the host a block-float tensor stays tiled, and a tilize keeps the dtype (both measured on 0.81.1).
        if tensor.dtype in BLOCK_FLOAT_TYPES:
            return tensor
        return Tensor.make(list(tensor._shards), tensor.dtype, layout, None)
    return _device_to_layout(tensor, layout, dtype, memory_config)


@device_op()
def _device_typecast(input_tensor: Tensor, dtype: DataType, memory_config: MemoryConfig | None) -> Tensor:
    from .data_movement import Spec, _check_placement, page_bytes_of

    op = "typecast"
    a = Spec.of(input_tensor)
    out = Spec(a.shape, dtype, a.layout, memory_config or a.mc)
    _check_placement(op, input_tensor, out)  # the output spec is built before the op validates
    Y_LAYOUTS.require(a.mc.memory_layout == out.mc.memory_layout, f"TensorMemoryLayout::{a.mc.memory_layout.name}",
                      f"TensorMemoryLayout::{out.mc.memory_layout.name}")
    if a.sharded:
        page = page_bytes_of(a)
        Y_PAGE.require(page % 16 == 0, page, 16)
    return Tensor.make([store_as(s, dtype) for s in input_tensor._shards], dtype, a.layout,
                       input_tensor.device_or_none, out.mc, op=op)


def typecast(
    input_tensor: Tensor,
    dtype: DataType,
    *,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    sub_core_grids: Any = None,
) -> Tensor:
    refuse_options("typecast", sub_core_grids=sub_core_grids)
    if isinstance(input_tensor, Tensor) and input_tensor.device_or_none is None and not input_tensor._deallocated:
        # A host tensor is converted on the host (to_dtype); block floats need whole tiles.
        if dtype in BLOCK_FLOAT_TYPES and input_tensor.layout != Layout.TILE:
            dims = list(input_tensor.shape)
            if len(dims) < 2 or dims[-1] % TILE_SIZE or dims[-2] % TILE_SIZE:
                raise TTError("typecast", "to_dtype: Converting layout to Layout::TILE implicitly changed physical "
                                          "shape due to alignment constraints. This is currently unsupported.")
            return Tensor.make([store_as(s, dtype) for s in input_tensor._shards], dtype, Layout.TILE, None)
        return Tensor.make([store_as(s, dtype) for s in input_tensor._shards], dtype, input_tensor.layout, None)
    out = _device_typecast(input_tensor, dtype, memory_config)
    if output_tensor is not None:
        output_tensor._rebind(out)
        return output_tensor
    return out


def copy_host_to_device_tensor(host_tensor: Tensor, device_tensor: Tensor, cq_id: int = 0) -> None:
    """Overwrite a device tensor's contents in place, keeping its buffers: how traced inputs are refreshed."""
    op = "copy_host_to_device_tensor"
    if host_tensor.device_or_none is not None:
        raise TTError(op, "source must be a host tensor")
    dev = require_device(op, device_tensor)
    if dev.capturing is not None:
        raise TTError(op, "host writes are not captured in a trace: copy inputs before capture or before execute")
    if (host_tensor.shape, host_tensor.dtype, host_tensor.layout) != (
        device_tensor.shape, device_tensor.dtype, device_tensor.layout):
        raise TTError(
            op,
            f"host tensor {tuple(host_tensor.shape)} {host_tensor.dtype.name} {host_tensor.layout.name} does not match "
            f"device tensor {tuple(device_tensor.shape)} {device_tensor.dtype.name} {device_tensor.layout.name}",
        )
    n = device_tensor.num_shards
    src = host_tensor._shards if host_tensor.num_shards == n else [host_tensor.shard(0)] * n
    for dst, s in zip(device_tensor._shards, src, strict=True):
        dst.copy_(s)


def deallocate(tensor: Tensor, force: bool = True) -> None:
    """Free the tensor's device memory now. Host-side allocator work: a trace does not record it (a captured trace
    keeps its own twins of the buffers its replay uses). ttnn's tensors hold their buffer through a shared reference
    (probed on a mock N150, tt_checks/tt_metal_unit/probes/deallocate_force.py): force=False leaves a buffer that
    another live handle holds untouched, every handle still allocated; forced, the buffer goes under every handle."""
    sharers = _sharers(tensor)
    if sharers and not force:
        return
    for t in (tensor, *sharers):  # forced, the buffer goes under every handle on it (probed likewise)
        t._deallocated = True
        t._shards = []
    if tensor._alloc is not None:
        tensor._alloc.free()
        for t in (tensor, *sharers):
            t._alloc = None


def _sharers(tensor: Tensor) -> list[Tensor]:
    """The other live tensor objects on tensor's device buffer (a full-range slice, Tensor(other), a view). The
    reference count answers the common case (no other holder) without scanning the garbage collector's referrers."""
    alloc = tensor._alloc
    if alloc is None or sys.getrefcount(alloc) <= 3:  # this tensor's slot, the local, getrefcount's argument
        return []
    return [r for r in gc.get_referrers(alloc) if isinstance(r, Tensor) and r is not tensor and r._alloc is alloc]


def zeros(
    shape: Any,
    dtype: DataType = DataType.BFLOAT16,
    layout: Layout = Layout.ROW_MAJOR,
    device: MeshDevice | None = None,
    memory_config: MemoryConfig | None = None,
) -> Tensor:
    """A zero-filled tensor (zero is exact in every dtype, so no rounding pass is needed)."""
    return _filled("zeros", shape, dtype, layout, device, memory_config, torch.zeros)


def empty(
    shape: Any,
    dtype: DataType = DataType.BFLOAT16,
    layout: Layout = Layout.ROW_MAJOR,
    device: MeshDevice | None = None,
    memory_config: MemoryConfig | None = None,
) -> Tensor:
    """A device tensor whose contents are undefined, as on a device: the buffer is reserved and its values are
    whatever the host memory held (untouched pages take no host memory, so weights or a KV cache made with empty
    cost nothing until written)."""
    if device is None:
        raise TTError("empty", "needs a device")
    return _filled("empty", shape, dtype, layout, device, memory_config, torch.empty)


def _filled(op: str, shape: Any, dtype: DataType, layout: Layout, device: MeshDevice | None,
            memory_config: MemoryConfig | None, fill: Any) -> Tensor:
    from .tensor import _CONTAINER, Shape, place

    shape = tuple(int(d) for d in shape)
    if device is None:
        check_layout_for_dtype(op, dtype, layout)
        return Tensor.make([fill(shape, dtype=_CONTAINER[dtype])], dtype, layout, None)
    device.check_open(op)
    mc = memory_config or DRAM_MEMORY_CONFIG
    # The device refuses a placement or size before any value exists, as the real allocator does.
    alloc = place(op, device, Shape(shape), dtype, layout, mc)
    n = device.get_num_devices()
    out = Tensor.make([fill(shape, dtype=_CONTAINER[dtype]) for _ in range(n)], dtype, layout, device, mc,
                      alloc=alloc)
    return out
