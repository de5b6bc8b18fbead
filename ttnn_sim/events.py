"""Command-queue events: ttnn.record_event / wait_for_event / event_synchronize with 0.81.1's signatures.

On a device, work enqueued on a command queue runs asynchronously; an event recorded after it lets the host (or
another queue) wait for exactly that work, e.g. a non-blocking trace replay followed by a read of its output. The
simulator executes every command when it is enqueued, so an event is complete once recorded; the calls still check
what a device checks (an open device, an event of this session)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import TTError


@dataclass(frozen=True)
class MeshEvent:
    """ttnn.MeshEvent: completion of the commands enqueued on a mesh device's queue before it was recorded."""

    device: Any
    cq_id: int
    event_id: int

    def __repr__(self) -> str:
        return f"MeshEvent(device_id={self.device.get_device_ids()[0]}, cq_id={self.cq_id}, event_id={self.event_id})"


_next_id = [0]


def record_event(mesh_device: Any, cq_id: int | None = None, sub_device_ids: Any = (),
                 device_range: Any = None) -> MeshEvent:
    if not getattr(mesh_device, "is_open", False):
        raise TTError("record_event", "the device is closed")
    if getattr(mesh_device, "capturing", None) is not None:
        raise TTError("record_event", "events cannot be recorded while a trace is being captured")
    _next_id[0] += 1
    return MeshEvent(mesh_device, int(cq_id or 0), _next_id[0])


def _check(op: str, mesh_event: Any) -> None:
    if not isinstance(mesh_event, MeshEvent):
        raise TTError(op, f"expected a ttnn.MeshEvent, got {type(mesh_event).__name__}")


def wait_for_event(cq_id: int | None = None, mesh_event: MeshEvent | None = None) -> None:
    """Make queue cq_id wait for the event (already complete on the simulator)."""
    _check("wait_for_event", mesh_event)


def event_synchronize(mesh_event: MeshEvent) -> None:
    """Block the host until the event completes (already complete on the simulator)."""
    _check("event_synchronize", mesh_event)
