"""Simulated devices and meshes: open/close, mesh shapes, and the per-device trace state."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Any

from .allocator import ChipMemory
from .chips import current_chip
from .cores import CoreCoord, CoreGrid
from .errors import TTError


def _host_chips() -> int:
    value = os.environ.get("TT_SIM_NUM_DEVICES", "8").strip()
    if not value.isdigit() or int(value) < 1:
        raise TTError("open_device", f"TT_SIM_NUM_DEVICES={value!r}: expected a positive chip count")
    return int(value)


# How many chips the simulated host has (a T3K's 8 by default; TT_SIM_NUM_DEVICES=32 for a Galaxy); a mesh may not
# ask for more.
SIM_NUM_DEVICES = _host_chips()


@dataclass(frozen=True)
class MeshShape:
    """ttnn.MeshShape(s0, s1) or MeshShape([s0, s1]) (keywords s0=, s1= too). Only 2-D meshes are simulated."""

    num_rows: int
    num_cols: int

    def __init__(self, *dims: Any, s0: int | None = None, s1: int | None = None, s2: int | None = None,
                 shape: Any = None) -> None:
        if shape is not None:
            dims = (shape,)
        if s0 is not None or s1 is not None or s2 is not None:
            dims = (*dims, *(d for d in (s0, s1, s2) if d is not None))
        if len(dims) == 1:
            dims = tuple(dims[0])
        if len(dims) == 3:
            raise TTError("MeshShape", f"3-D meshes are not simulated, got {dims}")
        if len(dims) != 2 or any(int(d) < 1 for d in dims):
            raise TTError("MeshShape", f"needs two positive dims, got {dims}")
        object.__setattr__(self, "num_rows", int(dims[0]))
        object.__setattr__(self, "num_cols", int(dims[1]))

    def __iter__(self):
        return iter((self.num_rows, self.num_cols))

    def __getitem__(self, i: int) -> int:
        return (self.num_rows, self.num_cols)[i]

    def __len__(self) -> int:
        return 2

    def dims(self) -> int:
        return 2

    def mesh_size(self) -> int:
        return self.num_rows * self.num_cols

    def __repr__(self) -> str:
        return f"MeshShape([{self.num_rows}, {self.num_cols}])"


@dataclass(frozen=True)
class MeshCoordinate:
    """ttnn.MeshCoordinate(c0, c1[, c2]) or MeshCoordinate([c0, ...]): a device's position in a mesh."""

    coords: tuple[int, ...]

    def __init__(self, *coords: Any) -> None:
        if len(coords) == 1 and not isinstance(coords[0], int):
            coords = tuple(coords[0])
        if not coords or any(int(c) < 0 for c in coords):
            raise TTError("MeshCoordinate", f"needs non-negative coordinates, got {coords}")
        object.__setattr__(self, "coords", tuple(int(c) for c in coords))

    def dims(self) -> int:
        return len(self.coords)

    def __getitem__(self, i: int) -> int:
        return self.coords[i]

    def __iter__(self):
        return iter(self.coords)

    def __len__(self) -> int:
        return len(self.coords)

    def __repr__(self) -> str:
        return f"MeshCoordinate({list(self.coords)})"


class Arch(enum.Enum):
    GRAYSKULL = 1
    WORMHOLE_B0 = 2
    BLACKHOLE = 3


# Allocator state per physical chip id: submeshes and the parent mesh see the same memory.
_CHIP_MEMORY: dict[int, ChipMemory] = {}


class MeshDeviceView:
    """ttnn.MeshDevice.get_view(): the mesh's shape and which of its devices this process drives (all of them: the
    simulator, like a single-host ttnn, runs the whole mesh in one process)."""

    def __init__(self, mesh: MeshDevice) -> None:
        self._mesh = mesh

    def shape(self) -> MeshShape:
        return self._mesh.shape

    def num_devices(self) -> int:
        return self._mesh.get_num_devices()

    def is_local(self, coord: MeshCoordinate) -> bool:
        r, c = tuple(coord)
        return 0 <= r < self._mesh.shape.num_rows and 0 <= c < self._mesh.shape.num_cols


