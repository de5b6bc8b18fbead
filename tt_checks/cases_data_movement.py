"""Hand-written corpus cases: data movement ops (see tt_checks/corpus_cases.py for the encoding helpers).

For each op: valid calls on interleaved (DRAM, L1) and sharded (height, width, block) inputs in TILE and ROW_MAJOR,
and next to them the calls that break each of its validation rules."""

from __future__ import annotations

from collections.abc import Iterator

from tt_checks.corpus_cases import DEVICE, DRAM, L1, T, block, call, coord, enum, height, host, mem, obj, width

HS64 = height((32, 64), 64)  # [1, 1, 2048, 64] one tile row per core of the 8x8 grid
BIG = [1, 1, 2048, 64]


def lst(*items: dict) -> dict:
    """A list argument of tensors (a plain JSON list would pass through undecoded)."""
    return {"t": "list", "v": list(items)}


def dt(name: str) -> dict:
    return enum(f"DataType.{name}")


def lay(name: str) -> dict:
    return enum(f"Layout.{name}")


def reshape() -> Iterator[tuple[str, dict]]:
    yield "reshape/tile-view-batch", call("reshape", T(BIG), [2, 1024, 64])
    yield "reshape/tile-view-unchanged-h", call("reshape", T([2, 3, 30, 64]), [6, 30, 64])
    yield "reshape/tile-copy-width", call("reshape", T(BIG), [1, 1, 1024, 128])
    yield "reshape/tile-copy-unaligned-h", call("reshape", T([1, 1, 60, 64]), [2, 30, 64])
    yield "reshape/same-shape", call("reshape", T(BIG), [1, 1, 2048, 64])
    yield "reshape/rank-up", call("reshape", T([1, 32, 128]), [1, 1, 32, 128])
    yield "reshape/rank-5", call("reshape", T(BIG), [1, 2, 2, 512, 64])
    yield "reshape/row-major-view", call("reshape", T([1, 1, 64, 100], layout="ROW_MAJOR"), [64, 100])
    yield "reshape/row-major-copy", call("reshape", T([1, 1, 64, 100], layout="ROW_MAJOR"), [1, 1, 100, 64])
    yield "reshape/row-major-odd", call("reshape", T([1, 1, 3, 14], layout="ROW_MAJOR"), [1, 1, 6, 7])
    yield "reshape/volume-mismatch", call("reshape", T(BIG), [1, 1, 1024, 64])
    yield "reshape/two-minus-one", call("reshape", T(BIG), [-1, -1, 64])
    yield "reshape/minus-one", call("reshape", T(BIG), [-1, 64])
    yield "reshape/minus-one-indivisible", call("reshape", T(BIG), [-1, 100])
    yield "reshape/bfp8-copy", call("reshape", T(BIG, "BFLOAT8_B"), [1, 1, 1024, 128])
    yield "reshape/bfp8-view", call("reshape", T(BIG, "BFLOAT8_B"), [2, 1024, 64])
    yield "reshape/fp32-copy", call("reshape", T(BIG, "FLOAT32"), [1, 1, 1024, 128])
    yield "reshape/uint32-copy", call("reshape", T(BIG, "UINT32"), [1, 1, 1024, 128])
    yield "reshape/uint16-copy", call("reshape", T(BIG, "UINT16"), [1, 1, 1024, 128])
    yield "reshape/uint16-view", call("reshape", T(BIG, "UINT16"), [2, 1024, 64])
    yield "reshape/bfp4-copy", call("reshape", T(BIG, "BFLOAT4_B"), [1, 1, 1024, 128])
    yield "reshape/l1-view", call("reshape", T(BIG, m=L1), [2, 1024, 64])
    yield "reshape/l1-copy", call("reshape", T(BIG, m=L1), [1, 1, 1024, 128])
    yield "reshape/to-l1", call("reshape", T(BIG), [2, 1024, 64], memory_config=L1)
    yield "reshape/same-shape-to-l1", call("reshape", T(BIG), [1, 1, 2048, 64], memory_config=L1)
    yield "reshape/height-sharded-view", call("reshape", T(BIG, m=HS64), [2, 1024, 64])
    yield "reshape/height-sharded-copy", call("reshape", T(BIG, m=HS64), [1, 1, 1024, 128])
    yield "reshape/width-sharded-copy", call("reshape", T([1, 1, 64, 256], m=width((64, 32), 8)), [1, 1, 128, 128])
    yield "reshape/width-sharded-view", call("reshape", T([1, 1, 64, 256], m=width((64, 32), 8)), [2, 32, 256])
    yield "reshape/block-sharded-copy", call("reshape", T([1, 1, 128, 256], m=block((64, 64), 4, 2)),
                                             [1, 1, 256, 128])
    yield "reshape/sharded-to-dram", call("reshape", T(BIG, m=HS64), [1, 1, 1024, 128], memory_config=DRAM)
    yield "reshape/dram-to-sharded-no-spec", call("reshape", T(BIG), [1, 1, 1024, 128],
                                                  memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "reshape/sharded-no-spec-seeded", call("reshape", T(BIG, m=HS64), [1, 1, 1024, 128],
                                                 memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "reshape/row-major-height-sharded", call(
        "reshape", T([1, 1, 64, 16], layout="ROW_MAJOR", m=height((8, 16), 8)), [1, 1, 32, 32])
    yield "reshape/block-sharded-bfp8", call("reshape", T([1, 1, 128, 256], "BFLOAT8_B", m=block((64, 64), 4, 2)),
                                             [1, 1, 256, 128])
    yield "reshape/to-rank-1", call("reshape", T([1, 1, 32, 64]), [2048])
    yield "reshape/zero-volume", call("reshape", T([1, 1, 0, 64]), [1, 64])
    yield "reshape/to-zero-volume", call("reshape", T([1, 1, 32, 64]), [0, 64])
    yield "reshape/rank-0", call("reshape", T([1, 1, 1, 1]), [])


def unsqueeze() -> Iterator[tuple[str, dict]]:
    op = "unsqueeze_to_4D"
    yield "unsqueeze/rank-2", call(op, T([32, 64]))
    yield "unsqueeze/rank-3", call(op, T([1, 32, 32]))
    yield "unsqueeze/rank-4", call(op, T([2, 1, 32, 32]))
    yield "unsqueeze/rank-1", call(op, T([64], layout="ROW_MAJOR"))
    yield "unsqueeze/rank-5-leading-1", call(op, T([1, 2, 1, 32, 32]))
    yield "unsqueeze/rank-5", call(op, T([2, 2, 1, 32, 32]))
    yield "unsqueeze/height-sharded", call(op, T([2048, 64], m=HS64))
    yield "unsqueeze/row-major-l1", call(op, T([3, 7], layout="ROW_MAJOR", m=L1))


def permute() -> Iterator[tuple[str, dict]]:
    x = T([1, 2, 64, 96])
    yield "permute/identity", call("permute", x, [0, 1, 2, 3])
    yield "permute/wh", call("permute", x, [0, 1, 3, 2])
    yield "permute/hc", call("permute", x, [0, 2, 1, 3])
    yield "permute/nc", call("permute", x, [1, 0, 2, 3])
    yield "permute/all", call("permute", x, [3, 2, 1, 0])
    yield "permute/negative-dims", call("permute", x, [0, 1, -1, -2])
    yield "permute/too-few-dims", call("permute", x, [0, 1, 2])
    yield "permute/duplicate-dims", call("permute", T([1, 1, 32, 64]), [0, 0, 1, 2])
    yield "permute/host", call("permute", host([1, 2, 64, 96]), [0, 1, 3, 2])
    yield "permute/row-major", call("permute", T([1, 2, 5, 7], layout="ROW_MAJOR"), [0, 1, 3, 2])
    yield "permute/bfp8", call("permute", T([1, 2, 64, 96], "BFLOAT8_B"), [0, 1, 3, 2])
    yield "permute/fp32-unaligned", call("permute", T([1, 3, 30, 50], "FLOAT32"), [0, 2, 1, 3])
    yield "permute/l1", call("permute", T([1, 2, 64, 96], m=L1), [0, 1, 3, 2])
    yield "permute/to-l1", call("permute", x, [0, 1, 3, 2], memory_config=L1)
    yield "permute/rank-5", call("permute", T([1, 2, 3, 32, 64]), [0, 2, 1, 4, 3])
    yield "permute/rank-2", call("permute", T([64, 96]), [1, 0])
    yield "permute/height-sharded-wh", call("permute", T(BIG, m=HS64), [0, 1, 3, 2])
    yield "permute/height-sharded-hc", call("permute", T([1, 4, 512, 64], m=HS64), [0, 2, 1, 3])
    yield "permute/width-sharded-wh", call("permute", T([1, 1, 64, 256], m=width((64, 32), 8)), [0, 1, 3, 2])
    yield "permute/block-sharded-wh", call("permute", T([1, 1, 128, 256], m=block((64, 64), 4, 2)), [0, 1, 3, 2])
    yield "permute/height-sharded-nhwc", call("permute", T([1, 4, 64, 64], m=height((32, 64), 8)), [0, 2, 3, 1])
    yield "permute/height-sharded-to-l1", call("permute", T(BIG, m=HS64), [0, 1, 3, 2], memory_config=L1)
    yield "permute/row-major-sharded-out-unaligned", call(
        "permute", T([1, 1, 8, 28], layout="ROW_MAJOR"), [0, 1, 3, 2], memory_config=width((28, 4), 2))
    yield "permute/row-major-width-sharded-out", call(
        "permute", T([1, 1, 16, 28], layout="ROW_MAJOR"), [0, 1, 3, 2], memory_config=width((28, 8), 2))
    yield "permute/row-major-sharded-out", call(
        "permute", T([1, 1, 16, 32], layout="ROW_MAJOR"), [0, 1, 3, 2], memory_config=height((4, 16), 8))


def transpose() -> Iterator[tuple[str, dict]]:
    x = T([1, 2, 64, 96])
    yield "transpose/wh", call("transpose", x, 2, 3)
    yield "transpose/wh-negative", call("transpose", x, -2, -1)
    yield "transpose/hc", call("transpose", x, 1, 2)
    yield "transpose/cn", call("transpose", x, 0, 1)
    yield "transpose/nh", call("transpose", x, 0, 2)
    yield "transpose/nw", call("transpose", x, 0, 3)
    yield "transpose/same-dim", call("transpose", x, 3, 3)
    yield "transpose/dim-out-of-range", call("transpose", x, 2, 4)
    yield "transpose/wh-pad-value", call("transpose", x, 2, 3, pad_value=1.0)
    yield "transpose/hc-pad-value", call("transpose", x, 1, 2, pad_value=1.0)
    yield "transpose/row-major", call("transpose", T([1, 2, 5, 7], layout="ROW_MAJOR"), 2, 3)
    yield "transpose/bfp8-wh", call("transpose", T([1, 2, 64, 96], "BFLOAT8_B"), 2, 3)
    yield "transpose/bfp8-hc", call("transpose", T([1, 2, 64, 96], "BFLOAT8_B"), 1, 2)
    yield "transpose/unaligned", call("transpose", T([1, 1, 30, 50]), 2, 3)
    yield "transpose/l1", call("transpose", T([1, 2, 64, 96], m=L1), 2, 3)
    yield "transpose/to-l1", call("transpose", x, 2, 3, memory_config=L1)
    yield "transpose/rank-5", call("transpose", T([1, 2, 3, 32, 64]), 3, 4)
    yield "transpose/rank-2", call("transpose", T([64, 96]), 0, 1)
    yield "transpose/height-sharded-wh", call("transpose", T([1, 1, 256, 256], m=height((32, 256), 8)), 2, 3)
    yield "transpose/width-sharded-wh", call("transpose", T([1, 1, 64, 256], m=width((64, 32), 8)), 2, 3)
    yield "transpose/block-sharded-wh", call("transpose", T([1, 1, 128, 256], m=block((64, 64), 4, 2)), 2, 3)
    yield "transpose/height-sharded-hc", call("transpose", T([1, 4, 64, 64], m=height((32, 64), 8)), 1, 2)
    yield "transpose/to-width-sharded-no-spec", call("transpose", T([1, 1, 256, 256], m=height((32, 256), 8)), 2, 3,
                                                     memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "transpose/dram-to-height-sharded-no-spec", call("transpose", T([1, 1, 64, 256]), 2, 3,
                                                           memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "transpose/row-major-height-sharded-wh", call(
        "transpose", T([1, 1, 64, 32], layout="ROW_MAJOR", m=height((32, 32), 2)), 2, 3)
    yield "transpose/dram-height-sharded-wh", call(
        "transpose", T([1, 1, 384, 64], m=mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64))), 2, 3)


def slice_() -> Iterator[tuple[str, dict]]:
    x = T(BIG)
    yield "slice/tile-aligned", call("slice", x, [0, 0, 0, 0], [1, 1, 1024, 64])
    yield "slice/tile-odd-start", call("slice", x, [0, 0, 5, 0], [1, 1, 1000, 64])
    yield "slice/tile-odd-width", call("slice", x, [0, 0, 0, 3], [1, 1, 64, 30])
    yield "slice/tile-strided", call("slice", x, [0, 0, 0, 0], [1, 1, 2048, 64], [1, 1, 2, 1])
    yield "slice/negative-index", call("slice", x, [0, 0, -64, 0], [1, 1, 2048, 64])
    yield "slice/rank-mismatch", call("slice", x, [0, 0, 0], [1, 1024, 64])
    yield "slice/ends-length", call("slice", x, [0, 0, 0, 0], [1, 1, 1024])
    yield "slice/steps-length", call("slice", x, [0, 0, 0, 0], [1, 1, 1024, 64], [1, 1, 1])
    yield "slice/end-before-start", call("slice", x, [0, 0, 100, 0], [1, 1, 50, 64])
    yield "slice/end-past-dim", call("slice", x, [0, 0, 0, 0], [1, 1, 4096, 64])
    yield "slice/end-in-padding", call("slice", T([1, 1, 30, 64]), [0, 0, 0, 0], [1, 1, 32, 64])
    yield "slice/start-past-dim", call("slice", x, [0, 0, 2048, 0], [1, 1, 2048, 64])
    yield "slice/start-past-padded-dim", call("slice", x, [0, 0, 2049, 0], [1, 1, 2050, 64])
    yield "slice/empty", call("slice", x, [0, 0, 64, 0], [1, 1, 64, 64])
    yield "slice/negative-step", call("slice", x, [0, 0, 0, 0], [1, 1, 64, 64], [1, 1, -1, 1])
    yield "slice/bfp8-aligned", call("slice", T(BIG, "BFLOAT8_B"), [0, 0, 0, 0], [1, 1, 1024, 64])
    yield "slice/bfp8-unaligned", call("slice", T(BIG, "BFLOAT8_B"), [0, 0, 5, 0], [1, 1, 1000, 64])
    yield "slice/bfp8-strided", call("slice", T(BIG, "BFLOAT8_B"), [0, 0, 0, 0], [1, 1, 2048, 64], [1, 1, 2, 1])
    yield "slice/row-major", call("slice", T([1, 1, 64, 100], layout="ROW_MAJOR"), [0, 0, 3, 5], [1, 1, 60, 99])
    yield "slice/row-major-strided", call("slice", T([1, 1, 64, 100], layout="ROW_MAJOR"), [0, 0, 0, 0],
                                          [1, 1, 64, 100], [1, 1, 2, 2])
    yield "slice/fp32", call("slice", T(BIG, "FLOAT32"), [0, 0, 32, 0], [1, 1, 96, 64])
    yield "slice/uint32-row-major", call("slice", T([32, 16], "UINT32", "ROW_MAJOR"), [0, 0], [8, 16])
    yield "slice/l1", call("slice", T(BIG, m=L1), [0, 0, 0, 0], [1, 1, 1024, 64])
    yield "slice/to-l1", call("slice", x, [0, 0, 0, 0], [1, 1, 1024, 64], memory_config=L1)
    yield "slice/height-sharded", call("slice", T(BIG, m=HS64), [0, 0, 0, 0], [1, 1, 1024, 64])
    yield "slice/height-sharded-unaligned", call("slice", T(BIG, m=HS64), [0, 0, 0, 0], [1, 1, 1000, 64])
    yield "slice/width-sharded", call("slice", T([1, 1, 64, 256], m=width((64, 32), 8)), [0, 0, 0, 0],
                                      [1, 1, 64, 128])
    yield "slice/block-sharded", call("slice", T([1, 1, 128, 256], m=block((64, 64), 4, 2)), [0, 0, 0, 0],
                                      [1, 1, 64, 128])
    yield "slice/sharded-to-dram", call("slice", T(BIG, m=HS64), [0, 0, 0, 0], [1, 1, 1024, 64], memory_config=DRAM)
    yield "slice/to-height-sharded-no-spec", call("slice", x, [0, 0, 0, 0], [1, 1, 1024, 64],
                                                  memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "slice/rank-2", call("slice", T([64, 96]), [32, 0], [64, 64])


def concat() -> Iterator[tuple[str, dict]]:
    a = T([1, 1, 32, 64])
    yield "concat/width", call("concat", lst(a, a), -1)
    yield "concat/height", call("concat", lst(a, a), 2)
    yield "concat/batch", call("concat", lst(a, a, a), 0)
    yield "concat/unaligned", call("concat", lst(T([1, 1, 30, 50]), T([1, 1, 30, 50])), -1)
    yield "concat/row-major-tensors", call("concat", lst(*[T([1, 1, 3, 7], layout="ROW_MAJOR")] * 2), -1)
    yield "concat/mixed-layouts", call("concat", lst(a, T([1, 1, 32, 64], layout="ROW_MAJOR")), -1)
    yield "concat/single", call("concat", lst(a), -1)
    yield "concat/output-tensor", call("concat", lst(a, a), -1, output_tensor=T([1, 1, 32, 128]))
    yield "concat/empty-list", call("concat", lst(), -1)
    yield "concat/dim-out-of-range", call("concat", lst(a, a), 4)
    yield "concat/other-dim-differs", call("concat", lst(a, T([1, 1, 64, 64])), -1)
    yield "concat/rank-differs", call("concat", lst(a, T([1, 32, 64])), -1)
    yield "concat/dtype-differs", call("concat", lst(a, T([1, 1, 32, 64], "FLOAT32")), -1)
    yield "concat/bfp8-tensors", call("concat", lst(*[T([1, 1, 32, 64], "BFLOAT8_B")] * 2), -1)
    yield "concat/17-inputs", call("concat", lst(*[a] * 17), -1)
    yield "concat/l1-inputs", call("concat", lst(*[T([1, 1, 32, 64], m=L1)] * 2), -1)
    yield "concat/to-l1", call("concat", lst(a, a), -1, memory_config=L1)
    hs = T([1, 1, 256, 64], m=height((32, 64), 8))
    bs0 = T([1, 1, 128, 256], m=block((64, 64), 4, 2))
    dhs0 = T([1, 1, 384, 64], m=mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64)))
    yield "concat/height-sharded-width", call("concat", lst(hs, hs), -1)
    yield "concat/height-sharded-width-out", call("concat", lst(hs, hs), -1, memory_config=height((32, 128), 8))
    yield "concat/height-sharded-height", call("concat", lst(hs, hs), 2, memory_config=height((64, 64), 8))
    yield "concat/height-sharded-batch", call("concat", lst(hs, hs), 0, memory_config=height((64, 64), 8))
    yield "concat/height-sharded-out-width-sharded", call("concat", lst(hs, hs), -1, memory_config=width((256, 64), 2))
    yield "concat/height-sharded-out-other-grid", call(
        "concat", lst(hs, hs), -1, memory_config=mem("HEIGHT_SHARDED", "L1", [(0, 1, 7, 1)], (32, 128)))
    yield "concat/height-sharded-out-l1", call("concat", lst(hs, hs), -1, memory_config=L1)
    yield "concat/sharded-and-interleaved", call("concat", lst(hs, T([1, 1, 256, 64])), -1)
    yield "concat/sharded-grids-differ", call(
        "concat", lst(hs, T([1, 1, 256, 64], m=mem("HEIGHT_SHARDED", "L1", [(0, 1, 7, 1)], (32, 64)))), -1)
    yield "concat/sharded-layouts-differ", call("concat", lst(hs, T([1, 1, 256, 256], m=width((256, 32), 8))), -1,
                                                memory_config=height((32, 320), 8))
    yield "concat/sharded-orientations-differ", call(
        "concat", lst(hs, T([1, 1, 256, 64], m=mem("HEIGHT_SHARDED", "L1", [(0, 0, 7, 0)], (32, 64), "COL_MAJOR"))),
        -1, memory_config=height((32, 128), 8))
    yield "concat/height-sharded-out-col-major", call(
        "concat", lst(hs, hs), -1, memory_config=mem("HEIGHT_SHARDED", "L1", [(0, 0, 7, 0)], (32, 128), "COL_MAJOR"))
    yield "concat/negative-dim", call("concat", lst(a, a), -2)
    yield "concat/dim-too-negative", call("concat", lst(a, a), -5)
    yield "concat/rank-3", call("concat", lst(T([2, 32, 64]), T([2, 32, 64])), 0)
    yield "concat/block-sharded-17", call("concat", lst(*[T([1, 1, 64, 64], m=block((32, 32), 2, 2))] * 17), -1)
    yield "concat/block-sharded-groups", call("concat", lst(bs0, bs0), -1, groups=2,
                                              memory_config=block((64, 128), 4, 2))
    yield "concat/dram-sharded-groups", call("concat", lst(dhs0, dhs0), -1, groups=2)
    ws = T([1, 1, 64, 256], m=width((64, 32), 8))
    yield "concat/width-sharded-height", call("concat", lst(ws, ws), 2, memory_config=width((128, 32), 8))
    yield "concat/width-sharded-width", call("concat", lst(ws, ws), -1, memory_config=width((64, 64), 8))
    bs = T([1, 1, 128, 256], m=block((64, 64), 4, 2))
    yield "concat/block-sharded-width", call("concat", lst(bs, bs), -1, memory_config=block((64, 128), 4, 2))
    rmhs = T([1, 1, 64, 8], layout="ROW_MAJOR", m=height((8, 8), 8))
    yield "concat/row-major-height-sharded-width", call("concat", lst(rmhs, rmhs), -1, memory_config=height((8, 16), 8))
    rmhs32 = T([1, 1, 64, 16], layout="ROW_MAJOR", m=height((8, 16), 8))
    yield "concat/row-major-height-sharded-width-32b", call("concat", lst(rmhs32, rmhs32), -1,
                                                            memory_config=height((8, 32), 8))
    yield "concat/row-major-height-sharded-to-dram", call("concat", lst(rmhs, rmhs), -1)
    dhs = T([1, 1, 384, 64], m=mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64)))
    yield "concat/dram-height-sharded-width", call("concat", lst(dhs, dhs), -1)
    yield "concat/groups-interleaved", call("concat", lst(a, a), -1, groups=2)
    yield "concat/groups-height-sharded", call("concat", lst(hs, hs), -1, groups=2, memory_config=height((32, 128), 8))


