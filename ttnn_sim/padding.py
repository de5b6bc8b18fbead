"""fill_implicit_tile_padding: writes a value into the padding a tiled tensor's last two dims carry up to whole
tiles. The simulator stores logical values only (its ops never read padding), so only the op's rules and what it
returns are the device's: the input tensor itself, filled in place, for every dtype but the block floats, whose
shared exponents make the device write a new tensor (measured on 0.81.1: no allocation for bf16/fp32/int32, a new
buffer for bfloat8_b/bfloat4_b), placed as the input whatever memory_config says."""

from __future__ import annotations

from .compute import output, per_device
from .memory import MemoryConfig
from .rules import rules
from .tensor import Tensor
from .trace import device_op
from .types import BLOCK_FLOAT_TYPES, Layout

R = rules("fill_implicit_tile_padding", "data_movement/fill_pad/device/fill_pad_device_operation.cpp")
ON_DEVICE = R("Device Operations expect device tensors as inputs", "fill-pad/host", "fill-pad/ok",
              source="ttnn/api/ttnn/device_operation.hpp")
TILED = R("FillPad should only be used for tile layout", "fill-pad/row-major", "fill-pad/ok")


@device_op(kernel_replay=True)
def fill_implicit_tile_padding(input_tensor: Tensor, fill_value: float, *,
                               memory_config: MemoryConfig | None = None) -> Tensor:
    ON_DEVICE.require(input_tensor.device_or_none is not None)
    TILED.require(input_tensor.layout == Layout.TILE)
    if input_tensor.dtype not in BLOCK_FLOAT_TYPES:
        return input_tensor
    return output(input_tensor, per_device(lambda x: x.clone(), input_tensor), None, None,
                  input_tensor.memory_config())
