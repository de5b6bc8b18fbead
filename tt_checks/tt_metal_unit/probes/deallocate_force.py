"""Probe behind docs/tt-metal-unit-tests.md (issue 22, multi-latent attention): what the real ttnn 0.81.1 does, on a
mock N150, with ttnn.deallocate(t, force=False) on a buffer another handle shares - the call
tests/ttnn/unit_tests/operations/sdpa/test_mla_prefill_chunked_vs_not.py (1bfb5ceb) makes on a full-range slice of
its page table. The simulator follows each answer (tests/sim/test_tensor.py).

    TT_METAL_MOCK_CLUSTER_DESC_PATH=$PWD/tt_checks/mock_device/clusters/N150.yaml \\
        .venv-ttnn/bin/python tt_checks/tt_metal_unit/probes/deallocate_force.py

Measured: a full-range slice is a new handle on the same buffer (same address); force=False then leaves both
handles allocated; a partial slice has a buffer of its own and goes; an unshared tensor goes with force=False too,
and the original goes once no other handle lives; force=True on the full-range slice frees the buffer under the
original handle as well.
"""

import torch
import ttnn

dev = ttnn.open_device(device_id=0)


def table() -> ttnn.Tensor:
    return ttnn.from_torch(torch.arange(48, dtype=torch.int32).reshape(4, 12), device=dev, dtype=ttnn.int32,
                           layout=ttnn.ROW_MAJOR_LAYOUT)


t = table()
s = t[:, 0:12]
print("full slice: same object", s is t, "same address", s.buffer_address() == t.buffer_address())
ttnn.deallocate(s, force=False)
print("full slice, force=False: slice allocated", s.is_allocated(), "original allocated", t.is_allocated())
t = table()
s = t[:, 4:8]
print("partial slice: same address", s.buffer_address() == t.buffer_address())
ttnn.deallocate(s, force=False)
print("partial slice, force=False: slice allocated", s.is_allocated(), "original allocated", t.is_allocated())
t = table()
ttnn.deallocate(t, force=False)
print("unshared, force=False: allocated", t.is_allocated())
t = table()
s = t[:, 0:12]
ttnn.deallocate(t, force=False)
print("original, force=False while the full slice lives: allocated", t.is_allocated())
del s
ttnn.deallocate(t, force=False)
print("original, force=False once the slice is gone: allocated", t.is_allocated())
t = table()
s = t[:, 0:12]
ttnn.deallocate(s, force=True)
print("full slice, force=True: original allocated", t.is_allocated())
ttnn.close_device(dev)