def clone() -> Iterator[tuple[str, dict]]:
    x = T([1, 1, 64, 128])
    yield "clone/dram", call("clone", x)
    yield "clone/to-l1", call("clone", x, memory_config=L1)
    yield "clone/l1-to-dram", call("clone", T([1, 1, 64, 128], m=L1), memory_config=DRAM)
    yield "clone/to-bfp8", call("clone", x, dtype=dt("BFLOAT8_B"))
    yield "clone/bfp8-to-bf16", call("clone", T([1, 1, 64, 128], "BFLOAT8_B"), dtype=dt("BFLOAT16"))
    yield "clone/row-major", call("clone", T([1, 1, 5, 7], layout="ROW_MAJOR"))
    yield "clone/row-major-dtype", call("clone", T([1, 1, 5, 7], layout="ROW_MAJOR"), dtype=dt("FLOAT32"))
    yield "clone/row-major-same-dtype", call("clone", T([1, 1, 5, 7], layout="ROW_MAJOR"), dtype=dt("BFLOAT16"))
    yield "clone/uint32", call("clone", T([1, 1, 64, 128], "UINT32"), dtype=dt("FLOAT32"))
    hs = T(BIG, m=HS64)
    yield "clone/height-sharded", call("clone", hs)
    yield "clone/height-sharded-same-spec", call("clone", hs, memory_config=HS64)
    yield "clone/height-sharded-to-width-sharded", call("clone", hs, memory_config=width((2048, 32), 2))
    yield "clone/height-sharded-other-grid", call("clone", hs, memory_config=height((64, 64), 32))
    yield "clone/height-sharded-to-dram", call("clone", hs, memory_config=DRAM)
    yield "clone/dram-to-height-sharded", call("clone", T(BIG), memory_config=HS64)
    yield "clone/block-sharded", call("clone", T([1, 1, 128, 256], m=block((64, 64), 4, 2)), dtype=dt("FLOAT32"))


