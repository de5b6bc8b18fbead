"""embedding: gathers rows of a [.., vocab, dim] table by uint32 (or bfloat16) ids.

A TILE table is untilized first (block floats to bfloat16); the output is [ids.shape[0], ids.shape[-1], dim] (any
middle id dims are dropped, as ttnn 0.81.1 does: the rows come from the first ids in order), in `layout` (else the
table's), placed by memory_config (else the ids' placement).
"""

from __future__ import annotations

import enum
from typing import Any

import torch

from .compute import output, per_device, reference_precision
from .errors import TTError
from .memory import BufferType, MemoryConfig, TensorMemoryLayout
from .placement import check_placement
from .rules import rules
from .tensor import Tensor, require_device
from .trace import _spec, device_op
from .types import BLOCK_FLOAT_TYPES, TILE_SIZE, DataType, Layout


class EmbeddingsType(enum.Enum):
    GENERIC = 0
    PADDED = 1
    BINARY = 2


R = rules("embedding", "embedding/device/embedding_device_operation.cpp")
TYPECAST = R("Can only typecast output embeddings when producing TILE_LAYOUT output", "embedding/dtype-bfp8-row-major",
             "embedding/dtype-fp32-row-major", "embedding/dtype-row-major-ids-int32", "embedding/dtype-bfp8-tile",
             source="embedding/embedding.cpp")
ON_DEVICE = R("Device Operations expect device tensors as inputs", "embedding/host-ids", "embedding/ok",
              source="ttnn/api/ttnn/device_operation.hpp")
IDS_DTYPE = R("Input must be UINT32 or BFLOAT16", "embedding/ids-int32", "embedding/ids-uint16",
              "embedding/ids-int32-weight-fp32", "embedding/ids-sharded-int32", "embedding/ids-bf16")
WEIGHT_DTYPE = R("Weights tensor must have BFLOAT16 dtype", "embedding/weight-fp32", "embedding/weight-fp32-tile",
                 "embedding/weight-uint32", "embedding/weight-3d-fp32", "embedding/binary-fp32",
                 "embedding/weight-bfp8")
IDS_SHARDED = R("Embedding does not currently support sharded inputs", "embedding/ids-sharded",
                "embedding/ids-sharded-weight-sharded", "embedding/ids-l1")
WEIGHT_SHARDED = R("Embedding does not currently support sharded weights", "embedding/weight-sharded",
                   "embedding/weight-3d-sharded", "embedding/weight-l1")
WEIGHT_DIMS = R("First two dimensions for the weights must be 1 but got {} and {}", "embedding/weight-3d-batch-2",
                "embedding/weight-4d-batch-2", "embedding/weight-tile-3d", "embedding/binary-3d",
                "embedding/weight-4d")
PAD_TOKEN = R("Pad token must be specified when PADDED Embeddings Type is specified", "embedding/padded-no-pad-token",
              "embedding/padding-idx")
NO_PAD_TOKEN = R("Pad token must not be specified when PADDED Embeddings Type is not specified",
                 unreachable="ttnn.embedding switches the type to PADDED whenever padding_idx is given")
BINARY_ROWS = R("Weight tensor must have 2 embeddings for BINARY Embeddings Type", "embedding/binary-1000-rows",
                "embedding/binary-2-rows")
OUTPUT_SPEC = R("MemoryConfig must have Shard Spec specified for sharded memory layout", "embedding/to-height-no-spec",
                "embedding/to-height-sharded", source="tt_metal/impl/tensor/spec/layout/tensor_layout.cpp")
RM_SHARDED_HEIGHT = R("Embedding only supports height sharded Row Major outputs", "embedding/to-width-sharded",
                      "embedding/to-block-sharded", "embedding/to-height-sharded")
RM_SHARDED_L1 = R("Embedding sharded Row Major output must be in L1: the reader writes rows straight into its own "
                  "shard", "embedding/to-height-sharded-dram", "embedding/to-height-sharded")


def _weight_4d(shape: Any) -> list[int]:
    return [1] * (4 - len(shape)) + list(shape)


