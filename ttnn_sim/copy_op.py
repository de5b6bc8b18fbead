"""ttnn.copy(input_a, input_b): copy input_a's values into the preallocated input_b, in place (one device program,
data_movement/copy/device/copy_device_operation.cpp in ttnn 0.81.1). The two must have the same logical shape and
the same layout; dtype and memory configuration may differ (the values are re-stored in input_b's dtype, as the
device's copy kernel packs them). Used with traces: writing new inputs into a trace's persistent tensors between
replays (tt-metal's chunked-SDPA trace tests)."""

from __future__ import annotations

from .compute import per_device_write
from .rules import rules
from .tensor import Tensor, require_device, store_as
from .trace import DuringCapture, device_op

R = rules("copy", "data_movement/copy/device/copy_device_operation.cpp")
HOST = R("Device Operations expect device tensors as inputs", "copy/a-host", "copy/ok",
         source="ttnn/cpp/ttnn/device_operation.hpp")
SHAPE = R("Input tensor shape {} does not match output tensor shape {}", "copy/shape-mismatch",
          "copy/same-volume-other-shape", "copy/ok")
LAYOUT = R("Input tensor layout ({}) must equal output tensor layout ({})", "copy/tile-to-row-major",
           "copy/row-major")


@device_op(DuringCapture.SKIP, kernel_replay=True)
def copy(input_a: Tensor, input_b: Tensor) -> Tensor:
    """Write input_a's values into input_b (re-stored in input_b's dtype); returns input_b."""
    for t in (input_a, input_b):
        HOST.require(isinstance(t, Tensor) and t.device_or_none is not None)
    require_device("copy", input_a, input_b)
    SHAPE.require(tuple(input_a.shape) == tuple(input_b.shape), f"Shape({list(input_a.shape)})",
                  f"Shape({list(input_b.shape)})")
    LAYOUT.require(input_a.layout == input_b.layout, f"Layout::{input_a.layout.name}",
                   f"Layout::{input_b.layout.name}")
    dtype = input_b.dtype

    def write(src, dst) -> None:
        dst.copy_(store_as(src, dtype).to(dst.dtype).reshape(dst.shape))

    per_device_write(write, input_a, input_b)
    return input_b