def to_layout() -> Iterator[tuple[str, dict]]:
    rm, tile = lay("ROW_MAJOR"), lay("TILE")
    yield "to_layout/tile-to-rm", call("to_layout", T([1, 1, 64, 128]), rm)
    yield "to_layout/rm-to-tile", call("to_layout", T([1, 1, 64, 128], layout="ROW_MAJOR"), tile)
    yield "to_layout/same-layout", call("to_layout", T([1, 1, 64, 128]), tile)
    yield "to_layout/rm-to-tile-unaligned", call("to_layout", T([1, 1, 30, 50], layout="ROW_MAJOR"), tile)
    yield "to_layout/rm-to-tile-rank-3-fp32", call("to_layout", T([3, 5, 7], "FLOAT32", "ROW_MAJOR"), tile)
    yield "to_layout/tile-to-rm-unaligned", call("to_layout", T([1, 1, 30, 50]), rm)
    yield "to_layout/bfp8-to-rm", call("to_layout", T([1, 1, 64, 128], "BFLOAT8_B"), rm)
    yield "to_layout/bfp4-to-rm", call("to_layout", T([1, 1, 64, 128], "BFLOAT4_B"), rm)
    yield "to_layout/rm-to-tile-bfp8", call("to_layout", T([1, 1, 64, 128], layout="ROW_MAJOR"), tile,
                                            dtype=dt("BFLOAT8_B"))
    yield "to_layout/bfp8-to-rm-bf16", call("to_layout", T([1, 1, 64, 128], "BFLOAT8_B"), rm, dtype=dt("BFLOAT16"))
    yield "to_layout/tile-to-rm-bfp8", call("to_layout", T([1, 1, 64, 128]), rm, dtype=dt("BFLOAT8_B"))
    yield "to_layout/tile-to-rm-fp32", call("to_layout", T([1, 1, 64, 128]), rm, dtype=dt("FLOAT32"))
    yield "to_layout/uint32-to-rm", call("to_layout", T([1, 1, 64, 128], "UINT32"), rm)
    yield "to_layout/int32-rm-to-tile", call("to_layout", T([32, 16], "INT32", "ROW_MAJOR"), tile)
    yield "to_layout/to-l1", call("to_layout", T([1, 1, 64, 128]), rm, memory_config=L1)
    yield "to_layout/l1", call("to_layout", T([1, 1, 64, 128], m=L1), rm)
    yield "to_layout/height-sharded-to-rm", call("to_layout", T(BIG, m=HS64), rm)
    yield "to_layout/width-sharded-to-rm", call("to_layout", T([1, 1, 64, 256], m=width((64, 32), 8)), rm)
    yield "to_layout/block-sharded-to-rm", call("to_layout", T([1, 1, 128, 256], m=block((64, 64), 4, 2)), rm)
    yield "to_layout/dram-height-sharded-to-rm", call(
        "to_layout", T([1, 1, 384, 64], m=mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64))), rm)
    yield "to_layout/rm-height-sharded-to-tile", call(
        "to_layout", T([1, 1, 256, 64], layout="ROW_MAJOR", m=height((32, 64), 8)), tile)
    yield "to_layout/rm-height-sharded-16-to-tile", call(
        "to_layout", T([1, 1, 256, 64], layout="ROW_MAJOR", m=height((16, 64), 16)), tile)
    yield "to_layout/to-height-sharded", call("to_layout", T(BIG, layout="ROW_MAJOR"), tile, memory_config=HS64)
    yield "to_layout/host-to-tile", call("to_layout", host([1, 1, 30, 50]), tile)
    yield "to_layout/host-bfp8-to-rm", call("to_layout", host([1, 1, 64, 64], "BFLOAT8_B", "TILE"), rm)