class MeshDevice:
    """A grid of chips. A single opened device is a 1x1 mesh, as in current ttnn."""

    def __init__(self, shape: MeshShape, device_ids: list[int], trace_region_size: int = 0, **options: Any) -> None:
        self.chip = _CHIP_MEMORY[device_ids[0]].chip
        # Simulator only: fp32 accepted wherever the model asks for it (the `reference` profile; see compute.py).
        self.reference_precision = False
        self._mesh_shape = shape
        self._device_ids = device_ids
        self.trace_region_size = trace_region_size
        self.options = options
        self.is_open = True
        self.traces: dict[int, Any] = {}
        self.capturing: Any = None  # the Trace being captured, if any
        self._next_trace_id = 0
        # The program cache, on from the start as in ttnn 0.81.1: one entry per distinct program (see
        # note_program); None while disabled.
        self._programs: set | None = set()
        self._misses_allowed = True

    # --- ttnn.MeshDevice API subset ---
    @property
    def shape(self) -> MeshShape:
        return self._mesh_shape

    def get_num_devices(self) -> int:
        return self.shape.mesh_size()

    def get_device_ids(self) -> list[int]:
        return list(self._device_ids)

    def get_devices(self) -> list[MeshDevice]:
        return [self] if self.get_num_devices() == 1 else [self] * self.get_num_devices()

    @property
    def id(self) -> int:
        return self._device_ids[0]

    def arch(self) -> Arch:
        return Arch.BLACKHOLE if self.chip.arch == "blackhole" else Arch.WORMHOLE_B0

    def compute_with_storage_grid_size(self) -> CoreCoord:
        return CoreCoord(*self.chip.grid)

    @property
    def core_grid(self) -> CoreGrid:
        return CoreGrid(x=self.chip.grid[0], y=self.chip.grid[1])

    def dram_grid_size(self) -> CoreCoord:
        return CoreCoord(self.chip.dram_banks, 1)

    def chip_memories(self) -> list[ChipMemory]:
        """The allocator of each chip of this mesh."""
        return [_CHIP_MEMORY[i] for i in self._device_ids]

    def create_submeshes(self, submesh_shape: MeshShape) -> list[MeshDevice]:
        rows, cols = submesh_shape
        if self.shape.num_rows % rows or self.shape.num_cols % cols:
            raise TTError("create_submeshes", f"{submesh_shape} does not tile mesh {self.shape}")
        n = self.get_num_devices() // (rows * cols)
        per = rows * cols
        return [
            MeshDevice(MeshShape(rows, cols), self._device_ids[i * per : (i + 1) * per], self.trace_region_size)
            for i in range(n)
        ]

    def create_submesh(self, submesh_shape: MeshShape, offset: MeshCoordinate | None = None) -> MeshDevice:
        """The chips of a rows x cols window of this mesh at offset (default [0, 0]) as a mesh of their own, on the
        same chips and memory."""
        rows, cols = tuple(submesh_shape)
        r0, c0 = tuple(offset) if offset is not None else (0, 0)
        if r0 + rows > self.shape.num_rows or c0 + cols > self.shape.num_cols:
            raise TTError("create_submesh", f"{submesh_shape} at offset {[r0, c0]} does not fit in mesh {self.shape}")
        ids = [self._device_ids[(r0 + r) * self.shape.num_cols + c0 + c] for r in range(rows) for c in range(cols)]
        return MeshDevice(MeshShape(rows, cols), ids, self.trace_region_size)

    def get_view(self) -> MeshDeviceView:
        return MeshDeviceView(self)

    def submesh_view(self, shape: tuple[int, int]) -> MeshDevice:
        """The mesh's first rows x cols chips as a mesh (same chips, same memory): where a tensor mapped onto a
        submesh of this mesh lives. One view per shape, kept for the mesh's lifetime."""
        views = self.__dict__.setdefault("_submesh_views", {})
        rows, cols = shape
        if (rows, cols) not in views:
            ids = [self._device_ids[r * self.shape.num_cols + c] for r in range(rows) for c in range(cols)]
            views[(rows, cols)] = MeshDevice(MeshShape(rows, cols), ids, self.trace_region_size)
        return views[(rows, cols)]

    def enable_reference_precision(self) -> None:
        """Simulator only (no device has it): let ops take fp32 operands a device refuses, for bit-accurate
        comparisons with fp32 references."""
        self.reference_precision = True

    # --- program cache ---
    def enable_program_cache(self) -> None:
        if self._programs is None:
            self._programs = set()

    def disable_and_clear_program_cache(self) -> None:
        self._programs = None

    def clear_program_cache(self) -> None:
        if self._programs is not None:
            self._programs.clear()

    def num_program_cache_entries(self) -> int:
        return len(self._programs) if self._programs is not None else 0

    def set_program_cache_misses_allowed(self, allowed: bool) -> None:
        self._misses_allowed = bool(allowed)

    def note_program(self, key: tuple) -> None:
        """An op ran a program described by key: like a device op's program hash, the op, its attributes and its
        inputs' dtypes, layouts and placements, and their shapes where the op's program depends on them (see
        trace._SHAPE_FREE_PROGRAMS)."""
        if self._programs is None or key in self._programs:
            return
        if not self._misses_allowed:
            # The real message names the device-operation class (e.g. "UnaryDeviceOperation"); here the op.
            raise TTError(str(key[0]), f'Device operation "{key[0]}": program cache miss occurred, but cache '
                                       f"misses are forbidden")
        self._programs.add(key)

    # --- sub-devices (bookkeeping; see subdevice.py) ---
    def _sub_devices(self) -> Any:
        from .subdevice import SubDeviceManagers

        if getattr(self, "_sub_device_managers", None) is None:
            self._sub_device_managers = SubDeviceManagers()
        return self._sub_device_managers

    def create_sub_device_manager(self, sub_devices: Any, local_l1_size: int) -> Any:
        return self._sub_devices().create(sub_devices, local_l1_size)

    def load_sub_device_manager(self, sub_device_manager_id: Any) -> None:
        self._sub_devices().load(sub_device_manager_id)

    def clear_loaded_sub_device_manager(self) -> None:
        self._sub_devices().clear_loaded()

    def remove_sub_device_manager(self, sub_device_manager_id: Any) -> None:
        self._sub_devices().remove(sub_device_manager_id)

    def set_sub_device_stall_group(self, sub_device_ids: Any) -> None:
        self._sub_devices().set_stall_group(list(sub_device_ids))

    def reset_sub_device_stall_group(self) -> None:
        self._sub_devices().reset_stall_group()

    def check_open(self, op: str) -> None:
        if not self.is_open:
            raise TTError(op, "device is closed")

    def __repr__(self) -> str:
        return f"MeshDevice(shape={tuple(self.shape)}, sim)"


