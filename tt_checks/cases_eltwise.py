"""Hand-written corpus cases: element-wise, normalization, embedding and reduction ops (see tt_checks/corpus_cases.py
for the encoding helpers).

For each op: valid calls on interleaved (DRAM, L1) and sharded (height, width, block) inputs where the op takes them,
and next to them the calls that break each of its validation rules. ttnn.fill's cases are named "fill-op/..." (the
paged_fill_cache cases already own "fill/...")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.corpus_cases import DRAM, L1, T, block, call, coord, enum, height, host, mem, obj, width

X = [1, 1, 32, 64]
HS = height((32, 64), 8)  # [1, 1, 256, 64]: one tile row per core of the first grid row
TALL = [1, 1, 256, 64]


def dt(name: str) -> dict:
    return enum(f"DataType.{name}")


def lay(name: str) -> dict:
    return enum(f"Layout.{name}")


def acts(*names: str) -> dict:
    return {"t": "list", "v": [enum(f"UnaryOpType.{n}") for n in names]}


def crs(*ranges: tuple[int, int, int, int]) -> dict:
    return obj("CoreRangeSet", ranges=[list(r) for r in ranges])


def binary(op: str) -> Iterator[tuple[str, dict]]:
    """add and mul are the same binary_ng device op; add carries every rule, mul the ones that name the op."""
    p = op

    def c(a: Any, b: Any, **kw: Any) -> dict:
        return call(op, a, b, **kw)

    yield f"{p}/ok", c(T(X), T(X))
    yield f"{p}/l1", c(T(X, m=L1), T(X, m=L1))
    yield f"{p}/int32-bf16", c(T(X, "INT32"), T(X))
    yield f"{p}/int32", c(T(X, "INT32"), T(X, "INT32"))
    yield f"{p}/bcast-batch-2-vs-3", c(T([2, 1, 32, 64]), T([3, 1, 32, 64]))
    yield f"{p}/bcast-w-64-vs-32", c(T(X), T([1, 1, 32, 32]))
    yield f"{p}/int32-scalar-fraction", c(T(X, "INT32"), 2.5)
    yield f"{p}/int32-scalar", c(T(X, "INT32"), 2)
    yield f"{p}/uint8-row-major", c(T(X, "UINT8", "ROW_MAJOR"), T(X, "UINT8", "ROW_MAJOR"))
    yield f"{p}/height-sharded", c(T(TALL, m=HS), T(TALL, m=HS))
    yield f"{p}/bf16-uint8", c(T(X), T(X, "UINT8"))
    yield f"{p}/int32-uint32", c(T(X, "INT32"), T(X, "UINT32"))
    yield f"{p}/row-major", c(T(X, layout="ROW_MAJOR"), T(X, layout="ROW_MAJOR"))
    yield f"{p}/row-major-output-tensor", c(T(X, layout="ROW_MAJOR"), T(X, layout="ROW_MAJOR"),
                                            output_tensor=T(X, layout="ROW_MAJOR"))
    yield f"{p}/output-tensor", c(T(X), T(X), output_tensor=T(X))
    yield f"{p}/output-tensor-dtype-mismatch", c(T(X), T(X), dtype=dt("FLOAT32"), output_tensor=T(X))
    yield f"{p}/output-tensor-wrong-shape", c(T(X), T(X), output_tensor=T([1, 1, 32, 32]))
    yield f"{p}/host-a", c(host(X, layout="TILE"), T(X))
    yield f"{p}/host-b", c(T(X), host(X, layout="TILE"))
    yield f"{p}/rank7-bcast", c(T([2, 1, 1, 1, 1, 32, 64]), T([1, 1, 1, 1, 1, 32, 64]))
    yield f"{p}/rank7", c(T([2, 1, 1, 1, 1, 32, 64]), T([2, 1, 1, 1, 1, 32, 64]))
    if op != "add":
        # multiply promotes a 32-bit integer operand to the float one's dtype (add rejects the mix)
        yield f"{p}/bf16-int32", c(T(X), T(X, "INT32"))
        yield f"{p}/int32-fp32", c(T(X, "INT32"), T(X, "FLOAT32"))
        yield f"{p}/int32-bfp8", c(T(X, "INT32"), T(X, "BFLOAT8_B"))
        yield f"{p}/bfp8-int32", c(T(X, "BFLOAT8_B"), T(X, "INT32"))
        yield f"{p}/uint32-bf16", c(T(X, "UINT32"), T(X))
        yield f"{p}/uint16-bf16", c(T(X, "UINT16"), T(X))
        yield f"{p}/int32-bf16-dtype-int32", c(T(X, "INT32"), T(X), dtype=dt("INT32"))
        yield f"{p}/int32-row-major-bf16", c(T(X, "INT32", "ROW_MAJOR"), T(X, layout="ROW_MAJOR"))
        yield f"{p}/uint32-scalar-fraction", c(T(X, "UINT32"), 2.5)
        yield f"{p}/uint16-scalar-fraction", c(T(X, "UINT16"), 2.5)
        yield f"{p}/int32-scalar-fraction-into-int32", c(T(X, "INT32"), 2.5, output_tensor=T(X, "INT32"))
        yield f"{p}/silu-a", c(T(X), T(X), input_tensor_a_activations=acts("SILU"))
        yield f"{p}/silu-a-bfp8-out", c(T(X), T(X), input_tensor_a_activations=acts("SILU"),
                                         dtype=dt("BFLOAT8_B"), memory_config=DRAM)
        yield f"{p}/width-sharded-silu", c(T([1, 1, 32, 1536], m=width((32, 96), 16)),
                                           T([1, 1, 32, 1536], m=width((32, 96), 16)),
                                           input_tensor_a_activations=acts("SILU"))
        return

    # placement: the output follows A (L1 over DRAM, interleaved over a sharded B unless A is in DRAM)
    yield "add/a-l1-b-dram", c(T(X, m=L1), T(X))
    yield "add/a-dram-b-l1", c(T(X), T(X, m=L1))
    yield "add/mem-l1", c(T(X), T(X), memory_config=L1)
    # broadcasting
    yield "add/bcast-row", c(T(X), T([1, 1, 1, 64]))
    yield "add/bcast-col", c(T(X), T([1, 1, 32, 1]))
    yield "add/bcast-scalar-tensor", c(T(X), T([1, 1, 1, 1]))
    yield "add/bcast-a-row", c(T([1, 1, 1, 64]), T(X))
    yield "add/bcast-row-col", c(T([1, 1, 1, 64]), T([1, 1, 32, 1]))
    yield "add/bcast-rank", c(T([2, 3, 32, 64]), T([64]))
    yield "add/bcast-rank-up", c(T([32, 64]), T([2, 1, 32, 64]))
    yield "add/bcast-batch", c(T([2, 1, 32, 64]), T([1, 3, 32, 64]))
    yield "add/bcast-h-64-vs-32", c(T([1, 1, 64, 64]), T(X))
    yield "add/bcast-dim1-2-vs-3", c(T([1, 2, 32, 64]), T([1, 3, 32, 64]))
    yield "add/rank6-bcast", c(T([2, 1, 1, 1, 32, 64]), T([1, 1, 1, 1, 32, 64]))
    yield "add/rank1", c(T([64]), T([64]))
    yield "add/unaligned", c(T([1, 1, 30, 50]), T([1, 1, 30, 50]))
    yield "add/unaligned-bcast", c(T([1, 1, 30, 50]), T([50]))
    yield "add/scalar", c(T(X), 2.0)
    # layouts and dtypes
    yield "add/row-major-unaligned", c(T([1, 1, 30, 50], layout="ROW_MAJOR"), T([1, 1, 30, 50], layout="ROW_MAJOR"))
    yield "add/row-major-a", c(T(X, layout="ROW_MAJOR"), T(X))
    yield "add/row-major-b", c(T(X), T(X, layout="ROW_MAJOR"))
    yield "add/row-major-bfp8-out", c(T(X, layout="ROW_MAJOR"), T(X, layout="ROW_MAJOR"), dtype=dt("BFLOAT8_B"))
    yield "add/row-major-int32", c(T(X, "INT32", "ROW_MAJOR"), T(X, "INT32", "ROW_MAJOR"))
    yield "add/bfp8", c(T(X, "BFLOAT8_B"), T(X, "BFLOAT8_B"))
    yield "add/bf16-bfp8", c(T(X), T(X, "BFLOAT8_B"))
    yield "add/bfp4-bf16", c(T(X, "BFLOAT4_B"), T(X))
    yield "add/bf16-fp32", c(T(X), T(X, "FLOAT32"))
    yield "add/fp32-bf16", c(T(X, "FLOAT32"), T(X))
    yield "add/uint32", c(T(X, "UINT32"), T(X, "UINT32"))
    yield "add/uint16", c(T(X, "UINT16"), T(X, "UINT16"))
    yield "add/bf16-int32", c(T(X), T(X, "INT32"))
    yield "add/dtype-fp32", c(T(X), T(X), dtype=dt("FLOAT32"))
    yield "add/dtype-bfp8", c(T(X), T(X), dtype=dt("BFLOAT8_B"))
    yield "add/dtype-int32", c(T(X), T(X), dtype=dt("INT32"))
    yield "add/int32-silu-a", c(T(X, "INT32"), T(X, "INT32"), input_tensor_a_activations=acts("SILU"))
    yield "add/relu", c(T(X), T(X), activations=acts("RELU"))
    # preallocated output
    yield "add/output-tensor-fp32", c(T(X), T(X), output_tensor=T(X, "FLOAT32"))
    yield "add/output-tensor-rank-5", c(T(X), T(X), output_tensor=T([1, 1, 1, 32, 64]))
    # sharded inputs and outputs
    yield "add/height-sharded-plus-dram", c(T(TALL, m=HS), T(TALL))
    yield "add/dram-plus-height-sharded", c(T(TALL), T(TALL, m=HS))
    yield "add/l1-plus-height-sharded", c(T(TALL, m=L1), T(TALL, m=HS))
    yield "add/height-sharded-other-grid", c(T(TALL, m=HS), T(TALL, m=mem("HEIGHT_SHARDED", "L1", [(0, 1, 7, 1)],
                                                                          (32, 64))))
    yield "add/height-plus-width-sharded", c(T([1, 1, 256, 256], m=height((32, 256), 8)),
                                             T([1, 1, 256, 256], m=width((256, 32), 8)))
    yield "add/width-sharded", c(T([1, 1, 32, 256], m=width((32, 32), 8)), T([1, 1, 32, 256], m=width((32, 32), 8)))
    yield "add/block-sharded", c(T([1, 1, 128, 128], m=block((32, 32), 4, 4)),
                                 T([1, 1, 128, 128], m=block((32, 32), 4, 4)))
    yield "add/height-sharded-uneven", c(T([1, 1, 240, 64], m=HS), T([1, 1, 240, 64], m=HS))
    yield "add/height-sharded-dram", c(T([1, 1, 384, 64], m=mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64))),
                                       T([1, 1, 384, 64]))
    yield "add/height-sharded-bcast-row", c(T(TALL, m=HS), T([1, 1, 1, 64]))
    yield "add/height-sharded-bcast-batch", c(T([2, 1, 128, 64], m=HS), T([1, 1, 128, 64]))
    yield "add/height-sharded-grows", c(T([1, 1, 256, 64], m=HS), T([2, 1, 256, 64]))
    yield "add/height-sharded-scalar", c(T(TALL, m=HS), 1.0)
    yield "add/height-sharded-col-major", c(T(TALL, m=mem("HEIGHT_SHARDED", "L1", [(0, 0, 7, 0)], (32, 64),
                                                           "COL_MAJOR")), T(TALL, m=HS))
    yield "add/height-sharded-row-major", c(T(TALL, layout="ROW_MAJOR", m=HS), T(TALL, layout="ROW_MAJOR", m=HS))
    yield "add/height-sharded-to-dram", c(T(TALL, m=HS), T(TALL, m=HS), memory_config=DRAM)
    yield "add/height-sharded-to-width-no-spec", c(T(TALL, m=HS), T(TALL, m=HS),
                                                   memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "add/height-sharded-to-block-no-spec", c(T(TALL, m=HS), T(TALL, m=HS),
                                                   memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "add/height-sharded-other-spec", c(T(TALL, m=HS), T(TALL, m=HS), memory_config=height((64, 64), 4))
    yield "add/to-height-no-spec", c(T(TALL), T(TALL), memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "add/to-height-no-spec-small", c(T([1, 1, 64, 64]), T([1, 1, 64, 64]),
                                           memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "add/to-width-no-spec", c(T([1, 1, 64, 64]), T([1, 1, 64, 64]), memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "add/to-block-no-spec", c(T([1, 1, 256, 256]), T([1, 1, 256, 256]),
                                    memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "add/to-block", c(T([1, 1, 128, 128]), T([1, 1, 128, 128]), memory_config=block((32, 32), 4, 4))
    yield "add/to-height-too-narrow", c(T(TALL), T(TALL), memory_config=height((32, 32), 8))
    yield "add/to-height-no-spec-4096-rows", c(T([1, 1, 4096, 64]), T([1, 1, 4096, 64]),
                                               memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "add/to-height-no-spec-100-tiles", c(T([1, 1, 3200, 64]), T([1, 1, 3200, 64]),
                                               memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "add/to-height-no-spec-batch", c(T([2, 3, 64, 64]), T([2, 3, 64, 64]),
                                           memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "add/to-height-no-spec-row-major", c(T([1, 1, 300, 64], layout="ROW_MAJOR"),
                                               T([1, 1, 300, 64], layout="ROW_MAJOR"),
                                               memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "add/to-height-no-spec-dram", c(T(TALL), T(TALL), memory_config=mem("HEIGHT_SHARDED", "DRAM"))
    yield "add/to-width-no-spec-4096", c(T([1, 1, 32, 4096]), T([1, 1, 32, 4096]),
                                         memory_config=mem("WIDTH_SHARDED", "L1"))
    rm64 = T([1, 1, 64, 64], layout="ROW_MAJOR")
    yield "add/to-width-no-spec-row-major", c(rm64, rm64, memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "add/to-block-no-spec-320x96", c(T([1, 1, 320, 96]), T([1, 1, 320, 96]),
                                           memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "add/to-block-no-spec-512x32", c(T([1, 1, 512, 32]), T([1, 1, 512, 32]),
                                           memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "add/to-block-no-spec-row-major", c(rm64, rm64, memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "add/height-sharded-grows-3x", c(T(TALL, m=HS), T([3, 1, 256, 64]))
    yield "add/block-sharded-grows", c(T([1, 1, 128, 128], m=block((32, 32), 4, 4)), T([2, 1, 128, 128]))
    yield "add/dram-plus-height-sharded-grows", c(T([3, 1, 256, 64]), T(TALL, m=HS))
    yield "add/height-sharded-to-dram-height-no-spec", c(T(TALL, m=HS), T(TALL, m=HS),
                                                         memory_config=mem("HEIGHT_SHARDED", "DRAM"))
    yield "add/width-sharded-to-height-no-spec", c(T([1, 1, 32, 256], m=width((32, 32), 8)), T([1, 1, 32, 256]),
                                                   memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "add/dram-plus-height-sharded-to-width-no-spec", c(T(TALL), T(TALL, m=HS),
                                                             memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "add/dram-plus-height-sharded-to-dram", c(T(TALL), T(TALL, m=HS), memory_config=DRAM)
    yield "add/row-major-height-sharded", c(T(TALL, layout="ROW_MAJOR", m=HS), T(TALL))
    yield "add/output-tensor-height-sharded", c(T(TALL), T(TALL), output_tensor=T(TALL, m=HS))
    yield "add/output-tensor-l1-over-mem", c(T(X), T(X), output_tensor=T(X, m=L1), memory_config=DRAM)
    yield "add/output-tensor-row-major", c(T(X), T(X), output_tensor=T(X, layout="ROW_MAJOR"))
    yield "add/row-major-a-output-tensor", c(T(X, layout="ROW_MAJOR"), T(X), output_tensor=T(X))
    yield "add/output-tensor-bfp8", c(T(X), T(X), output_tensor=T(X, "BFLOAT8_B"))
    # which rule fires first
    yield "add/host-int32-plus-bf16", c(host(X, "INT32", "TILE"), T(X))
    yield "add/int32-bf16-bcast-w", c(T(X, "INT32"), T([1, 1, 32, 32]))
    yield "add/int32-bf16-bcast-batch", c(T([2, 1, 32, 64], "INT32"), T([3, 1, 32, 64]))
    yield "add/int32-bf16-output-wrong-shape", c(T(X, "INT32"), T(X), output_tensor=T([1, 1, 32, 32]))
    yield "add/bcast-batch-output-wrong-shape", c(T([2, 1, 32, 64]), T([3, 1, 32, 64]), output_tensor=T(X))
    yield "add/bcast-w-output-wrong-shape", c(T(X), T([1, 1, 32, 32]), output_tensor=T([1, 1, 64, 64]))
    yield "add/row-major-output-tensor-dtype-mismatch", c(T(X, layout="ROW_MAJOR"), T(X, layout="ROW_MAJOR"),
                                                          dtype=dt("FLOAT32"), output_tensor=T(X, layout="ROW_MAJOR"))
    yield "add/row-major-host-output-tensor", c(host(X), T(X, layout="ROW_MAJOR"),
                                                output_tensor=T(X, layout="ROW_MAJOR"))
    yield "add/uint8-int32", c(T(X, "UINT8"), T(X, "INT32"))
    yield "add/int32-uint8", c(T(X, "INT32"), T(X, "UINT8"))
    yield "add/rank7-bcast-b", c(T([1, 1, 1, 1, 1, 32, 64]), T([3, 1, 1, 1, 1, 32, 64]))
    yield "add/rank7-vs-rank4", c(T([2, 1, 1, 1, 1, 32, 64]), T([1, 1, 32, 64]))
    yield "add/uint32-scalar-minus-1", c(T(X, "UINT32"), -1)
    yield "add/uint32-scalar-fraction", c(T(X, "UINT32"), -1.5)
    yield "add/int32-scalar-too-big", c(T(X, "INT32"), 1e12)
    yield "add/uint16-scalar-fraction", c(T(X, "UINT16"), 2.5)
    yield "add/scalar-first", c(2.0, T(X, m=L1))
    yield "add/dtype-uint8", c(T(X), T(X), dtype=dt("UINT8"))
    yield "add/mixed-to-height-narrow", c(T(TALL, "INT32"), T(TALL), memory_config=height((32, 32), 8))


def silu() -> Iterator[tuple[str, dict]]:
    yield "silu/ok", call("silu", T(X))
    yield "silu/row-major", call("silu", T(X, layout="ROW_MAJOR"))
    yield "silu/fp32", call("silu", T(X, "FLOAT32"))
    yield "silu/bfp8", call("silu", T(X, "BFLOAT8_B"))
    yield "silu/bfp4", call("silu", T(X, "BFLOAT4_B"))
    yield "silu/int32", call("silu", T(X, "INT32"))
    yield "silu/uint32", call("silu", T(X, "UINT32"))
    yield "silu/uint16", call("silu", T(X, "UINT16"))
    yield "silu/int32-row-major", call("silu", T(X, "INT32", "ROW_MAJOR"))
    yield "silu/unaligned", call("silu", T([1, 1, 30, 50]))
    yield "silu/rank1", call("silu", T([64]))
    yield "silu/l1", call("silu", T(X, m=L1))
    yield "silu/to-l1", call("silu", T(X), memory_config=L1)
    yield "silu/height-sharded", call("silu", T(TALL, m=HS))
    yield "silu/height-sharded-to-dram", call("silu", T(TALL, m=HS), memory_config=DRAM)
    yield "silu/to-height-sharded", call("silu", T(TALL), memory_config=HS)
    yield "silu/to-height-no-spec", call("silu", T(TALL), memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "silu/height-sharded-to-height-no-spec", call("silu", T(TALL, m=HS),
                                                        memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "silu/height-sharded-to-width", call("silu", T([1, 1, 256, 256], m=height((32, 256), 8)),
                                               memory_config=width((256, 32), 8))
    yield "silu/block-sharded", call("silu", T([1, 1, 128, 128], m=block((32, 32), 4, 4)))
    yield "silu/width-sharded", call("silu", T([1, 1, 32, 256], m=width((32, 32), 8)))
    yield "silu/height-sharded-row-major", call("silu", T(TALL, layout="ROW_MAJOR", m=HS))
    yield "silu/output-tensor", call("silu", T(X), output_tensor=T(X))
    yield "silu/output-tensor-fp32", call("silu", T(X), output_tensor=T(X, "FLOAT32"))
    yield "silu/output-tensor-wrong-shape", call("silu", T(X), output_tensor=T([1, 1, 32, 32]))
    yield "silu/output-tensor-row-major", call("silu", T(X), output_tensor=T(X, layout="ROW_MAJOR"))
    yield "silu/output-tensor-ignores-mem", call("silu", T(X), output_tensor=T(X), memory_config=L1)
    yield "silu/output-tensor-int32", call("silu", T(X), output_tensor=T(X, "INT32"))
    yield "silu/output-tensor-bfp8", call("silu", T(X), output_tensor=T(X, "BFLOAT8_B"))
    yield "silu/output-tensor-height-sharded", call("silu", T(TALL), output_tensor=T(TALL, m=HS))
    yield "silu/int32-output-wrong-shape", call("silu", T(X, "INT32"), output_tensor=T([1, 1, 32, 32], "INT32"))
    yield "silu/int32-output-row-major", call("silu", T(X, "INT32"), output_tensor=T(X, "INT32", "ROW_MAJOR"))
    yield "silu/int32-output-fp32", call("silu", T(X, "INT32"), output_tensor=T(X, "FLOAT32"))
    yield "silu/output-wrong-shape-row-major", call("silu", T(X), output_tensor=T([1, 1, 32, 32], layout="ROW_MAJOR"))
    yield "silu/uint8", call("silu", T(X, "UINT8"))
    yield "silu/to-width-no-spec", call("silu", T([1, 1, 64, 64]), memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "silu/to-block-no-spec", call("silu", T([1, 1, 256, 256]), memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "silu/to-height-no-spec-row-major", call("silu", T(TALL, layout="ROW_MAJOR"),
                                                   memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "silu/height-sharded-to-width-no-spec", call("silu", T(TALL, m=HS), memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "silu/height-sharded-to-dram-height-no-spec", call("silu", T(TALL, m=HS),
                                                             memory_config=mem("HEIGHT_SHARDED", "DRAM"))
    yield "silu/height-sharded-to-l1", call("silu", T(TALL, m=HS), memory_config=L1)
    yield "silu/int32-to-height-narrow", call("silu", T(TALL, "INT32"), memory_config=height((32, 32), 8))


def softmax() -> Iterator[tuple[str, dict]]:
    yield "softmax/ok", call("softmax", T(X))
    yield "softmax/dim-2", call("softmax", T(X), -2)
    yield "softmax/dim1", call("softmax", T([1, 4, 32, 64]), 1)
    yield "softmax/dim0", call("softmax", T([2, 4, 32, 64]), 0)
    yield "softmax/dim4", call("softmax", T(X), 4)
    yield "softmax/dim-5", call("softmax", T(X), -5)
    yield "softmax/rank1", call("softmax", T([64]))
    yield "softmax/rank5", call("softmax", T([2, 2, 2, 32, 64]))
    yield "softmax/unaligned", call("softmax", T([1, 1, 30, 50]))
    yield "softmax/row-major", call("softmax", T(X, layout="ROW_MAJOR"))
    yield "softmax/row-major-dim-2", call("softmax", T(X, layout="ROW_MAJOR"), -2)
    yield "softmax/int32", call("softmax", T(X, "INT32"))
    yield "softmax/uint16", call("softmax", T(X, "UINT16"))
    yield "softmax/bfp4", call("softmax", T(X, "BFLOAT4_B"))
    yield "softmax/bfp8", call("softmax", T(X, "BFLOAT8_B"))
    yield "softmax/fp32", call("softmax", T(X, "FLOAT32"))
    yield "softmax/l1", call("softmax", T(X, m=L1))
    yield "softmax/to-l1", call("softmax", T(X), memory_config=L1)
    yield "softmax/height-sharded", call("softmax", T(TALL, m=HS))
    yield "softmax/height-sharded-dim-2", call("softmax", T(TALL, m=HS), -2)
    yield "softmax/width-sharded", call("softmax", T([1, 1, 32, 256], m=width((32, 32), 8)))
    yield "softmax/block-sharded", call("softmax", T([1, 1, 128, 128], m=block((32, 32), 4, 4)))
    yield "softmax/to-height-sharded", call("softmax", T(TALL), memory_config=HS)
    yield "softmax/height-sharded-to-dram", call("softmax", T(TALL, m=HS), memory_config=DRAM)
    yield "softmax/host", call("softmax", host(X, layout="TILE"))
    yield "softmax/row-major-rank2", call("softmax", T([32, 64], layout="ROW_MAJOR"))
    yield "softmax/row-major-rank3", call("softmax", T([2, 32, 64], layout="ROW_MAJOR"))
    yield "softmax/row-major-dim3", call("softmax", T(X, layout="ROW_MAJOR"), 3)
    yield "softmax/row-major-fp32", call("softmax", T(X, "FLOAT32", "ROW_MAJOR"))
    yield "softmax/row-major-int32", call("softmax", T(X, "INT32", "ROW_MAJOR"))
    yield "softmax/row-major-uint8", call("softmax", T(X, "UINT8", "ROW_MAJOR"))
    yield "softmax/row-major-int32-dim-2", call("softmax", T(X, "INT32", "ROW_MAJOR"), -2)
    yield "softmax/row-major-height-sharded", call("softmax", T(TALL, layout="ROW_MAJOR", m=HS))
    yield "softmax/row-major-unaligned", call("softmax", T([1, 1, 30, 50], layout="ROW_MAJOR"))
    yield "softmax/int32-dim4", call("softmax", T(X, "INT32"), 4)
    yield "softmax/rank1-dim-2", call("softmax", T([64]), -2)
    yield "softmax/rank1-dim0", call("softmax", T([64]), 0)
    yield "softmax/to-height-no-spec", call("softmax", T(TALL), memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "softmax/int32-to-height-narrow", call("softmax", T(TALL, "INT32"), memory_config=height((32, 32), 8))


def fill() -> Iterator[tuple[str, dict]]:
    op = "fill"
    yield "fill-op/ok", call(op, T(X), 1.0)
    yield "fill-op/bfp8", call(op, T(X, "BFLOAT8_B"), 0.0)
    yield "fill-op/bfp4", call(op, T(X, "BFLOAT4_B"), 0.0)
    yield "fill-op/fp32", call(op, T(X, "FLOAT32"), 0.5)
    yield "fill-op/int32", call(op, T(X, "INT32"), 3)
    yield "fill-op/uint32", call(op, T(X, "UINT32"), 3)
    yield "fill-op/uint16", call(op, T(X, "UINT16"), 3)
    yield "fill-op/uint8", call(op, T(X, "UINT8", "ROW_MAJOR"), 3)
    yield "fill-op/row-major", call(op, T(X, layout="ROW_MAJOR"), 1.0)
    yield "fill-op/unaligned", call(op, T([1, 1, 30, 50]), 1.0)
    yield "fill-op/l1", call(op, T(X, m=L1), 1.0)
    yield "fill-op/to-l1", call(op, T(X), 1.0, memory_config=L1)
    yield "fill-op/height-sharded", call(op, T(TALL, m=HS), 1.0)
    yield "fill-op/to-height-sharded", call(op, T(TALL), 1.0, memory_config=HS)
    yield "fill-op/width-sharded", call(op, T([1, 1, 32, 256], m=width((32, 32), 8)), 1.0)
    yield "fill-op/block-sharded", call(op, T([1, 1, 128, 128], m=block((32, 32), 4, 4)), 1.0)
    yield "fill-op/in-place", call(op, T([4, 1, 64, 32], "BFLOAT8_B"), 0.0,
                                   output_tensor=T([4, 1, 64, 32], "BFLOAT8_B"))
    yield "fill-op/output-tensor", call(op, T(X), 0.0, output_tensor=T(X))
    yield "fill-op/output-tensor-wrong-shape", call(op, T(X), 0.0, output_tensor=T([1, 1, 32, 32]))
    yield "fill-op/output-tensor-fp32", call(op, T(X), 0.0, output_tensor=T(X, "FLOAT32"))
    yield "fill-op/output-tensor-row-major", call(op, T(X), 0.0, output_tensor=T(X, layout="ROW_MAJOR"))
    yield "fill-op/output-tensor-over-mem", call(op, T(X), 1.0, output_tensor=T(X, m=L1), memory_config=DRAM)
    yield "fill-op/output-tensor-int32", call(op, T(X), 0.0, output_tensor=T(X, "INT32"))
    yield "fill-op/uint8-output-wrong-shape", call(op, T(X, "UINT8", "ROW_MAJOR"), 1,
                                                   output_tensor=T([1, 1, 32, 32], "UINT8", "ROW_MAJOR"))
    yield "fill-op/uint8-tile", call(op, T(X, "UINT8"), 1)
    yield "fill-op/int32-fraction", call(op, T(X, "INT32"), 2.5)
    yield "fill-op/to-width-no-spec", call(op, T([1, 1, 64, 64]), 1.0, memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "fill-op/uint8-to-height-narrow", call(op, T(TALL, "UINT8"), 1, memory_config=height((32, 32), 8))


def _ln_pc(gx: int = 8, gy: int = 1, sub: int = 4, bh: int = 1, bw: int = 4, inplace: bool = False,
           **kw: Any) -> dict:
    return obj("LayerNormShardedMultiCoreProgramConfig", compute_with_storage_grid_size=coord(gx, gy),
               subblock_w=sub, block_h=bh, block_w=bw, inplace=inplace, **kw)


def rms_norm() -> Iterator[tuple[str, dict]]:
    op = "rms_norm"
    x = T([1, 1, 32, 128])

    def rn(inp: dict = x, **kw: Any) -> dict:
        return call(op, inp, **{"epsilon": 1e-5, **kw})

    # interleaved input
    yield "rms-norm/ok", rn()
    yield "rms-norm/weight-rm", rn(weight=T([1, 1, 4, 32], layout="ROW_MAJOR"))
    yield "rms-norm/weight-rm-2d", rn(weight=T([4, 32], layout="ROW_MAJOR"))
    yield "rms-norm/weight-rm-fp32", rn(weight=T([1, 1, 4, 32], "FLOAT32", "ROW_MAJOR"))
    yield "rms-norm/weight-rm-flat", rn(weight=T([128], layout="ROW_MAJOR"))
    yield "rms-norm/weight-rm-short", rn(weight=T([2, 32], layout="ROW_MAJOR"))
    yield "rms-norm/weight-rm-uint32", rn(weight=T([4, 32], "UINT32", "ROW_MAJOR"))
    yield "rms-norm/weight-tile", rn(weight=T([128]))
    yield "rms-norm/weight-tile-32-rows", rn(weight=T([32, 128]))
    yield "rms-norm/weight-tile-64-rows", rn(weight=T([64, 128]))
    yield "rms-norm/weight-tile-narrow", rn(weight=T([64]))
    yield "rms-norm/weight-tile-uint32", rn(weight=T([128], "UINT32"))
    yield "rms-norm/weight-tile-bfp8", rn(weight=T([1, 1, 1, 128], "BFLOAT8_B"))
    yield "rms-norm/weight-l1", rn(weight=T([1, 1, 4, 32], layout="ROW_MAJOR", m=L1))
    yield "rms-norm/weight-host", rn(weight=host([1, 1, 4, 32]))
    yield "rms-norm/bias-tile", rn(weight=T([128]), bias=T([128]))
    yield "rms-norm/bias-tile-narrow", rn(weight=T([128]), bias=T([64]))
    yield "rms-norm/weight-tile-bias-rm", rn(weight=T([128]), bias=T([4, 32], layout="ROW_MAJOR"))
    yield "rms-norm/bias-rm-uint32", rn(weight=T([4, 32], layout="ROW_MAJOR"),
                                        bias=T([4, 32], "UINT32", "ROW_MAJOR"))
    yield "rms-norm/input-row-major", rn(T([1, 1, 32, 128], layout="ROW_MAJOR"))
    yield "rms-norm/input-int32", rn(T([1, 1, 32, 128], "INT32"))
    yield "rms-norm/input-bfp4", rn(T([1, 1, 32, 128], "BFLOAT4_B"))
    yield "rms-norm/input-bfp8", rn(T([1, 1, 32, 128], "BFLOAT8_B"))
    yield "rms-norm/input-fp32", rn(T([1, 1, 32, 128], "FLOAT32"))
    yield "rms-norm/residual", rn(residual_input_tensor=T([1, 1, 32, 128]))
    yield "rms-norm/residual-taller", rn(residual_input_tensor=T([1, 1, 64, 128]))
    yield "rms-norm/residual-30-rows", rn(residual_input_tensor=T([1, 1, 30, 128]))
    yield "rms-norm/residual-row-major", rn(residual_input_tensor=T([1, 1, 32, 128], layout="ROW_MAJOR"))
    yield "rms-norm/residual-bfp8", rn(residual_input_tensor=T([1, 1, 32, 128], "BFLOAT8_B"))
    yield "rms-norm/l1", rn(T([1, 1, 32, 128], m=L1))
    yield "rms-norm/to-l1", rn(memory_config=L1)
    yield "rms-norm/rank1", rn(T([128]))
    yield "rms-norm/rank3", rn(T([2, 32, 128]))
    yield "rms-norm/unaligned", rn(T([1, 1, 50, 100]), weight=T([100]))
    yield "rms-norm/unaligned-weight-rm", rn(T([1, 1, 32, 100]), weight=T([4, 32], layout="ROW_MAJOR"))
    yield "rms-norm/welford", rn(program_config=obj("LayerNormDefaultProgramConfig", use_welford=True))
    yield "rms-norm/legacy-reduction", rn(program_config=obj("LayerNormDefaultProgramConfig", legacy_reduction=True))
    yield "rms-norm/interleaved-sharded-config", rn(program_config=_ln_pc())
    yield "rms-norm/to-width-sharded", rn(T([1, 1, 32, 1024]), memory_config=width((32, 128), 8))
    yield "rms-norm/to-height-sharded", rn(T([1, 1, 256, 128]), memory_config=height((32, 128), 8))
    yield "rms-norm/to-width-no-spec", rn(T([1, 1, 32, 1024]), memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "rms-norm/l1-to-dram", rn(T([1, 1, 32, 128], m=L1), memory_config=DRAM)
    yield "rms-norm/zero-volume", rn(T([1, 1, 0, 128]))
    yield "rms-norm/bias-only", rn(bias=T([128]))
    yield "rms-norm/bias-only-rm", rn(bias=T([4, 32], layout="ROW_MAJOR"))
    yield "rms-norm/bias-rm-short", rn(weight=T([4, 32], layout="ROW_MAJOR"), bias=T([2, 32], layout="ROW_MAJOR"))
    yield "rms-norm/bias-tile-64-rows", rn(weight=T([128]), bias=T([64, 128]))
    yield "rms-norm/weight-tile-wider", rn(weight=T([160]))
    yield "rms-norm/weight-tile-padded-120", rn(T([1, 1, 32, 100]), weight=T([120]))
    yield "rms-norm/weight-tile-short-90", rn(T([1, 1, 32, 100]), weight=T([90]))
    yield "rms-norm/weight-tile-batch-2", rn(weight=T([2, 1, 1, 128]))
    yield "rms-norm/weight-rm-8x16", rn(weight=T([8, 16], layout="ROW_MAJOR"))
    yield "rms-norm/weight-rm-int32", rn(weight=T([4, 32], "INT32", "ROW_MAJOR"))
    yield "rms-norm/residual-fp32", rn(residual_input_tensor=T([1, 1, 32, 128], "FLOAT32"))
    yield "rms-norm/residual-l1", rn(residual_input_tensor=T([1, 1, 32, 128], m=L1))
    yield "rms-norm/residual-sharded", rn(T([1, 1, 32, 1024]), residual_input_tensor=T([1, 1, 32, 1024],
                                                                                    m=width((32, 128), 8)))
    # which rule fires first
    yield "rms-norm/row-major-int32", rn(T([1, 1, 32, 128], "INT32", "ROW_MAJOR"))
    yield "rms-norm/int32-weight-narrow", rn(T([1, 1, 32, 128], "INT32"), weight=T([64]))
    yield "rms-norm/weight-narrow-residual-row-major", rn(weight=T([64]), residual_input_tensor=T(
        [1, 1, 32, 128], layout="ROW_MAJOR"))
    yield "rms-norm/residual-row-major-taller", rn(residual_input_tensor=T([1, 1, 64, 128], layout="ROW_MAJOR"))
    yield "rms-norm/welford-weight-narrow", rn(weight=T([64]), program_config=obj("LayerNormDefaultProgramConfig",
                                                                                use_welford=True))
    yield "rms-norm/weight-tile-64x64", rn(weight=T([64, 64]))
    yield "rms-norm/weight-rm-flat-uint32", rn(weight=T([128], "UINT32", "ROW_MAJOR"))
    yield "rms-norm/weight-narrow-bias-rm", rn(weight=T([64]), bias=T([4, 32], layout="ROW_MAJOR"))
    yield "rms-norm/int32-to-height-narrow", rn(T([1, 1, 256, 128], "INT32"), memory_config=height((32, 64), 8))

    # sharded input: [1, 1, 32, 1024] width-sharded over 8 cores, 4 tiles each
    ws = width((32, 128), 8)
    xs = T([1, 1, 32, 1024], m=ws)

    def sn(inp: dict = xs, **kw: Any) -> dict:
        return call(op, inp, **{"epsilon": 1e-5, "memory_config": ws, "program_config": _ln_pc(), **kw})

    yield "rms-norm/sharded-ok", sn()
    yield "rms-norm/sharded-weight-rm", sn(weight=T([1, 1, 32, 32], layout="ROW_MAJOR"))
    yield "rms-norm/sharded-weight-tile", sn(weight=T([1024]))
    yield "rms-norm/sharded-no-config", call(op, xs, epsilon=1e-5)
    yield "rms-norm/sharded-default-config", sn(program_config=obj("LayerNormDefaultProgramConfig"))
    yield "rms-norm/sharded-grid-8x8", sn(program_config=_ln_pc(gy=8))
    yield "rms-norm/sharded-grid-4x1", sn(program_config=_ln_pc(gx=4))
    yield "rms-norm/sharded-block-w-2", sn(program_config=_ln_pc(sub=2, bw=2))
    yield "rms-norm/sharded-block-h-2", sn(program_config=_ln_pc(bh=2))
    yield "rms-norm/sharded-subblock-3", sn(program_config=_ln_pc(sub=3))
    yield "rms-norm/sharded-subblock-2", sn(program_config=_ln_pc(sub=2))
    yield "rms-norm/sharded-welford", sn(program_config=_ln_pc(use_welford=True))
    yield "rms-norm/sharded-inplace", sn(program_config=_ln_pc(inplace=True))
    yield "rms-norm/sharded-bfp8", sn(T([1, 1, 32, 1024], "BFLOAT8_B", m=ws))
    yield "rms-norm/sharded-to-dram", sn(memory_config=DRAM)
    yield "rms-norm/sharded-to-l1", sn(memory_config=L1)
    yield "rms-norm/sharded-to-height", sn(memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "rms-norm/sharded-to-width-no-spec", sn(memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "rms-norm/sharded-to-block-no-spec", sn(memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "rms-norm/sharded-to-dram-width", sn(memory_config=mem("WIDTH_SHARDED", "DRAM"))
    yield "rms-norm/sharded-other-spec", sn(memory_config=width((32, 256), 4))
    yield "rms-norm/sharded-no-memory-config", call(op, xs, epsilon=1e-5, program_config=_ln_pc())
    yield "rms-norm/height-sharded", sn(T([1, 1, 256, 128], m=height((32, 128), 8)),
                                        memory_config=height((32, 128), 8), program_config=_ln_pc(bw=4))
    yield "rms-norm/sharded-residual", sn(residual_input_tensor=T([1, 1, 32, 1024], m=ws))
    yield "rms-norm/sharded-residual-dram", sn(residual_input_tensor=T([1, 1, 32, 1024]))
    yield "rms-norm/sharded-residual-other-spec", sn(residual_input_tensor=T([1, 1, 32, 1024],
                                                                             m=width((32, 256), 4)))
    yield "rms-norm/sharded-64-rows", sn(T([1, 1, 64, 1024], m=width((64, 128), 8)),
                                         memory_config=width((64, 128), 8), program_config=_ln_pc(bh=2))
    yield "rms-norm/sharded-64-rows-block-h-1", sn(T([1, 1, 64, 1024], m=width((64, 128), 8)),
                                                   memory_config=width((64, 128), 8))
    yield "rms-norm/sharded-unaligned-width", sn(T([1, 1, 32, 1000], m=ws))
    yield "rms-norm/sharded-two-rows", sn(T([1, 1, 32, 1024], m=mem("WIDTH_SHARDED", "L1", [(0, 0, 3, 1)],
                                                                     (32, 128))),
                                          memory_config=mem("WIDTH_SHARDED", "L1", [(0, 0, 3, 1)], (32, 128)),
                                          program_config=_ln_pc(gx=4, gy=2))
    yield "rms-norm/sharded-rank2", sn(T([32, 1024], m=ws))
    yield "rms-norm/sharded-grid-9x1", sn(program_config=_ln_pc(gx=9))
    yield "rms-norm/sharded-grid-9x1-to-dram-width", sn(program_config=_ln_pc(gx=9),
                                                        memory_config=mem("WIDTH_SHARDED", "DRAM"))
    yield "rms-norm/sharded-grid-9x1-to-dram", sn(program_config=_ln_pc(gx=9), memory_config=DRAM)
    yield "rms-norm/sharded-grid-4x1-to-dram-width", sn(program_config=_ln_pc(gx=4),
                                                        memory_config=mem("WIDTH_SHARDED", "DRAM"))
    yield "rms-norm/sharded-grid-4x1-to-block", sn(program_config=_ln_pc(gx=4),
                                                   memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "rms-norm/sharded-grid-4x1-welford", sn(program_config=_ln_pc(gx=4, use_welford=True))
    yield "rms-norm/sharded-grid-4x1-residual-dram", sn(program_config=_ln_pc(gx=4),
                                                        residual_input_tensor=T([1, 1, 32, 1024]))
    yield "rms-norm/sharded-grid-9x1-welford", sn(program_config=_ln_pc(gx=9, use_welford=True))
    yield "rms-norm/sharded-grid-4x1-subblock-3", sn(program_config=_ln_pc(gx=4, sub=3))
    yield "rms-norm/sharded-grid-4x1-block-w-2", sn(program_config=_ln_pc(gx=4, sub=2, bw=2))
    yield "rms-norm/sharded-welford-to-dram-width", sn(program_config=_ln_pc(use_welford=True),
                                                       memory_config=mem("WIDTH_SHARDED", "DRAM"))
    yield "rms-norm/sharded-welford-to-dram", sn(program_config=_ln_pc(use_welford=True), memory_config=DRAM)
    yield "rms-norm/sharded-welford-block-w-2", sn(program_config=_ln_pc(sub=2, bw=2, use_welford=True))
    yield "rms-norm/sharded-welford-residual-other-spec", sn(program_config=_ln_pc(use_welford=True),
                                                             residual_input_tensor=T([1, 1, 32, 1024],
                                                                                     m=width((32, 256), 4)))
    yield "rms-norm/sharded-residual-dram-block-w-2", sn(residual_input_tensor=T([1, 1, 32, 1024]),
                                                         program_config=_ln_pc(sub=2, bw=2))
    yield "rms-norm/sharded-to-dram-residual-dram", sn(memory_config=DRAM, residual_input_tensor=T([1, 1, 32, 1024]))
    yield "rms-norm/sharded-to-dram-block-w-2", sn(memory_config=DRAM, program_config=_ln_pc(sub=2, bw=2))
    yield "rms-norm/sharded-to-dram-block", sn(memory_config=mem("BLOCK_SHARDED", "DRAM"))
    yield "rms-norm/sharded-to-dram-width-block-w-2", sn(memory_config=mem("WIDTH_SHARDED", "DRAM"),
                                                         program_config=_ln_pc(sub=2, bw=2))
    yield "rms-norm/sharded-subblock-2-block-w-3", sn(program_config=_ln_pc(sub=2, bw=3))
    yield "rms-norm/sharded-block-h-2-block-w-2", sn(program_config=_ln_pc(sub=2, bh=2, bw=2))
    yield "rms-norm/sharded-residual-bfp8", sn(residual_input_tensor=T([1, 1, 32, 1024], "BFLOAT8_B", m=ws))
    yield "rms-norm/sharded-residual-other-grid", sn(residual_input_tensor=T(
        [1, 1, 32, 1024], m=mem("WIDTH_SHARDED", "L1", [(0, 1, 7, 1)], (32, 128))))
    yield "rms-norm/sharded-residual-dram-sharded", sn(residual_input_tensor=T(
        [1, 1, 32, 1024], m=mem("WIDTH_SHARDED", "DRAM", [(0, 0, 7, 0)], (32, 128))))
    yield "rms-norm/sharded-inplace-other-spec", sn(program_config=_ln_pc(inplace=True),
                                                    memory_config=width((32, 256), 4))
    yield "rms-norm/sharded-inplace-to-dram", sn(program_config=_ln_pc(inplace=True), memory_config=DRAM)
    yield "rms-norm/sharded-inplace-no-memory-config", call(op, xs, epsilon=1e-5, program_config=_ln_pc(inplace=True))
    yield "rms-norm/sharded-to-height-residual-dram", sn(memory_config=mem("HEIGHT_SHARDED", "L1"),
                                                         residual_input_tensor=T([1, 1, 32, 1024]))
    yield "rms-norm/sharded-shard-padded-width", sn(T([1, 1, 32, 1024], m=width((32, 256), 8)))
    # 9 tiles in shards of 4 on 3 cores: block_w is K / cores rounded up (3), the shard 4 tiles wide
    yield "rms-norm/sharded-9-tiles-on-3-cores", sn(T([1, 1, 32, 288], m=width((32, 128), 3)),
                                                    memory_config=width((32, 128), 3),
                                                    program_config=_ln_pc(gx=3, sub=3, bw=3))
    cm_ws = mem("WIDTH_SHARDED", "L1", [(0, 0, 7, 0)], (32, 128), "COL_MAJOR")
    yield "rms-norm/sharded-col-major", sn(T([1, 1, 32, 1024], m=cm_ws), memory_config=cm_ws)
    yield "rms-norm/sharded-fp32", sn(T([1, 1, 32, 1024], "FLOAT32", m=ws))
    yield "rms-norm/sharded-int32", sn(T([1, 1, 32, 1024], "INT32", m=ws))
    yield "rms-norm/sharded-weight-tile-narrow", sn(weight=T([512]))
    yield "rms-norm/sharded-weight-sharded", sn(weight=T([1, 1, 32, 1024], m=ws))
    row1 = mem("WIDTH_SHARDED", "L1", [(0, 1, 7, 1)], (32, 128))
    yield "rms-norm/sharded-offset-grid", sn(T([1, 1, 32, 1024], m=row1), memory_config=row1)
    yield "rms-norm/sharded-offset-grid-no-config", call(op, T([1, 1, 32, 1024], m=row1), epsilon=1e-5)
    yield "rms-norm/sharded-to-other-grid", sn(memory_config=row1)
    yield "rms-norm/sharded-dram-input", call(op, T([1, 1, 32, 1536], m=mem("WIDTH_SHARDED", "DRAM", [(0, 0, 11, 0)],
                                                                              (32, 128))), epsilon=1e-5)
    yield "rms-norm/sharded-col-major-no-config", call(op, T([1, 1, 32, 1024], m=mem(
        "WIDTH_SHARDED", "L1", [(0, 0, 7, 0)], (32, 128), "COL_MAJOR")), epsilon=1e-5)
    yield "rms-norm/sharded-7-cores", call(op, T([1, 1, 32, 896], m=width((32, 128), 7)), epsilon=1e-5)
    yield "rms-norm/sharded-uneven-width", call(op, T([1, 1, 32, 960], m=ws), epsilon=1e-5)
    ws18 = mem("WIDTH_SHARDED", "L1", [(0, 0, 5, 2)], (32, 32))  # a decode residual of 576 on 6x3 cores
    yield "rms-norm/sharded-18-cores-grid-8x2", sn(T([1, 1, 32, 576], m=ws18), memory_config=ws18,
                                                   program_config=_ln_pc(gx=8, gy=2, sub=1, bw=1))
    two_rows = mem("WIDTH_SHARDED", "L1", [(0, 0, 3, 1)], (64, 128))
    yield "rms-norm/sharded-two-rows-64-rows", sn(T([1, 1, 64, 1024], m=two_rows), memory_config=two_rows,
                                                  program_config=_ln_pc(gx=4, gy=2, bh=2, bw=4))
    yield "rms-norm/sharded-two-rows-block-h-1", sn(T([1, 1, 64, 1024], m=two_rows), memory_config=two_rows,
                                                    program_config=_ln_pc(gx=4, gy=2, bh=1, bw=8))
    yield "rms-norm/sharded-two-rows-block-w-8", sn(T([1, 1, 64, 1024], m=two_rows), memory_config=two_rows,
                                                    program_config=_ln_pc(gx=4, gy=2, bh=2, bw=8))
    yield "rms-norm/sharded-decode-18-cores", sn(T([1, 1, 32, 576], m=ws18), memory_config=ws18,
                                                 weight=T([1, 1, 18, 32], layout="ROW_MAJOR"),
                                                 program_config=_ln_pc(gx=6, gy=3, sub=1, bw=1))
    # block sharded: [1, 1, 128, 1024] on 8 columns x 4 rows
    bs = block((32, 128), 8, 4)
    yield "rms-norm/block-sharded", sn(T([1, 1, 128, 1024], m=bs), memory_config=bs, program_config=_ln_pc(gy=4))
    yield "rms-norm/block-sharded-block-h-2", sn(T([1, 1, 128, 1024], m=bs), memory_config=bs,
                                                 program_config=_ln_pc(gy=4, bh=2))
    yield "rms-norm/block-sharded-block-w-8", sn(T([1, 1, 128, 1024], m=bs), memory_config=bs,
                                                 program_config=_ln_pc(gy=4, bw=8))
    bs44 = block((32, 256), 4, 4)
    yield "rms-norm/block-sharded-4x4", sn(T([1, 1, 128, 1024], m=bs44), memory_config=bs44,
                                           program_config=_ln_pc(gx=4, gy=4, bw=8))
    yield "rms-norm/block-sharded-no-config", call(op, T([1, 1, 128, 1024], m=bs), epsilon=1e-5)
    yield "rms-norm/block-sharded-too-many-rows", call(op, T([1, 1, 64, 1024], m=bs), epsilon=1e-5)
    yield "rms-norm/block-sharded-too-many-rows-and-cols", call(op, T([1, 1, 64, 512], m=bs), epsilon=1e-5)
    # a block grid starting at column 1 (the config's block_w counts its 4 columns)
    offset = mem("BLOCK_SHARDED", "L1", [(1, 0, 4, 1)], (32, 256))
    yield "rms-norm/block-sharded-offset", call(op, T([1, 1, 64, 1024], m=offset), epsilon=1e-5)
    yield "rms-norm/block-sharded-offset-block-w-7", sn(T([1, 1, 64, 1024], m=offset), memory_config=offset,
                                                        program_config=_ln_pc(gy=2, sub=7, bw=7))
    yield "rms-norm/block-sharded-block-h-2-block-w-8", sn(T([1, 1, 128, 1024], m=bs), memory_config=bs,
                                                           program_config=_ln_pc(gy=4, bh=2, bw=8))
    bs2 = block((64, 128), 8, 4)
    yield "rms-norm/block-sharded-64-rows", sn(T([1, 1, 256, 1024], m=bs2), memory_config=bs2,
                                               program_config=_ln_pc(gy=4, bh=2))
    yield "rms-norm/block-sharded-64-rows-block-h-1", sn(T([1, 1, 256, 1024], m=bs2), memory_config=bs2,
                                                         program_config=_ln_pc(gy=4, bh=1))
    yield "rms-norm/block-sharded-uneven", call(op, T([1, 1, 96, 1024], m=block((64, 128), 8, 2)), epsilon=1e-5)
    cm = mem("BLOCK_SHARDED", "L1", [(0, 0, 3, 3)], (32, 256), "COL_MAJOR")
    yield "rms-norm/block-sharded-col-major-block-w-4", sn(T([1, 1, 128, 1024], m=cm), memory_config=cm,
                                                           program_config=_ln_pc(gx=4, gy=4, bw=4))
    yield "rms-norm/block-sharded-col-major-block-h-2", sn(T([1, 1, 128, 1024], m=cm), memory_config=cm,
                                                           program_config=_ln_pc(gx=4, gy=4, bw=8, bh=2))
    cm84 = mem("BLOCK_SHARDED", "L1", [(0, 0, 7, 3)], (32, 128), "COL_MAJOR")
    yield "rms-norm/block-sharded-col-major-8x4", sn(T([1, 1, 256, 512], m=cm84), memory_config=cm84,
                                                     program_config=_ln_pc(gx=8, gy=4, bw=4))
    yield "rms-norm/block-sharded-col-major-no-config", call(op, T([1, 1, 256, 512], m=cm84), epsilon=1e-5)
    yield "rms-norm/block-sharded-col-major", sn(
        T([1, 1, 128, 1024], m=mem("BLOCK_SHARDED", "L1", [(0, 0, 3, 3)], (32, 256), "COL_MAJOR")),
        memory_config=mem("BLOCK_SHARDED", "L1", [(0, 0, 3, 3)], (32, 256), "COL_MAJOR"),
        program_config=_ln_pc(gx=4, gy=4, bw=8))


def embedding() -> Iterator[tuple[str, dict]]:
    op = "embedding"
    ids = T([1, 32], "UINT32", "ROW_MAJOR")
    w = T([1000, 128], layout="ROW_MAJOR")

    def emb(i: dict = ids, wt: dict = w, **kw: Any) -> dict:
        return call(op, i, wt, **kw)

    yield "embedding/ok", emb()
    yield "embedding/layout-tile", emb(layout=lay("TILE"))
    yield "embedding/weight-tile", emb(wt=T([1000, 128]))
    yield "embedding/weight-tile-to-row-major", emb(wt=T([1000, 128]), layout=lay("ROW_MAJOR"))
    yield "embedding/weight-bfp8", emb(wt=T([1000, 128], "BFLOAT8_B"))
    yield "embedding/weight-fp32", emb(wt=T([1000, 128], "FLOAT32", "ROW_MAJOR"))
    yield "embedding/weight-fp32-tile", emb(wt=T([1000, 128], "FLOAT32"))
    yield "embedding/weight-uint32", emb(wt=T([1000, 128], "UINT32", "ROW_MAJOR"))
    yield "embedding/weight-4d", emb(wt=T([1, 1, 1000, 128], layout="ROW_MAJOR"))
    yield "embedding/weight-3d-batch-2", emb(wt=T([2, 1000, 128], layout="ROW_MAJOR"))
    yield "embedding/weight-width-100", emb(wt=T([1000, 100], layout="ROW_MAJOR"))
    yield "embedding/weight-width-100-tile", emb(wt=T([1000, 100], layout="ROW_MAJOR"), layout=lay("TILE"))
    yield "embedding/ids-rank1", emb(T([32], "UINT32", "ROW_MAJOR"))
    yield "embedding/ids-rank3", emb(T([2, 3, 32], "UINT32", "ROW_MAJOR"))
    yield "embedding/ids-rank4", emb(T([1, 1, 1, 128], "UINT32", "ROW_MAJOR"), layout=lay("TILE"))
    yield "embedding/ids-len-7-tile", emb(T([2, 7], "UINT32", "ROW_MAJOR"), layout=lay("TILE"))
    yield "embedding/ids-bf16", emb(T([1, 32], "BFLOAT16", "ROW_MAJOR"))
    yield "embedding/ids-tile", emb(T([1, 32], "UINT32"))
    yield "embedding/ids-int32", emb(T([1, 32], "INT32", "ROW_MAJOR"))
    yield "embedding/ids-uint16", emb(T([1, 32], "UINT16", "ROW_MAJOR"))
    yield "embedding/dtype-bfp8-tile", emb(layout=lay("TILE"), dtype=dt("BFLOAT8_B"))
    yield "embedding/dtype-bfp8-row-major", emb(dtype=dt("BFLOAT8_B"))
    yield "embedding/dtype-fp32-row-major", emb(dtype=dt("FLOAT32"))
    yield "embedding/dtype-fp32-len-7", emb(T([1, 7], "UINT32", "ROW_MAJOR"), dtype=dt("FLOAT32"))
    yield "embedding/to-l1", emb(memory_config=L1)
    yield "embedding/ids-l1", emb(T([1, 32], "UINT32", "ROW_MAJOR", L1))
    yield "embedding/ids-sharded", emb(T([1, 64], "UINT32", "ROW_MAJOR", height((1, 64), 1)), memory_config=DRAM)
    yield "embedding/ids-sharded-default-mem", emb(T([1, 64], "UINT32", "ROW_MAJOR", height((1, 64), 1)))
    yield "embedding/weight-sharded", emb(wt=T([1024, 128], layout="ROW_MAJOR", m=height((128, 128), 8)))
    yield "embedding/to-height-sharded", emb(T([1, 64], "UINT32", "ROW_MAJOR"), memory_config=height((32, 128), 2))
    yield "embedding/to-height-sharded-tile", emb(T([1, 64], "UINT32", "ROW_MAJOR"), layout=lay("TILE"),
                                                  memory_config=height((32, 128), 2))
    yield "embedding/to-width-sharded", emb(T([1, 64], "UINT32", "ROW_MAJOR"), memory_config=width((64, 64), 2))
    yield "embedding/to-width-sharded-tile", emb(T([1, 64], "UINT32", "ROW_MAJOR"), layout=lay("TILE"),
                                                 memory_config=width((64, 64), 2))
    yield "embedding/padding-idx", emb(padding_idx=0)
    yield "embedding/binary-2-rows", emb(wt=T([2, 128], layout="ROW_MAJOR"),
                                         embeddings_type=enum("EmbeddingsType.BINARY"))
    yield "embedding/binary-1000-rows", emb(embeddings_type=enum("EmbeddingsType.BINARY"))
    yield "embedding/padded-no-pad-token", emb(embeddings_type=enum("EmbeddingsType.PADDED"))
    yield "embedding/output-tensor", emb(output_tensor=T([1, 32, 128], layout="ROW_MAJOR"))
    yield "embedding/host-ids", emb(host([1, 32], "UINT32"))
    yield "embedding/ids-int32-weight-fp32", emb(T([1, 32], "INT32", "ROW_MAJOR"),
                                                 T([1000, 128], "FLOAT32", "ROW_MAJOR"))
    yield "embedding/ids-sharded-weight-sharded", emb(T([1, 64], "UINT32", "ROW_MAJOR", height((1, 64), 1)),
                                                      T([1024, 128], layout="ROW_MAJOR", m=height((128, 128), 8)),
                                                      memory_config=DRAM)
    yield "embedding/ids-sharded-int32", emb(T([1, 64], "INT32", "ROW_MAJOR", height((1, 64), 1)), memory_config=DRAM)
    yield "embedding/weight-3d-fp32", emb(wt=T([2, 1000, 128], "FLOAT32", "ROW_MAJOR"))
    yield "embedding/weight-3d-sharded", emb(wt=T([2, 1024, 128], layout="ROW_MAJOR", m=height((256, 128), 8)))
    yield "embedding/dtype-row-major-ids-int32", emb(T([1, 32], "INT32", "ROW_MAJOR"), dtype=dt("BFLOAT8_B"))
    yield "embedding/binary-fp32", emb(wt=T([1000, 128], "FLOAT32", "ROW_MAJOR"),
                                       embeddings_type=enum("EmbeddingsType.BINARY"))
    yield "embedding/binary-3d", emb(wt=T([2, 1000, 128], layout="ROW_MAJOR"),
                                     embeddings_type=enum("EmbeddingsType.BINARY"))
    yield "embedding/binary-padding-idx", emb(wt=T([2, 128], layout="ROW_MAJOR"), padding_idx=0,
                                              embeddings_type=enum("EmbeddingsType.BINARY"))
    ids64 = T([1, 64], "UINT32", "ROW_MAJOR")
    yield "embedding/to-height-sharded-dram", emb(ids64, memory_config=mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 1, 0)],
                                                                           (32, 128)))
    yield "embedding/to-height-sharded-16-rows", emb(ids64, memory_config=height((16, 128), 4))
    yield "embedding/to-height-sharded-16-rows-tile", emb(T([1, 64], "UINT32", "ROW_MAJOR"), layout=lay("TILE"),
                                                          memory_config=height((16, 128), 4))
    yield "embedding/to-height-no-spec", emb(T([1, 64], "UINT32", "ROW_MAJOR"), memory_config=mem("HEIGHT_SHARDED",
                                             "L1"))
    yield "embedding/to-block-sharded", emb(T([1, 64], "UINT32", "ROW_MAJOR"), memory_config=block((32, 64), 2, 2))
    yield "embedding/to-block-sharded-tile", emb(T([1, 64], "UINT32", "ROW_MAJOR"), layout=lay("TILE"),
                                                 memory_config=block((32, 64), 2, 2))
    yield "embedding/to-height-sharded-48-ids", emb(T([1, 48], "UINT32", "ROW_MAJOR"),
                                                    memory_config=height((32, 128), 2))
    yield "embedding/dtype-bfp8-len-7-tile", emb(T([1, 7], "UINT32", "ROW_MAJOR"), layout=lay("TILE"),
                                                 dtype=dt("BFLOAT8_B"))
    yield "embedding/dtype-fp32-weight-tile", emb(wt=T([1000, 128]), dtype=dt("FLOAT32"))
    yield "embedding/dtype-bf16-row-major", emb(dtype=dt("BFLOAT16"))
    yield "embedding/weight-bfp8-dtype-bfp8", emb(wt=T([1000, 128], "BFLOAT8_B"), dtype=dt("BFLOAT8_B"))
    yield "embedding/ids-rank4-2x2x2", emb(T([2, 2, 2, 32], "UINT32", "ROW_MAJOR"))
    yield "embedding/ids-tile-2x7", emb(T([2, 7], "UINT32"))
    yield "embedding/weight-l1", emb(wt=T([1000, 128], layout="ROW_MAJOR", m=L1))
    yield "embedding/weight-rank1", emb(wt=T([128], layout="ROW_MAJOR"))
    yield "embedding/weight-4d-batch-2", emb(wt=T([2, 1, 1000, 128], layout="ROW_MAJOR"))
    yield "embedding/weight-tile-3d", emb(wt=T([2, 1000, 128]))
    yield "embedding/weight-tile-999-rows", emb(wt=T([999, 128]))
    yield "embedding/ids-int32-to-height-narrow", emb(T([1, 64], "INT32", "ROW_MAJOR"),
                                                      memory_config=height((32, 64), 2))


def argmax() -> Iterator[tuple[str, dict]]:
    op = "argmax"
    rm = T(X, layout="ROW_MAJOR")
    yield "argmax/ok", call(op, rm, dim=-1)
    yield "argmax/dim-none", call(op, rm)
    yield "argmax/keepdim", call(op, rm, dim=-1, keepdim=True)
    yield "argmax/dim-none-keepdim", call(op, rm, keepdim=True)
    yield "argmax/tile", call(op, T(X), dim=-1)
    yield "argmax/tile-dim-none", call(op, T(X))
    yield "argmax/tile-dim-2", call(op, T(X), dim=-2)
    yield "argmax/tile-keepdim", call(op, T(X), dim=-1, keepdim=True)
    yield "argmax/tile-dim1", call(op, T([2, 3, 32, 64]), dim=1)
    yield "argmax/row-major-dim-2", call(op, rm, dim=-2)
    yield "argmax/row-major-dim0", call(op, T([2, 3, 32, 64], layout="ROW_MAJOR"), dim=0)
    yield "argmax/int32", call(op, T(X, "INT32", "ROW_MAJOR"), dim=-1)
    yield "argmax/uint32", call(op, T(X, "UINT32", "ROW_MAJOR"), dim=-1)
    yield "argmax/uint16", call(op, T(X, "UINT16", "ROW_MAJOR"), dim=-1)
    yield "argmax/fp32", call(op, T(X, "FLOAT32", "ROW_MAJOR"), dim=-1)
    yield "argmax/uint8", call(op, T(X, "UINT8", "ROW_MAJOR"), dim=-1)
    yield "argmax/int32-dim0", call(op, T([2, 3, 32, 64], "INT32", "ROW_MAJOR"), dim=0)
    yield "argmax/tile-int32", call(op, T(X, "INT32"), dim=-1)
    yield "argmax/tile-bfp8", call(op, T(X, "BFLOAT8_B"), dim=-1)
    yield "argmax/tile-fp32", call(op, T(X, "FLOAT32"), dim=-1)
    yield "argmax/dim4", call(op, rm, dim=4)
    yield "argmax/dim-5", call(op, rm, dim=-5)
    yield "argmax/rank1", call(op, T([64], layout="ROW_MAJOR"), dim=-1)
    yield "argmax/rank2", call(op, T([32, 64], layout="ROW_MAJOR"), dim=-1)
    yield "argmax/rank5", call(op, T([2, 1, 2, 32, 64], layout="ROW_MAJOR"), dim=-1)
    yield "argmax/unaligned", call(op, T([1, 1, 7, 50], layout="ROW_MAJOR"), dim=-1)
    yield "argmax/tile-unaligned", call(op, T([1, 1, 30, 50]), dim=-1)
    yield "argmax/decode-logits", call(op, T([1, 1, 32, 49152], layout="ROW_MAJOR"), dim=3, keepdim=True)
    yield "argmax/l1", call(op, T(X, layout="ROW_MAJOR", m=L1), dim=-1)
    yield "argmax/to-l1", call(op, rm, dim=-1, memory_config=L1)
    yield "argmax/height-sharded", call(op, T([1, 1, 8, 256], layout="ROW_MAJOR", m=height((1, 256), 8)), dim=-1)
    yield "argmax/to-height-sharded", call(op, T([1, 1, 8, 256], layout="ROW_MAJOR"), dim=-1,
                                           memory_config=height((1, 1), 8))
    yield "argmax/output-tensor", call(op, rm, dim=-1, output_tensor=T([1, 1, 32], "UINT32", "ROW_MAJOR"))
    yield "argmax/output-tensor-int32", call(op, rm, dim=-1, output_tensor=T([1, 1, 32], "INT32", "ROW_MAJOR"))
    yield "argmax/output-tensor-wrong-shape", call(op, rm, dim=-1, output_tensor=T([1, 1, 64], "UINT32", "ROW_MAJOR"))
    yield "argmax/output-tensor-tile", call(op, rm, dim=-1, output_tensor=T([1, 1, 32], "UINT32"))
    yield "argmax/output-tensor-l1", call(op, rm, dim=-1, output_tensor=T([1, 1, 32], "UINT32", "ROW_MAJOR", L1))
    yield "argmax/output-tensor-sharded", call(op, T([1, 1, 8, 256], layout="ROW_MAJOR"), dim=-1,
                                               output_tensor=T([1, 1, 8], "UINT32", "ROW_MAJOR", height((1, 8), 1)))
    yield "argmax/to-height-sharded-fits", call(op, T([1, 1, 8, 256], layout="ROW_MAJOR"), dim=-1,
                                                memory_config=height((1, 8), 1))
    yield "argmax/to-width-sharded-fits", call(op, T([1, 1, 8, 256], layout="ROW_MAJOR"), dim=-1,
                                               memory_config=width((1, 8), 1))
    yield "argmax/tile-height-sharded", call(op, T(TALL, m=HS), dim=-1)
    yield "argmax/height-sharded-dim-none", call(op, T([1, 1, 8, 256], layout="ROW_MAJOR", m=height((1, 256), 8)))
    yield "argmax/height-sharded-uint8", call(op, T([1, 1, 8, 256], "UINT8", "ROW_MAJOR", m=height((1, 256), 8)),
                                              dim=-1)
    yield "argmax/tile-int32-dim-none", call(op, T(X, "INT32"))
    yield "argmax/tile-bfp8-dim4", call(op, T(X, "BFLOAT8_B"), dim=4)
    yield "argmax/uint8-dim0", call(op, T(X, "UINT8", "ROW_MAJOR"), dim=0)
    yield "argmax/int32-dim0-output-int32", call(op, T(X, "INT32", "ROW_MAJOR"), dim=0,
                                                 output_tensor=T([1, 32, 64], "INT32", "ROW_MAJOR"))
    yield "argmax/uint8-output-int32", call(op, T(X, "UINT8", "ROW_MAJOR"), dim=-1,
                                            output_tensor=T([1, 1, 32], "INT32", "ROW_MAJOR"))
    yield "argmax/uint16-dim-2", call(op, T(X, "UINT16", "ROW_MAJOR"), dim=-2)
    yield "argmax/int32-dim-none", call(op, T(X, "INT32", "ROW_MAJOR"))
    yield "argmax/tile-dim-3", call(op, T([2, 3, 32, 64]), dim=-3)
    yield "argmax/tile-rank2-dim0", call(op, T([32, 64]), dim=0)
    yield "argmax/tile-rank1", call(op, T([64]), dim=0)
    yield "argmax/tile-rank5-dim0", call(op, T([2, 1, 2, 32, 64]), dim=0)
    yield "argmax/row-major-dim-2-keepdim", call(op, rm, dim=-2, keepdim=True)
    yield "argmax/row-major-dim0-keepdim", call(op, T([2, 3, 32, 64], layout="ROW_MAJOR"), dim=0, keepdim=True)
    yield "argmax/sub-core-grids", call(op, rm, dim=-1, sub_core_grids=crs((0, 0, 1, 0)))
    yield "argmax/sub-core-grids-3-ranges", call(op, rm, dim=-1, sub_core_grids=crs((0, 0, 0, 0), (2, 0, 2, 0),
                                                                                    (4, 0, 4, 0)))
    yield "argmax/secondary-dm", call(op, rm, dim=-1, enable_secondary_dm=True)
    yield "argmax/secondary-dm-dim-2", call(op, rm, dim=-2, enable_secondary_dm=True)
    yield "argmax/secondary-dm-tile", call(op, T(X), dim=-1, enable_secondary_dm=True)


def topk() -> Iterator[tuple[str, dict]]:
    op = "topk"
    yield "topk/ok", call(op, T(X), 8)
    yield "topk/k-64", call(op, T(X), 64)
    yield "topk/k-65", call(op, T(X), 65)
    yield "topk/k-1", call(op, T(X), 1)
    yield "topk/unaligned", call(op, T([1, 1, 30, 50]), 5)
    yield "topk/dim-2", call(op, T(X), 5, -2)
    yield "topk/dim1", call(op, T([1, 8, 32, 32]), 5, 1)
    yield "topk/smallest", call(op, T(X), 5, -1, False)
    yield "topk/unsorted", call(op, T(X), 5, -1, True, False)
    yield "topk/fp32", call(op, T(X, "FLOAT32"), 8)
    yield "topk/bfp8", call(op, T(X, "BFLOAT8_B"), 8)
    yield "topk/int32", call(op, T(X, "INT32"), 8)
    yield "topk/uint16", call(op, T(X, "UINT16"), 8)
    yield "topk/row-major", call(op, T(X, layout="ROW_MAJOR"), 8)
    yield "topk/l1", call(op, T(X, m=L1), 8)
    yield "topk/to-l1", call(op, T(X), 8, memory_config=L1)
    yield "topk/to-height-sharded", call(op, T(X), 8, memory_config=height((32, 32), 1))
    yield "topk/height-sharded", call(op, T(TALL, m=HS), 8)
    yield "topk/wide-70000", call(op, T([1, 1, 32, 70000]), 8)
    yield "topk/wide-8192", call(op, T([1, 1, 32, 8192]), 32)
    yield "topk/rank2", call(op, T([32, 64]), 8)
    yield "topk/rank1", call(op, T([64]), 8)
    yield "topk/stable", call(op, T(X), 8, stable=True)
    yield "topk/indices-uint32", call(op, T(X), 8, indices_tensor=T(X, "UINT32"))
    yield "topk/indices-bf16", call(op, T(X), 8, indices_tensor=T(X))
    yield "topk/indices-stable", call(op, T(X), 8, stable=True, indices_tensor=T(X, "UINT32"))
    yield "topk/indices-int32", call(op, T(X), 8, indices_tensor=T(X, "INT32"))
    yield "topk/indices-wrong-shape", call(op, T(X), 8, indices_tensor=T([1, 1, 32, 32], "UINT32"))
    yield "topk/indices-uint16-fp32", call(op, T(X, "FLOAT32"), 8, indices_tensor=T(X, "UINT16"))
    yield "topk/indices-row-major", call(op, T(X), 8, indices_tensor=T(X, "UINT32", "ROW_MAJOR"))
    yield "topk/indices-uint32-fp32", call(op, T(X, "FLOAT32"), 8, indices_tensor=T(X, "UINT32"))
    yield "topk/output-indices-wrong-shape", call(op, T(X), 8, output_tensor={"t": "tuple", "v": [
        T([1, 1, 32, 8]), T([1, 1, 32, 16], "UINT16")]})
    yield "topk/int32-to-height-narrow", call(op, T(X, "INT32"), 8, memory_config=height((32, 16), 1))
    pair = {"t": "tuple", "v": [T([1, 1, 32, 8]), T([1, 1, 32, 8], "UINT16")]}
    yield "topk/output-tensor", call(op, T(X), 8, output_tensor=pair)
    yield "topk/output-tensor-wrong-shape", call(op, T(X), 8, output_tensor={"t": "tuple", "v": [
        T([1, 1, 32, 16]), T([1, 1, 32, 16], "UINT16")]})
    yield "topk/output-tensor-row-major", call(op, T(X), 8, output_tensor={"t": "tuple", "v": [
        T([1, 1, 32, 8], layout="ROW_MAJOR"), T([1, 1, 32, 8], "UINT16", "ROW_MAJOR")]})
    yield "topk/k-0", call(op, T(X), 0)
    yield "topk/dim-2-k-33", call(op, T(X), 33, -2)
    yield "topk/int32-k-65", call(op, T(X, "INT32"), 65)
    yield "topk/row-major-int32", call(op, T(X, "INT32", "ROW_MAJOR"), 8)
    yield "topk/uint32", call(op, T(X, "UINT32"), 8)
    yield "topk/bfp4", call(op, T(X, "BFLOAT4_B"), 8)
    yield "topk/height-sharded-to-dram", call(op, T(TALL, m=HS), 8, memory_config=DRAM)
    yield "topk/height-sharded-int32-to-dram", call(op, T(TALL, "INT32", m=HS), 8, memory_config=DRAM)
    yield "topk/int32-to-height-sharded", call(op, T(X, "INT32"), 8, memory_config=height((32, 32), 1))
    yield "topk/wide-65536", call(op, T([1, 1, 32, 65536]), 8)
    yield "topk/wide-65537", call(op, T([1, 1, 32, 65537]), 8)
    yield "topk/tall-70000-dim-2", call(op, T([1, 1, 70000, 32]), 8, -2)
    yield "topk/k-100", call(op, T([1, 1, 32, 128]), 100)
    yield "topk/dim4", call(op, T(X), 8, 4)
    yield "topk/dim-5", call(op, T(X), 8, -5)
    yield "topk/sub-core-grids", call(op, T(X), 8, sub_core_grids=crs((0, 0, 1, 0)))
    yield "topk/rank3-dim0", call(op, T([4, 32, 64]), 2, 0)


def plus_one() -> Iterator[tuple[str, dict]]:
    op = "plus_one"
    ids = T([32], "INT32", "ROW_MAJOR")
    yield "plus-one/ok", call(op, ids)
    yield "plus-one/uint32", call(op, T([32], "UINT32", "ROW_MAJOR"))
    yield "plus-one/2d", call(op, T([1, 32], "INT32", "ROW_MAJOR"))
    yield "plus-one/rank4", call(op, T([2, 2, 2, 8], "INT32", "ROW_MAJOR"))
    yield "plus-one/rank5", call(op, T([1, 2, 2, 2, 8], "INT32", "ROW_MAJOR"))
    yield "plus-one/bf16", call(op, T([32], "BFLOAT16", "ROW_MAJOR"))
    yield "plus-one/uint16", call(op, T([32], "UINT16", "ROW_MAJOR"))
    yield "plus-one/tile", call(op, T([32], "INT32"))
    yield "plus-one/width-7", call(op, T([7], "INT32", "ROW_MAJOR"))
    yield "plus-one/l1", call(op, T([32], "INT32", "ROW_MAJOR", L1))
    yield "plus-one/skip-negative", call(op, ids, skip_negative_entries=True)
    yield "plus-one/sub-core-grids", call(op, ids, crs((0, 0, 0, 0)))
    yield "plus-one/height-sharded", call(op, T([8, 32], "INT32", "ROW_MAJOR", height((1, 32), 8)))
    yield "plus-one/width-sharded", call(op, T([1, 64], "INT32", "ROW_MAJOR", width((1, 32), 2)))
    yield "plus-one/dram-sharded", call(op, T([8, 32], "INT32", "ROW_MAJOR",
                                              mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 7, 0)], (1, 32))))
    yield "plus-one/host", call(op, host([32], "INT32"))
    yield "plus-one/rank5-bf16", call(op, T([1, 2, 2, 2, 8], "BFLOAT16", "ROW_MAJOR"))
    yield "plus-one/tile-bf16", call(op, T([32], "BFLOAT16"))
    yield "plus-one/rank5-tile", call(op, T([1, 2, 2, 2, 32], "INT32"))
    yield "plus-one/uint8", call(op, T([32], "UINT8", "ROW_MAJOR"))
    yield "plus-one/rank3", call(op, T([2, 4, 8], "INT32", "ROW_MAJOR"))
    yield "plus-one/height-sharded-2-rows", call(op, T([8, 32], "INT32", "ROW_MAJOR", height((2, 32), 4)))
    yield "plus-one/height-sharded-narrow", call(op, T([8, 8], "INT32", "ROW_MAJOR", height((1, 8), 8)))
    yield "plus-one/height-sharded-other-sub-core-grids", call(op, T([8, 32], "INT32", "ROW_MAJOR", height((1, 32), 8)),
                                                                crs((0, 1, 7, 1)))
    yield "plus-one/width-sharded-256", call(op, T([1, 256], "INT32", "ROW_MAJOR", width((1, 128), 2)))
    yield "plus-one/block-sharded", call(op, T([8, 64], "INT32", "ROW_MAJOR", block((4, 32), 2, 2)))
    yield "plus-one/sub-core-grids-2", call(op, ids, crs((0, 0, 1, 0)))
    yield "plus-one/sub-core-grids-off-grid", call(op, ids, crs((8, 8, 8, 8)))
    yield "plus-one/skip-negative-uint32", call(op, T([32], "UINT32", "ROW_MAJOR"), skip_negative_entries=True)


def scale_mask_softmax() -> Iterator[tuple[str, dict]]:
    """The attention softmaxes (one SoftmaxDeviceOperation): scale_mask_softmax_in_place on interleaved inputs with a
    [batch, 1, 1, W] mask, and with a SoftmaxShardedMultiCoreProgramConfig on a height-sharded input (2 x 2 x 64 x 64
    over a 2 x 2 grid: one 64 x 64 shard per core); scale_mask_softmax and softmax_in_place beside them."""
    op = "scale_mask_softmax_in_place"
    x, mask = [2, 2, 64, 64], T([2, 1, 1, 64])

    def shard(**over: Any) -> dict:
        f = {"compute_with_storage_grid_size": coord(2, 2), "subblock_w": 2, "block_h": 2, "block_w": 2}
        f.update(over)
        return obj("SoftmaxShardedMultiCoreProgramConfig", **f)

    hs = mem("HEIGHT_SHARDED", "L1", [(0, 0, 1, 1)], (64, 64))
    row4 = height((64, 64), 4)  # the same four shards on a 4 x 1 grid
    yield "sms-in-place/ok", call(op, T(x), 0.5, mask)
    yield "sms-in-place/no-mask", call(op, T(x))
    yield "sms-in-place/row-major", call(op, T(x, layout="ROW_MAJOR"), 0.5, mask)
    yield "sms-in-place/int32", call(op, T(x, "INT32"), 0.5, mask)
    yield "sms-in-place/bfp8", call(op, T(x, "BFLOAT8_B"), 0.5, mask)
    yield "sms-in-place/mask-heads", call(op, T(x), 0.5, T([2, 2, 1, 64]))
    yield "sms-in-place/mask-batch", call(op, T(x), 0.5, T([1, 1, 1, 64]))
    yield "sms-in-place/scale-no-mask", call(op, T(x), 0.5)
    yield "sms-in-place/sharded-ok", call(op, T(x, m=hs), 0.5, mask, program_config=shard())
    yield "sms-in-place/sharded-no-scale", call(op, T(x, m=hs), None, mask, program_config=shard())
    yield "sms-in-place/sharded-bfp8", call(op, T(x, "BFLOAT8_B", m=hs), 0.5, mask, program_config=shard())
    yield "sms-in-place/sharded-subblock-w", call(op, T(x, m=hs), 0.5, mask, program_config=shard(subblock_w=3))
    yield "sms-in-place/sharded-block-w", call(op, T(x, m=hs), 0.5, mask, program_config=shard(block_w=1,
                                                                                                subblock_w=1))
    yield "sms-in-place/sharded-block-h", call(op, T(x, m=hs), 0.5, mask, program_config=shard(block_h=1))
    yield "sms-in-place/sharded-grid", call(op, T(x, m=hs), 0.5, mask,
                                            program_config=shard(compute_with_storage_grid_size=coord(4, 2)))
    yield "sms-in-place/sharded-grid-fit", call(op, T(x, m=row4), 0.5, mask, program_config=shard())
    yield "sms-in-place/sharded-grid-9x1", call(op, T([1, 9, 64, 64], m=height((64, 64), 9)), 0.5,
                                                T([1, 1, 1, 64]),
                                                program_config=shard(compute_with_storage_grid_size=coord(9, 1)))
    yield "sms-in-place/sharded-mask-batch", call(op, T(x, m=hs), 0.5, T([1, 1, 1, 64]), program_config=shard())
    yield "scale-mask-softmax/ok", call("scale_mask_softmax", T(x), 0.5, mask)
    yield "scale-mask-softmax/mask-batch", call("scale_mask_softmax", T(x), 0.5, T([1, 1, 1, 64]))
    yield "scale-mask-softmax/l1-out", call("scale_mask_softmax", T(x), 0.5, mask, memory_config=L1)
    yield "softmax-in-place/ok", call("softmax_in_place", T(x))
    yield "softmax-in-place/sharded", call("softmax_in_place", T(x, m=hs), program_config=shard())
    yield "softmax-in-place/sharded-grid-fit", call("softmax_in_place", T(x, m=row4), program_config=shard())


def cases() -> Iterator[tuple[str, dict]]:
    yield from binary("add")
    yield from binary("mul")
    yield "multiply/ok", call("multiply", T(X), T(X))
    yield "multiply/int32-bf16", call("multiply", T(X, "INT32"), T(X))
    yield from silu()
    yield from softmax()
    yield from scale_mask_softmax()
    yield from fill()
    yield from rms_norm()
    yield from embedding()
    yield from argmax()
    yield from topk()
    yield from plus_one()