def _tile_aligned(ids: Tensor, dim: int) -> bool:
    """Whether the fused tilizing kernel can write TILE output directly (and so also typecast without one)."""
    return ids.shape[-1] % TILE_SIZE == 0 and dim % TILE_SIZE == 0


@device_op(kernel_replay=True)
def embedding(
    input_tensor: Tensor,
    weight: Tensor,
    *,
    padding_idx: int | None = None,
    layout: Layout | None = None,
    embeddings_type: Any = None,
    dtype: DataType | None = None,
    output_tensor: Tensor | None = None,
    memory_config: MemoryConfig | None = None,
) -> Tensor:
    op = "embedding"
    ids = input_tensor
    out_layout = layout or weight.layout
    # A TILE table is untilized first; block floats come out as bfloat16.
    table_dtype = DataType.BFLOAT16 if weight.dtype in BLOCK_FLOAT_TYPES else weight.dtype
    out_dtype = table_dtype
    if dtype is not None and dtype != table_dtype:
        if out_layout == Layout.TILE:
            out_dtype = dtype
        else:  # dtype is ignored when the ids or the rows are not whole tiles (measured on 0.81.1)
            TYPECAST.require(not _tile_aligned(ids, weight.shape[-1]))
    ON_DEVICE.require(ids.device_or_none is not None and weight.device_or_none is not None)
    require_device(op, ids, weight)
    # The output's spec is built (and checked) before the op validates its inputs.
    w4 = _weight_4d(weight.shape)
    vocab, dim = w4[2], w4[3]
    lead = ids.shape[0] if len(ids.shape) > 1 else None
    seq = ids.shape[-1]
    out_shape = (seq, dim) if lead is None else (lead, seq, dim)
    mc = memory_config or ids.memory_config()
    if mc.is_sharded():
        OUTPUT_SPEC.require(mc.shard_spec is not None)
    check_placement(op, ids.device_or_none, out_shape, out_layout, mc, out_dtype)
    IDS_DTYPE.require(ids.dtype in (DataType.UINT32, DataType.BFLOAT16))
    WEIGHT_DTYPE.require(table_dtype == DataType.BFLOAT16 or reference_precision(weight))
    IDS_SHARDED.require(not ids.is_sharded())
    WEIGHT_SHARDED.require(not weight.is_sharded())
    WEIGHT_DIMS.require(w4[0] == 1 and w4[1] == 1, w4[0], w4[1])
    kind = EmbeddingsType.PADDED if padding_idx is not None else embeddings_type or EmbeddingsType.GENERIC
    PAD_TOKEN.require(kind != EmbeddingsType.PADDED or padding_idx is not None)
    NO_PAD_TOKEN.require(kind == EmbeddingsType.PADDED or padding_idx is None)
    if kind == EmbeddingsType.BINARY:
        BINARY_ROWS.require(vocab == 2)
    if mc.is_sharded() and out_layout == Layout.ROW_MAJOR:
        RM_SHARDED_HEIGHT.require(mc.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED)
        RM_SHARDED_L1.require(mc.buffer_type == BufferType.L1)

    rows = (lead or 1) * seq

    def compute(i: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        flat = i.reshape(-1)[:rows].long()
        if flat.numel() and (flat.min() < 0 or flat.max() >= vocab):
            raise TTError(op, f"ids must lie in [0, {vocab}); got {int(flat.min())}..{int(flat.max())}")
        out = torch.nn.functional.embedding(flat, w.reshape(vocab, dim))
        return out.reshape(seq, dim) if lead is None else out.reshape(lead, seq, dim)

    if weight.layout == Layout.TILE:
        # The untilize of the table is a program of its own in the cache (measured on 0.81.1: a TILE table costs two
        # entries, a ROW_MAJOR one one; tt_checks/tt_metal_unit/probes/rope_decode_setup.py).
        weight.device().note_program(("embedding-untilize-weight", _spec(weight, True)))
    out = output(weight, per_device(compute, ids, weight), out_dtype, out_layout, mc)
    if output_tensor is not None:
        output_tensor._rebind(out)
        return output_tensor
    return out
