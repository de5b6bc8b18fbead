"""The simulated ttnn.Tensor: logical shape, dtype, layout, placement, and one torch buffer per device.

Values are held in a torch "container" dtype that represents the TT dtype exactly: bfloat16 and the block-float
formats in torch.bfloat16 (every bfloat8_b/bfloat4_b value fits in bf16), float32 in float32, integers in int32.
Storing into a TT dtype always applies that dtype's rounding, so what a tensor holds is what the device would hold.
Tile padding is not materialized: the padded shape is derived from the logical shape, and padding reads as zero.
"""

from __future__ import annotations

from typing import Any

import torch

from .blockfloat import quantize_block_float
from .device import MeshDevice
from .errors import TTError
from .memory import DRAM_MEMORY_CONFIG, MemoryConfig
from .types import BLOCK_FLOAT_TYPES, FLOAT_TYPES, TILE_SIZE, DataType, Layout, Shape, StorageType, round_up

_CONTAINER = {
    DataType.BFLOAT16: torch.bfloat16,
    DataType.BFLOAT8_B: torch.bfloat16,
    DataType.BFLOAT4_B: torch.bfloat16,
    DataType.FLOAT32: torch.float32,
    DataType.UINT32: torch.int32,
    DataType.INT32: torch.int32,
    DataType.UINT16: torch.int32,
    DataType.UINT8: torch.int32,
    DataType.INT8: torch.int32,
}
# dtypes whose container holds every value of that torch dtype exactly
_STORED_AS_IS = {DataType.BFLOAT16: torch.bfloat16, DataType.FLOAT32: torch.float32}
_FROM_TORCH = {
    torch.bfloat16: DataType.BFLOAT16,
    torch.float32: DataType.FLOAT32,
    torch.int32: DataType.INT32,
    torch.uint8: DataType.UINT8,
    torch.int8: DataType.INT8,
    # real 0.81.1: from_torch(int64 tensor) without dtype= gives UINT32 (probed on the mock N150)
    torch.int64: DataType.UINT32,
}
_INT_RANGE = {
    DataType.UINT32: (0, 2**32 - 1),
    DataType.INT32: (-(2**31), 2**31 - 1),
    DataType.UINT16: (0, 2**16 - 1),
    DataType.UINT8: (0, 2**8 - 1),
    DataType.INT8: (-(2**7), 2**7 - 1),
}