Device = MeshDevice
_open: list[MeshDevice] = []


def get_num_devices() -> int:
    return SIM_NUM_DEVICES


def get_device_ids() -> list[int]:
    return list(range(SIM_NUM_DEVICES))


def get_arch_name() -> str:
    """The chip's arch as tt-metal names it ("wormhole_b0", "blackhole"); tests' skip_for_* helpers read it."""
    return current_chip().arch


def get_num_pcie_devices() -> int:
    return SIM_NUM_DEVICES


def _forbid_during_capture(op: str) -> None:
    for dev in _open:
        if dev.capturing is not None:
            raise TTError(op, "not allowed while a trace is being captured")


def open_mesh_device(
    mesh_shape: MeshShape | None = None,
    l1_small_size: int = 0,
    trace_region_size: int = 0,
    num_command_queues: int = 1,
    dispatch_core_config: Any = None,
    offset: Any = None,
    physical_device_ids: list[int] | None = None,
    worker_l1_size: int = 0,
) -> MeshDevice:
    _forbid_during_capture("open_mesh_device")
    shape = mesh_shape or MeshShape(1, 1)
    n = shape.mesh_size()
    in_use = {i for d in _open for i in d.get_device_ids()}
    ids = physical_device_ids or [i for i in range(SIM_NUM_DEVICES) if i not in in_use][:n]
    if len(ids) != n or any(i in in_use or not 0 <= i < SIM_NUM_DEVICES for i in ids):
        raise TTError("open_mesh_device",
                      f"cannot open a {tuple(shape)} mesh: {SIM_NUM_DEVICES} chips, in use {in_use}")
    chip = current_chip()
    for i in ids:
        _CHIP_MEMORY[i] = ChipMemory(chip, trace_region_size, l1_small_size)
    dev = MeshDevice(
        shape, ids, trace_region_size, l1_small_size=l1_small_size, num_command_queues=num_command_queues,
        dispatch_core_config=dispatch_core_config, worker_l1_size=worker_l1_size,
    )
    _open.append(dev)
    return dev


def close_mesh_device(mesh_device: MeshDevice) -> None:
    _forbid_during_capture("close_mesh_device")
    if mesh_device in _open:
        _open.remove(mesh_device)
        for i in mesh_device.get_device_ids():
            _CHIP_MEMORY.pop(i, None)
    mesh_device.is_open = False
    mesh_device.traces.clear()


def open_device(
    device_id: int = 0,
    *,
    l1_small_size: int = 0,
    trace_region_size: int = 0,
    dispatch_core_config: Any = None,
    worker_l1_size: int = 0,
) -> MeshDevice:
    return open_mesh_device(
        MeshShape(1, 1), l1_small_size=l1_small_size, trace_region_size=trace_region_size,
        dispatch_core_config=dispatch_core_config, physical_device_ids=[device_id], worker_l1_size=worker_l1_size,
    )


def close_device(device: MeshDevice) -> None:
    close_mesh_device(device)


def get_memory_view(device: MeshDevice, buffer_type: Any) -> Any:
    """Allocator statistics of the device's first chip for one buffer type (DRAM, L1, L1_SMALL, TRACE)."""
    return device.chip_memories()[0].view(buffer_type)


def synchronize_device(device: MeshDevice, cq_id: int | None = None, sub_device_ids: Any = None) -> None:
    """Ops run eagerly on the host: the queue is always drained."""
    device.check_open("synchronize_device")
