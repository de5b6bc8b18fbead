"""Command-queue events on the simulator: recorded after enqueued work, waited on by a queue or the host; refused
on a closed device, during a trace capture, or for anything that is not an event."""

import pytest
import torch

import ttnn_sim as ttnn


def test_event_after_a_non_blocking_replay(device):
    x = ttnn.from_torch(torch.ones(1, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    y = ttnn.add(x, x)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    with pytest.raises(ttnn.TTError, match="while a trace is being captured"):
        tid2 = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            ttnn.record_event(device, 0)
        finally:
            ttnn.end_trace_capture(device, tid2, cq_id=0)
    ttnn.execute_trace(device, tid, cq_id=0, blocking=False)
    event = ttnn.record_event(device, 0)
    assert isinstance(event, ttnn.MeshEvent)
    ttnn.wait_for_event(1, event)
    host = ttnn.from_device(y, blocking=False)
    ttnn.event_synchronize(ttnn.record_event(device, cq_id=0))
    assert torch.equal(ttnn.to_torch(host), torch.full((1, 1, 32, 32), 2.0, dtype=torch.bfloat16))
    with pytest.raises(ttnn.TTError, match="expected a ttnn.MeshEvent"):
        ttnn.event_synchronize(tid)


def test_no_events_on_a_closed_device():
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1))
    ttnn.close_mesh_device(dev)
    with pytest.raises(ttnn.TTError, match="closed"):
        ttnn.record_event(dev)