def typecast() -> Iterator[tuple[str, dict]]:
    x = T([1, 1, 64, 128])
    yield "typecast/bf16-to-fp32", call("typecast", x, dt("FLOAT32"))
    yield "typecast/bf16-to-bfp8", call("typecast", x, dt("BFLOAT8_B"))
    yield "typecast/bf16-to-bfp4", call("typecast", x, dt("BFLOAT4_B"))
    yield "typecast/bf16-to-uint32", call("typecast", x, dt("UINT32"))
    yield "typecast/bf16-to-uint8", call("typecast", x, dt("UINT8"))
    yield "typecast/bfp8-to-bf16", call("typecast", T([1, 1, 64, 128], "BFLOAT8_B"), dt("BFLOAT16"))
    yield "typecast/int32-to-bf16", call("typecast", T([1, 1, 64, 128], "INT32"), dt("BFLOAT16"))
    yield "typecast/same-dtype", call("typecast", x, dt("BFLOAT16"))
    yield "typecast/unaligned", call("typecast", T([1, 1, 30, 50]), dt("FLOAT32"))
    yield "typecast/row-major-to-fp32", call("typecast", T([1, 1, 5, 7], layout="ROW_MAJOR"), dt("FLOAT32"))
    yield "typecast/row-major-to-bfp8", call("typecast", T([1, 1, 5, 7], layout="ROW_MAJOR"), dt("BFLOAT8_B"))
    yield "typecast/row-major-uint32-to-bf16", call("typecast", T([32, 16], "UINT32", "ROW_MAJOR"), dt("BFLOAT16"))
    yield "typecast/to-l1", call("typecast", x, dt("FLOAT32"), memory_config=L1)
    yield "typecast/l1", call("typecast", T([1, 1, 64, 128], m=L1), dt("FLOAT32"))
    hs = T(BIG, m=HS64)
    yield "typecast/height-sharded", call("typecast", hs, dt("BFLOAT8_B"))
    yield "typecast/height-sharded-other-grid", call("typecast", hs, dt("FLOAT32"), memory_config=height((64, 64), 32))
    yield "typecast/height-sharded-to-dram", call("typecast", hs, dt("FLOAT32"), memory_config=DRAM)
    yield "typecast/dram-to-height-sharded", call("typecast", T(BIG), dt("FLOAT32"), memory_config=HS64)
    yield "typecast/height-sharded-to-width-sharded", call("typecast", hs, dt("FLOAT32"),
                                                           memory_config=width((2048, 32), 2))
    yield "typecast/width-sharded", call("typecast", T([1, 1, 64, 256], m=width((64, 32), 8)), dt("FLOAT32"))
    yield "typecast/block-sharded", call("typecast", T([1, 1, 128, 256], m=block((64, 64), 4, 2)), dt("BFLOAT8_B"))
    yield "typecast/dram-width-sharded", call("typecast", T([1, 1, 64, 384], m=mem(
        "WIDTH_SHARDED", "DRAM", [(0, 0, 11, 0)], (64, 32))), dt("BFLOAT8_B"))
    yield "typecast/row-major-height-sharded-w7", call(
        "typecast", T([1, 1, 64, 7], layout="ROW_MAJOR", m=height((8, 7), 8)), dt("FLOAT32"))
    yield "typecast/row-major-height-sharded-w8", call(
        "typecast", T([1, 1, 64, 8], layout="ROW_MAJOR", m=height((8, 8), 8)), dt("FLOAT32"))
    yield "typecast/host", call("typecast", host([1, 1, 5, 7], "FLOAT32"), dt("BFLOAT16"))


