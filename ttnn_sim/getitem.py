"""``ttnn.Tensor.__getitem__``: PyTorch-style indexing, as ttnn 0.81.1 defines it in Python
(ttnn/operations/core.py): ints and slices (an Ellipsis expands, missing trailing dims are whole) become one
``ttnn.slice`` on a device tensor, then every int-indexed dim is squeezed out. A host tensor takes unit steps only.

tt-metal's model helpers slice this way (models/tt_transformers/tt/rope.py: ``cos[:, :batch, :, :]``).
"""

from __future__ import annotations

from typing import Any

from .data_movement import reshape, slice
from .tensor import Tensor


def getitem(input_tensor: Tensor, slices: Any) -> Tensor:
    shape = tuple(input_tensor.shape)
    rank = len(shape)
    items = list(slices) if isinstance(slices, tuple) else [slices]
    if items.count(Ellipsis) > 1:
        raise ValueError("Only one ellipsis ('...') is allowed in a slice.")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        missing = rank - (len(items) - 1)
        if missing < 0:
            raise IndexError(f"Too many indices for tensor of dimension {rank}")
        items[at:at + 1] = [slice_all()] * missing
    items += [slice_all()] * (rank - len(items))
    if len(items) > rank:
        raise IndexError(f"Too many indices for tensor of dimension {rank}")
    starts, ends, steps, squeezed = [], [], [], []
    for d, s in enumerate(items):
        if isinstance(s, int):
            i = s if s >= 0 else s + shape[d]
            if not 0 <= i < shape[d]:
                raise IndexError(f"Index {s} (converted to {i}) is out of bounds for dimension {d} of size {shape[d]}")
            starts.append(i), ends.append(i + 1), steps.append(1)
            squeezed.append(d)
        elif isinstance(s, type(slice_all())):
            starts.append(0 if s.start is None else s.start)
            ends.append(shape[d] if s.stop is None else s.stop)
            steps.append(1 if s.step is None else s.step)
        else:
            raise TypeError(f"Invalid slice type: {s}")
    if input_tensor.device() is not None:
        out = slice(input_tensor, starts, ends, steps)
    else:
        if any(st != 1 for st in steps):
            raise RuntimeError("Host tensors cannot be accessed with non-unit stride")
        raise NotImplementedError("ttnn_sim: indexing a host tensor (ttnn's unpad path) is not modelled")
    if squeezed:
        out = reshape(out, [n for d, n in enumerate(out.shape) if d not in squeezed])
    return out


def slice_all() -> Any:
    import builtins

    return builtins.slice(None, None, None)