def store_as(data: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Round `data` into `dtype` and return it in that dtype's container."""
    if data.dtype is _STORED_AS_IS.get(dtype):  # hot path: nothing to round, not even a no-op conversion
        return data
    if dtype in BLOCK_FLOAT_TYPES:
        return quantize_block_float(data, dtype).to(torch.bfloat16)
    if dtype in _INT_RANGE:
        if data.is_floating_point():
            data = data.round()
        lo, hi = _INT_RANGE[dtype]
        # uint32 values past int32 range keep their bit pattern, as a reinterpretation on device would.
        return data.to(torch.int64).clamp(lo, hi).to(torch.int32) if dtype != DataType.UINT32 else data.to(torch.int32)
    return data.to(_CONTAINER[dtype])


def default_dtype_for(t: torch.Tensor) -> DataType:
    if t.dtype in _FROM_TORCH:
        return _FROM_TORCH[t.dtype]
    raise TTError("from_torch", f"torch dtype {t.dtype} has no default TT dtype: pass dtype= explicitly")


def check_layout_for_dtype(op: str, dtype: DataType, layout: Layout) -> None:
    """Block-float data exists only as tiles (the host packer's message; device-side creation raises the tensor
    spec's own, see placement.BFP_TILE_ONLY)."""
    if dtype in BLOCK_FLOAT_TYPES and layout != Layout.TILE:
        raise TTError(op, "Layout must be Layout::TILE for bfloat8_b or bfloat4_b!")


class Tensor:
    """ttnn.Tensor. Host tensors have device None; device tensors hold one buffer per chip of their mesh."""

    __slots__ = ("_shards", "_shape", "_dtype", "_layout", "_device", "_memory_config", "_deallocated", "_alloc",
                 "_tile", "_topology", "__weakref__")

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        """The real constructors: Tensor(other) (the same tensor), Tensor(torch_or_numpy, data_type=None,
        device=None, layout=None, mem_config=None, tile=None, ...) as ttnn.from_torch, and Tensor(values, shape,
        data_type, layout, [device], [memory_config=], tile=None, pad_value=0) from a Python list."""
        if isinstance(data, Tensor):
            if args or kwargs:
                raise TTError("Tensor", "Tensor(other) takes no other arguments")
            self._init(data._shards, data._shape, data._dtype, data._layout, data._device, data._memory_config)
            self._alloc, self._deallocated = data._alloc, data._deallocated
            return
        if data is None:
            raise TTError("Tensor", "needs data: a Tensor, a torch tensor or array, or a list of values")
        if hasattr(data, "shape") and not isinstance(data, (list, tuple)):
            self._from_array(torch.as_tensor(data), *args, **kwargs)
        else:
            self._from_values(list(data), *args, **kwargs)

    def _from_array(self, t: torch.Tensor, data_type: DataType | None = None, device: MeshDevice | None = None,
                    layout: Layout | None = None, mem_config: MemoryConfig | None = None, tile: Any = None,
                    cq_id: Any = None, pad_value: float | None = None, mesh_mapper: Any = None,
                    **_: Any) -> None:
        from .conversion import from_torch

        if layout is None:  # real 0.81.1: Tensor(torch, bfloat8_b / bfloat4_b) comes out tiled (probed)
            layout = Layout.TILE if data_type in BLOCK_FLOAT_TYPES else Layout.ROW_MAJOR
        out = from_torch(t, data_type, layout=layout, device=device, memory_config=mem_config,
                         mesh_mapper=mesh_mapper)
        self._init(out._shards, out._shape, out._dtype, out._layout, out._device, out._memory_config)
        self._alloc = out._alloc

    def _from_values(self, values: list, shape: Any, data_type: DataType, layout: Layout,
                     device: MeshDevice | None = None, tile: Any = None, pad_value: float = 0.0,
                     memory_config: MemoryConfig | None = None) -> None:
        t = torch.tensor(values, dtype=torch.float32 if data_type in FLOAT_TYPES else torch.int64)
        numel = 1
        for d in shape:
            numel *= int(d)
        if t.numel() != numel:
            raise TTError("Tensor", f"{t.numel()} values do not fill shape {list(shape)}")
        t = t.reshape(tuple(int(d) for d in shape))
        check_layout_for_dtype("Tensor", data_type, layout)
        self._init([store_as(t, data_type)], Shape(t.shape), data_type, layout, None, None)
        if device is not None:
            self._rebind(_place(self, device, memory_config))

    def _init(
        self,
        shards: list[torch.Tensor],
        shape: Shape,
        dtype: DataType,
        layout: Layout,
        device: MeshDevice | None,
        memory_config: MemoryConfig | None,
    ) -> None:
        self._shards = shards
        self._shape = shape
        self._dtype = dtype
        self._layout = layout
        self._device = device
        self._memory_config = memory_config if device is not None else None
        self._deallocated = False
        self._alloc = None
        self._tile = None  # (h, w) of a tile shape other than 32x32 (from_torch(tile=...)); None: 32x32
        self._topology = None  # a TensorTopology set where it is not the default (ttnn_sim/topology.py)

    @classmethod
    def make(
        cls,
        shards: list[torch.Tensor],
        dtype: DataType,
        layout: Layout,
        device: MeshDevice | None,
        memory_config: MemoryConfig | None = None,
        op: str = "allocate",
        alloc: Any = None,
    ) -> Tensor:
        """Build a tensor from per-device buffers already in `dtype`'s container; a device tensor takes its
        buffer from the device's allocator (which refuses a placement or size the device refuses)."""
        self = cls.__new__(cls)
        mc = memory_config or DRAM_MEMORY_CONFIG
        self._init(shards, Shape(shards[0].shape), dtype, layout, device, mc)
        if device is not None:
            self._alloc = alloc if alloc is not None else place(op, device, self._shape, dtype, layout, mc)
        return self

    def twin(self) -> Tensor:
        """Another object on this tensor's very buffers (the same shard list) that reserves no device memory: what a
        captured trace keeps of the tensors it touches."""
        tw = Tensor.__new__(Tensor)
        tw._init(self._shards, self._shape, self._dtype, self._layout, self._device, self._memory_config)
        tw._topology = self._topology
        return tw

    def tensor_topology(self) -> Any:
        """How the tensor is laid over its mesh (ttnn.TensorTopology): what from_torch's mapper or the op that made
        it set, else replicated over the device's chips (a host tensor: MeshShape([1]) at [0, 0])."""
        from . import topology

        if self._topology is not None:
            return self._topology
        return topology.host_topology() if self._device is None else topology.replicated(self._device)

    def _rebind(self, other: Tensor) -> None:
        """Take over other's buffers in place: trace replay writes results into the captured tensor objects."""
        alloc = other._alloc
        self._init(other._shards, other._shape, other._dtype, other._layout, other._device, other._memory_config)
        self._alloc = alloc
        self._topology = other._topology

    # --- ttnn.Tensor API ---
    @property
    def shape(self) -> Shape:
        return self._shape

    @property
    def tile(self) -> Any:
        from .types import Tile

        return Tile(self._tile or (TILE_SIZE, TILE_SIZE))

    @property
    def logical_shape(self) -> Shape:
        return self._shape

    @property
    def padded_shape(self) -> Shape:
        if self._layout != Layout.TILE or len(self._shape) == 0:
            return self._shape
        dims = list(self._shape)
        dims[-1] = round_up(dims[-1], TILE_SIZE)
        if len(dims) >= 2:
            dims[-2] = round_up(dims[-2], TILE_SIZE)
        return Shape(dims)

    @property
    def dtype(self) -> DataType:
        return self._dtype

    def get_dtype(self) -> DataType:
        return self._dtype

    @property
    def layout(self) -> Layout:
        return self._layout

    def get_layout(self) -> Layout:
        return self._layout

    def device(self) -> MeshDevice | None:
        return self._device

    @property
    def device_or_none(self) -> MeshDevice | None:
        return self._device

    def memory_config(self) -> MemoryConfig | None:
        return self._memory_config

    def is_allocated(self) -> bool:
        return not self._deallocated

    def storage_type(self) -> StorageType:
        return StorageType.HOST if self._device is None else StorageType.DEVICE

    def is_sharded(self) -> bool:
        return self._memory_config is not None and self._memory_config.is_sharded()

    def logical_volume(self) -> int:
        n = 1
        for d in self._shape:
            n *= d
        return n

    def volume(self) -> int:
        """The physical volume, tile padding included (real 0.81.1: a tiled [1, 4, 8, 128] has volume 16384,
        logical_volume 4096)."""
        n = 1
        for d in self.padded_shape:
            n *= d
        return n

    def to_torch(self) -> torch.Tensor:
        from .conversion import to_torch

        return to_torch(self)

    def cpu(self, blocking: bool = True) -> Tensor:
        from .conversion import from_device

        return from_device(self)

    def deallocate(self, force: bool = True) -> None:
        """Tensor.deallocate(force): ttnn.deallocate(tensor, force) as a method."""
        from .conversion import deallocate

        deallocate(self, force)

    def to(self, device: Any = None, mem_config: MemoryConfig | None = None, cq_id: Any = None, *,
           target_layout: Layout | None = None) -> Tensor:
        """The real overloads: to(device, mem_config=None, cq_id=None) copies a host tensor to a device;
        to(target_layout) converts the layout."""
        from .conversion import to_device, to_layout

        target = device if device is not None else target_layout
        if isinstance(target, Layout):
            return to_layout(self, target)
        return to_device(self, target, mem_config)

    def reshape(self, *shape: Any) -> Tensor:
        """A host tensor's shape changes on the host (its values in logical order); a device tensor's through
        ttnn.reshape."""
        dims = tuple(int(d) for d in (shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape))
        if self._device is None:
            if self._layout == Layout.TILE:
                # A tiled host buffer keeps its tile padding: the new shape must pad to the same volume.
                def physical(d: tuple[int, ...]) -> tuple[int, int]:
                    rows = 1
                    for x in d[:-1]:
                        rows *= x
                    rows = rows // d[-2] * round_up(d[-2], TILE_SIZE) if len(d) > 1 else TILE_SIZE
                    return rows, round_up(d[-1], TILE_SIZE)

                old, new = physical(tuple(self._shape)), physical(dims)
                if old[0] * old[1] != new[0] * new[1]:
                    raise TTError("reshape", f"Physical data size {old[0] * old[1]} should be same as volume "
                                             f"indicated by physical shape ({new[0]}, {new[1]})")
            return Tensor.make([s.reshape(dims) for s in self._shards], self._dtype, self._layout, None)
        from .data_movement import reshape

        return reshape(self, dims)

    def __repr__(self) -> str:
        where = "host" if self._device is None else repr(self._device)
        return f"ttnn.Tensor(shape={self._shape}, dtype={self._dtype!r}, layout={self._layout!r}, {where})"

    # --- helpers for op implementations ---
    def shard(self, i: int = 0) -> torch.Tensor:
        return self._shards[i]

    @property
    def num_shards(self) -> int:
        return len(self._shards)


def place(op: str, device: MeshDevice, shape: Shape, dtype: DataType, layout: Layout, mc: MemoryConfig) -> Any:
    """Check that the device takes this placement and reserve its buffer."""
    from .allocator import allocate
    from .placement import check_placement

    check_placement(op, device, tuple(shape), layout, mc, dtype)
    return allocate(device, tuple(shape), dtype, layout, mc)


def _place(t: Tensor, device: MeshDevice, memory_config: MemoryConfig | None) -> Tensor:
    """Copy a host tensor onto every chip of `device` (the caller has already split it per chip if sharded)."""
    device.check_open("to_device")
    n = device.get_num_devices()
    shards = t._shards if len(t._shards) == n else [t._shards[0]] * n
    return Tensor.make([s.clone() for s in shards], t.dtype, t.layout, device, memory_config, op="to_device")


def require_device(op: str, *tensors: Any) -> MeshDevice:
    """Check that op inputs are allocated device tensors on one device; return it."""
    dev = None
    for i, t in enumerate(tensors):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TTError(op, f"input {i} must be a ttnn.Tensor, got {type(t).__name__}")
        if t._deallocated:
            raise TTError(op, f"input {i} was deallocated")
        if t._device is None:
            raise TTError(op, f"input {i} is a host tensor: move it to the device first (ttnn.to_device)")
        if dev is None:
            dev = t._device
        elif t._device is not dev:
            raise TTError(op, "inputs live on different devices")
    if dev is None:
        raise TTError(op, "needs at least one device tensor")
    dev.check_open(op)
    return dev


def require_layout(op: str, name: str, t: Tensor, layout: Layout) -> None:
    if t.layout != layout:
        raise TTError(op, f"{name} must be in {layout.name} layout, got {t.layout.name}")


def require_dtype(op: str, name: str, t: Tensor, allowed: tuple[DataType, ...]) -> None:
    if t.dtype not in allowed:
        names = ", ".join(d.name.lower() for d in allowed)
        raise TTError(op, f"{name} must be one of [{names}], got {t.dtype.name.lower()}")