def to_memory_config() -> Iterator[tuple[str, dict]]:
    op = "to_memory_config"
    x = T(BIG)
    yield "tmc/dram-to-l1", call(op, x, L1)
    yield "tmc/host", call(op, host(BIG, layout="TILE"), L1)
    yield "tmc/l1-to-dram", call(op, T(BIG, m=L1), DRAM)
    yield "tmc/same-config", call(op, x, DRAM)
    yield "tmc/same-sharded-config", call(op, T(BIG, m=HS64), HS64)
    yield "tmc/to-height-sharded", call(op, x, HS64)
    yield "tmc/l1-to-height-sharded", call(op, T(BIG, m=L1), HS64)
    yield "tmc/to-width-sharded", call(op, T([1, 1, 64, 256]), width((64, 32), 8))
    yield "tmc/to-block-sharded", call(op, T([1, 1, 128, 256]), block((64, 64), 4, 2))
    yield "tmc/to-dram-height-sharded", call(op, T([1, 1, 384, 64]), mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)],
                                                                         (32, 64)))
    yield "tmc/to-dram-width-sharded", call(op, T([1, 1, 64, 384]), mem("WIDTH_SHARDED", "DRAM", [(0, 0, 11, 0)],
                                                                        (64, 32)))
    yield "tmc/to-dram-block-sharded", call(op, T([1, 1, 32, 128]), mem("BLOCK_SHARDED", "DRAM", [(0, 0, 3, 0)],
                                                                        (32, 32)))
    yield "tmc/height-sharded-to-dram-block-sharded", call(
        op, T([1, 1, 32, 128], m=height((32, 128), 1)), mem("BLOCK_SHARDED", "DRAM", [(0, 0, 3, 0)], (32, 32)))
    hs = T(BIG, m=HS64)
    yield "tmc/height-sharded-to-dram", call(op, hs, DRAM)
    yield "tmc/height-sharded-to-l1", call(op, hs, L1)
    yield "tmc/height-sharded-other-grid", call(op, hs, height((64, 64), 32))
    yield "tmc/height-to-width-sharded", call(op, hs, width((2048, 32), 2))
    yield "tmc/height-to-block-sharded", call(op, T([1, 1, 128, 256], m=height((32, 256), 4)),
                                              block((64, 64), 4, 2))
    yield "tmc/dram-height-sharded-to-dram", call(op, T([1, 1, 384, 64], m=mem(
        "HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64))), DRAM)
    yield "tmc/bad-shard-width", call(op, x, height((32, 32), 64))
    yield "tmc/too-many-shards", call(op, T([1, 1, 4096, 64]), HS64)
    yield "tmc/unaligned-shard", call(op, x, height((16, 64), 64))
    yield "tmc/no-shard-spec", call(op, x, mem("HEIGHT_SHARDED", "L1"))
    yield "tmc/dtype-tile", call(op, x, L1, dt("BFLOAT8_B"))
    yield "tmc/dtype-same-config", call(op, x, DRAM, dt("FLOAT32"))
    yield "tmc/dtype-row-major", call(op, T(BIG, layout="ROW_MAJOR"), L1, dt("FLOAT32"))
    yield "tmc/bfp8-row-major", call(op, T(BIG, layout="ROW_MAJOR"), L1, dt("BFLOAT8_B"))
    yield "tmc/row-major-to-height-sharded", call(op, T([1, 1, 64, 20], layout="ROW_MAJOR"), height((8, 20), 8))
    yield "tmc/row-major-w7-height-sharded-to-dram", call(
        op, T([1, 1, 64, 7], layout="ROW_MAJOR", m=height((8, 7), 8)), DRAM)
    yield "tmc/row-major-height-to-width-sharded", call(
        op, T([1, 1, 64, 64], layout="ROW_MAJOR", m=height((8, 64), 8)), width((64, 8), 8))


def i2s() -> Iterator[tuple[str, dict]]:
    op = "interleaved_to_sharded"
    x = T(BIG)
    yield "i2s/height", call(op, x, HS64)
    yield "i2s/host-input", call(op, host(BIG, layout="TILE"), HS64)
    yield "i2s/l1-input", call(op, T(BIG, m=L1), HS64)
    yield "i2s/width", call(op, T([1, 1, 64, 256]), width((64, 32), 8))
    yield "i2s/block", call(op, T([1, 1, 128, 256]), block((64, 64), 4, 2))
    yield "i2s/block-col-major", call(op, T([1, 1, 128, 256]), block((64, 128), 2, 2, "COL_MAJOR"))
    yield "i2s/uneven", call(op, T([1, 1, 100, 64]), height((32, 64), 4))
    yield "i2s/dram-height", call(op, T([1, 1, 384, 64]), mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64)))
    yield "i2s/dram-block", call(op, T([1, 1, 32, 128]), mem("BLOCK_SHARDED", "DRAM", [(0, 0, 3, 0)], (32, 32)))
    yield "i2s/sharded-input", call(op, T(BIG, m=HS64), height((64, 64), 32))
    yield "i2s/interleaved-target", call(op, x, L1)
    yield "i2s/bad-shard-width", call(op, x, height((32, 32), 64))
    yield "i2s/block-bad-shard", call(op, T([1, 1, 128, 256]), block((64, 64), 2, 2))
    yield "i2s/unaligned-shard", call(op, x, height((16, 64), 64))
    yield "i2s/row-major", call(op, T([1, 1, 64, 8], layout="ROW_MAJOR"), height((8, 8), 8))
    yield "i2s/row-major-w7", call(op, T([1, 1, 64, 7], layout="ROW_MAJOR"), height((8, 7), 8))
    yield "i2s/row-major-dram-w7", call(op, T([1, 1, 96, 7], layout="ROW_MAJOR"),
                                        mem("HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (8, 7)))
    yield "i2s/dtype-tile", call(op, x, HS64, dt("BFLOAT8_B"))
    yield "i2s/dtype-row-major", call(op, T([1, 1, 64, 8], layout="ROW_MAJOR"), height((8, 8), 8), dt("FLOAT32"))
    yield "i2s/bfp8-row-major", call(op, T([1, 1, 64, 8], layout="ROW_MAJOR"), height((8, 8), 8), dt("BFLOAT8_B"))
    yield "i2s/no-shard-spec", call(op, x, mem("HEIGHT_SHARDED", "L1"))
    hs_enum = enum("TensorMemoryLayout.HEIGHT_SHARDED")
    rm = enum("ShardOrientation.ROW_MAJOR")
    yield "i2s/grid-overload", call(op, x, coord(8, 8), [32, 64], hs_enum, rm)
    yield "i2s/grid-overload-fewer-shards", call(op, T([1, 1, 256, 64]), coord(8, 8), [32, 64],
                                                 hs_enum, rm)
    yield "i2s/grid-overload-block", call(op, T([1, 1, 128, 256]), obj("CoreRangeSet", ranges=[[0, 0, 3, 1]]), [64, 64],
                                          enum("TensorMemoryLayout.BLOCK_SHARDED"), rm)


def s2i() -> Iterator[tuple[str, dict]]:
    op = "sharded_to_interleaved"
    hs = T(BIG, m=HS64)
    yield "s2i/height-to-dram", call(op, hs, DRAM)
    yield "s2i/default", call(op, hs)
    yield "s2i/height-to-l1", call(op, hs, L1)
    yield "s2i/width", call(op, T([1, 1, 64, 256], m=width((64, 32), 8)), DRAM)
    yield "s2i/block", call(op, T([1, 1, 128, 256], m=block((64, 64), 4, 2)), DRAM)
    yield "s2i/uneven", call(op, T([1, 1, 100, 64], m=height((32, 64), 4)), DRAM)
    yield "s2i/interleaved-input", call(op, T(BIG), L1)
    yield "s2i/dram-sharded-input", call(op, T([1, 1, 384, 64], m=mem(
        "HEIGHT_SHARDED", "DRAM", [(0, 0, 11, 0)], (32, 64))), DRAM)
    yield "s2i/sharded-target", call(op, hs, height((64, 64), 32))
    yield "s2i/row-major", call(op, T([1, 1, 64, 8], layout="ROW_MAJOR", m=height((8, 8), 8)), DRAM)
    yield "s2i/row-major-w7", call(op, T([1, 1, 64, 7], layout="ROW_MAJOR", m=height((8, 7), 8)), DRAM)
    yield "s2i/dtype-tile", call(op, hs, DRAM, dt("BFLOAT8_B"))
    yield "s2i/dtype-row-major", call(op, T([1, 1, 64, 8], layout="ROW_MAJOR", m=height((8, 8), 8)), DRAM,
                                      dt("FLOAT32"))
    yield "s2i/interleaved-with-shard-spec", call(op, T(BIG, m=mem("INTERLEAVED", "L1", [(0, 0, 7, 7)], (32, 64))),
                                                  DRAM)
    yield "s2i/bfp8-input", call(op, T(BIG, "BFLOAT8_B", m=HS64), L1, dt("BFLOAT16"))


def creation() -> Iterator[tuple[str, dict]]:
    """Placement through empty / to_device / from_torch(device=), beside the zeros cases of corpus_cases."""
    def torch_(shape: list[int], dtype: str = "torch.float32") -> dict:
        return {"t": "torch", "shape": shape, "dtype": dtype}

    yield "empty/default", call("empty", [1, 1, 32, 64], device=DEVICE)
    yield "empty/tile-l1", call("empty", [1, 1, 32, 64], dt("BFLOAT16"), lay("TILE"), DEVICE, L1)
    yield "empty/bfp8-row-major", call("empty", [1, 1, 32, 64], dt("BFLOAT8_B"), lay("ROW_MAJOR"), DEVICE, DRAM)
    yield "empty/bfp4-row-major", call("empty", [1, 1, 32, 64], dt("BFLOAT4_B"), lay("ROW_MAJOR"), DEVICE, DRAM)
    yield "empty/bfp8-tile", call("empty", [1, 1, 32, 64], dt("BFLOAT8_B"), lay("TILE"), DEVICE, DRAM)
    yield "empty/height-sharded", call("empty", BIG, dt("BFLOAT16"), lay("TILE"), DEVICE, HS64)
    yield "empty/height-sharded-bad-width", call("empty", BIG, dt("BFLOAT16"), lay("TILE"), DEVICE,
                                                 height((32, 32), 64))
    yield "empty/dram-block-sharded", call("empty", [1, 1, 32, 128], dt("BFLOAT16"), lay("TILE"), DEVICE,
                                           mem("BLOCK_SHARDED", "DRAM", [(0, 0, 3, 0)], (32, 32)))
    yield "empty/zero-volume", call("empty", [1, 1, 0, 64], dt("BFLOAT16"), lay("TILE"), DEVICE, DRAM)
    yield "to_device/row-major-height-sharded", call("to_device", host([1, 1, 64, 20]), DEVICE,
                                                     memory_config=height((8, 20), 8))
    yield "to_device/tile-l1", call("to_device", host([1, 1, 30, 50], layout="TILE"), DEVICE, memory_config=L1)
    yield "to_device/bad-shard", call("to_device", host([1, 1, 64, 64], layout="TILE"), DEVICE,
                                      memory_config=height((16, 64), 4))
    yield "from_torch/device-default", call("from_torch", torch_([1, 1, 30, 50]), dt("BFLOAT16"), device=DEVICE)
    yield "from_torch/bfp8-row-major", call("from_torch", torch_([1, 1, 32, 64]), dt("BFLOAT8_B"),
                                            layout=lay("ROW_MAJOR"), device=DEVICE)
    yield "from_torch/bfp8-tile-l1", call("from_torch", torch_([1, 1, 32, 64]), dt("BFLOAT8_B"), layout=lay("TILE"),
                                          device=DEVICE, memory_config=L1)
    yield "from_torch/width-sharded", call("from_torch", torch_([1, 1, 32, 256]), dt("BFLOAT16"), layout=lay("TILE"),
                                           device=DEVICE, memory_config=width((32, 32), 8))
    yield "from_torch/width-sharded-bad-height", call("from_torch", torch_([1, 1, 64, 256]), dt("BFLOAT16"),
                                                      layout=lay("TILE"), device=DEVICE,
                                                      memory_config=width((32, 32), 8))


def cases() -> Iterator[tuple[str, dict]]:
    yield from reshape()
    yield from unsqueeze()
    yield from permute()
    yield from transpose()
    yield from slice_()
    yield from concat()
    yield from clone()
    yield from to_layout()
    yield from typecast()
    yield from to_memory_config()
    yield from i2s()
    yield from s2i()
    yield from creation()

