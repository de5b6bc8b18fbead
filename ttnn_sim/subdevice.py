"""Sub-devices: ttnn.SubDevice (a set of worker cores per core type), ttnn.SubDeviceId, and the device's sub-device
managers (create, load, stall group, clear, remove), with the checks ttnn 0.81.1 makes (sub_device_manager.cpp,
measured on the mock N150: "SubDevices specified for SubDeviceManager intersect", "SubDevice index 1 out of bounds
1"; loading a manager segfaults there, so what loading changes was not measured).

The simulator runs every op eagerly on the host: which cores an op's sub-device owns changes neither its values nor
its outputs' placement, so ops take sub_device_id / subdevice_id and keep it as bookkeeping only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cores import CoreRangeSet
from .errors import TTError

# The real messages (sub_device_manager.cpp, probed on the mock N150). Not corpus rules: the corpus replays op calls,
# and these are device methods.
INTERSECT = "SubDevices specified for SubDeviceManager intersect"
OUT_OF_BOUNDS = "SubDevice index {} out of bounds {}"


class SubDevice:
    """ttnn.SubDevice([worker_cores, (ethernet_cores)]): one CoreRangeSet per core type."""

    def __init__(self, cores: Any) -> None:
        self._cores = [c if isinstance(c, CoreRangeSet) else CoreRangeSet(c) for c in cores]
        if not self._cores:
            raise TTError("SubDevice", "needs at least the worker cores")

    def cores(self, core_type: int = 0) -> CoreRangeSet:
        return self._cores[core_type] if core_type < len(self._cores) else CoreRangeSet()

    def __repr__(self) -> str:
        return f"SubDevice({self._cores})"


@dataclass(frozen=True)
class SubDeviceId:
    """ttnn.SubDeviceId(i): a sub-device's index in the loaded manager."""

    id: int

    def __int__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"SubDeviceId({self.id})"


@dataclass(frozen=True)
class SubDeviceManagerId:
    id: int


def _intersect(a: CoreRangeSet, b: CoreRangeSet) -> bool:
    return any(b.contains(c) for c in a.cores())


class SubDeviceManagers:
    """One device's managers. Id 0 is the default manager (one sub-device: every core)."""

    def __init__(self) -> None:
        self._managers: dict[int, list[SubDevice]] = {0: []}
        self._next = 1
        self.loaded = 0
        self.stall_group: list[SubDeviceId] = []

    def create(self, sub_devices: list[SubDevice], local_l1_size: int) -> SubDeviceManagerId:
        subs = list(sub_devices)
        for i in range(len(subs)):
            for j in range(i + 1, len(subs)):
                for k in range(max(len(subs[i]._cores), len(subs[j]._cores))):
                    if _intersect(subs[i].cores(k), subs[j].cores(k)):
                        raise TTError("create_sub_device_manager", INTERSECT)
        mid = self._next
        self._next += 1
        self._managers[mid] = subs
        return SubDeviceManagerId(mid)

    def _get(self, op: str, manager: SubDeviceManagerId) -> list[SubDevice]:
        if manager.id not in self._managers:
            raise TTError(op, f"SubDeviceManager {manager.id} does not exist")
        return self._managers[manager.id]

    def load(self, manager: SubDeviceManagerId) -> None:
        self._get("load_sub_device_manager", manager)
        self.loaded = manager.id
        self.stall_group = []

    def num_sub_devices(self) -> int:
        return max(1, len(self._managers[self.loaded]))

    def set_stall_group(self, ids: list[SubDeviceId]) -> None:
        n = self.num_sub_devices()
        for s in ids:
            if int(s) >= n:
                raise TTError("set_sub_device_stall_group", OUT_OF_BOUNDS.format(int(s), n))
        self.stall_group = list(ids)

    def reset_stall_group(self) -> None:
        self.stall_group = []

    def clear_loaded(self) -> None:
        self.loaded = 0
        self.stall_group = []

    def remove(self, manager: SubDeviceManagerId) -> None:
        self._get("remove_sub_device_manager", manager)
        if manager.id == self.loaded:
            # (not measured: loading segfaults on the mock device) the simulator's own refusal
            raise TTError("remove_sub_device_manager", f"SubDeviceManager {manager.id} is loaded; clear it first")
        if manager.id != 0:
            del self._managers[manager.id]


__all__ = ["SubDevice", "SubDeviceId", "SubDeviceManagerId"]
