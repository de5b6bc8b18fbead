"""Hand-written corpus cases: ops around the models' ones (fill_implicit_tile_padding)."""

from __future__ import annotations

from collections.abc import Iterator

from tt_checks.corpus_cases import L1, T, call, height, host


def cases() -> Iterator[tuple[str, dict]]:
    op = "fill_implicit_tile_padding"
    yield "fill-pad/ok", call(op, T([1, 1, 30, 50]), 1.0)
    yield "fill-pad/bfp8", call(op, T([1, 1, 30, 50], "BFLOAT8_B"), 1.0)
    yield "fill-pad/bfp4", call(op, T([1, 1, 30, 50], "BFLOAT4_B"), 1.0)
    yield "fill-pad/fp32", call(op, T([1, 1, 30, 50], "FLOAT32"), 1.0)
    yield "fill-pad/int32", call(op, T([1, 1, 30, 50], "INT32"), 3)
    yield "fill-pad/3d", call(op, T([2, 30, 50]), 1.0)
    yield "fill-pad/l1-input", call(op, T([1, 1, 30, 50], m=L1), 1.0)
    yield "fill-pad/memory-config-ignored", call(op, T([1, 1, 30, 50]), 1.0, memory_config=L1)
    yield "fill-pad/height-sharded", call(op, T([1, 1, 64, 64], m=height((32, 64), 2)), 1.0)
    yield "fill-pad/row-major", call(op, T([1, 1, 30, 50], layout="ROW_MAJOR"), 1.0)
    yield "fill-pad/host", call(op, host([1, 1, 30, 50], layout="TILE"), 1.0)
