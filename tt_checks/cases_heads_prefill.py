"""Hand-written corpus cases: nlp_create_qkv_heads_falcon7b (see tt_checks/corpus_cases.py for the encoding helpers).

Falcon-7B's fixed head split: a fused QKV [B, 1, S, 4672] -> Q [B, 71, S, 64], K and V [B, 1, S, 64], interleaved;
the valid calls and, next to them, the call that breaks each rule the device checks.
"""

from __future__ import annotations

from collections.abc import Iterator

from tt_checks.corpus_cases import L1, T, call, height, host


def cases() -> Iterator[tuple[str, dict]]:
    op = "experimental.nlp_create_qkv_heads_falcon7b"
    x = T([1, 1, 128, 4672])
    yield "falcon7b-heads/ok", call(op, x)
    yield "falcon7b-heads/batch-2-bfp8-l1-out", call(op, T([2, 1, 64, 4672], "BFLOAT8_B"), memory_config=L1)
    yield "falcon7b-heads/fp32-l1-in", call(op, T([1, 1, 32, 4672], "FLOAT32", m=L1))
    yield "falcon7b-heads/seq-100", call(op, T([1, 1, 100, 4672]))
    yield "falcon7b-heads/host", call(op, host([1, 1, 128, 4672], layout="TILE"))
    yield "falcon7b-heads/uint32", call(op, T([1, 1, 128, 4672], "UINT32"))
    yield "falcon7b-heads/row-major", call(op, T([1, 1, 128, 4672], layout="ROW_MAJOR"))
    yield "falcon7b-heads/width-4608", call(op, T([1, 1, 128, 4608]))
    yield "falcon7b-heads/dim1-2", call(op, T([1, 2, 128, 4672]))
    yield "falcon7b-heads/height-sharded-out", call(op, x, memory_config=height((128, 64), 71))
