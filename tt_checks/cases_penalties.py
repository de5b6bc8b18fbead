"""Hand-written corpus cases: the ops on-device penalties and logprobs use (see tt_checks/corpus_cases.py for the
encoding helpers). Comparisons and subtraction are the same binary_ng device op as add/mul; exp and log the same
unary device op as silu; sum the generic reduction. Each op's valid calls as the decode step makes them (logits
[1, 1, 32, V] against per-user [1, 1, 32, 1] columns or a [1, 1, 1, V] row, scalars), and the calls that break each
rule next to them. sum's cases keep to interleaved tensors with keepdim=True, what the simulator models (the real
op also takes sharded inputs, and dropping the dim costs it 512 B more DRAM than the simulator counts)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.cases_eltwise import HS, TALL, X, dt
from tt_checks.corpus_cases import L1, T, call, host

COL = [1, 1, 32, 1]
ROW = [1, 1, 1, 64]


def binary(op: str) -> Iterator[tuple[str, dict]]:
    def c(a: Any, b: Any, **kw: Any) -> dict:
        return call(op, a, b, **kw)

    p = op
    yield f"{p}/ok", c(T(X), T(X))
    yield f"{p}/fp32", c(T(X, "FLOAT32"), T(X, "FLOAT32"))
    yield f"{p}/l1", c(T(X, m=L1), T(X, m=L1))
    yield f"{p}/scalar", c(T(X), 0.0)
    yield f"{p}/fp32-scalar", c(T(X, "FLOAT32"), 0.0)
    yield f"{p}/bcast-col", c(T(X), T(COL))
    yield f"{p}/fp32-bcast-col", c(T(X, "FLOAT32"), T(COL, "FLOAT32"))
    yield f"{p}/bcast-row-col", c(T(ROW, "FLOAT32"), T(COL, "FLOAT32"))
    yield f"{p}/bcast-col-row", c(T(COL, "FLOAT32"), T(ROW, "FLOAT32"))
    yield f"{p}/bf16-fp32", c(T(X), T(X, "FLOAT32"))
    yield f"{p}/int32", c(T(X, "INT32"), T(X, "INT32"))
    yield f"{p}/uint32", c(T(X, "UINT32"), T(X, "UINT32"))
    yield f"{p}/int32-bf16", c(T(X, "INT32"), T(X))
    yield f"{p}/bf16-int32", c(T(X), T(X, "INT32"))
    yield f"{p}/int32-uint32", c(T(X, "INT32"), T(X, "UINT32"))
    yield f"{p}/int32-scalar", c(T(X, "INT32"), 2)
    yield f"{p}/int32-scalar-fraction", c(T(X, "INT32"), 2.5)
    yield f"{p}/uint8-row-major", c(T(X, "UINT8", "ROW_MAJOR"), T(X, "UINT8", "ROW_MAJOR"))
    yield f"{p}/bf16-uint8", c(T(X), T(X, "UINT8"))
    yield f"{p}/bcast-batch-2-vs-3", c(T([2, 1, 32, 64]), T([3, 1, 32, 64]))
    yield f"{p}/bcast-w-64-vs-32", c(T(X), T([1, 1, 32, 32]))
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
    yield f"{p}/dtype-fp32", c(T(X), T(X), dtype=dt("FLOAT32"))
    yield f"{p}/height-sharded", c(T(TALL, m=HS), T(TALL, m=HS))
    yield f"{p}/wide-fp32-bcast-col", c(T([1, 1, 32, 4096], "FLOAT32"), T(COL, "FLOAT32"))


def unary(op: str) -> Iterator[tuple[str, dict]]:
    p = op
    yield f"{p}/ok", call(op, T(X))
    yield f"{p}/fp32", call(op, T(X, "FLOAT32"))
    yield f"{p}/bfp8", call(op, T(X, "BFLOAT8_B"))
    yield f"{p}/row-major", call(op, T(X, layout="ROW_MAJOR"))
    yield f"{p}/int32", call(op, T(X, "INT32"))
    yield f"{p}/uint32", call(op, T(X, "UINT32"))
    yield f"{p}/uint16", call(op, T(X, "UINT16"))
    yield f"{p}/uint8", call(op, T(X, "UINT8"))
    yield f"{p}/int32-row-major", call(op, T(X, "INT32", "ROW_MAJOR"))
    yield f"{p}/int32-output-row-major", call(op, T(X, "INT32"), output_tensor=T(X, "INT32", "ROW_MAJOR"))
    yield f"{p}/l1", call(op, T(X, m=L1))
    yield f"{p}/col", call(op, T(COL, "FLOAT32"))
    yield f"{p}/height-sharded", call(op, T(TALL, m=HS))
    yield f"{p}/output-tensor", call(op, T(X), output_tensor=T(X))
    yield f"{p}/output-tensor-fp32", call(op, T(X), output_tensor=T(X, "FLOAT32"))
    yield f"{p}/output-tensor-int32", call(op, T(X), output_tensor=T(X, "INT32"))
    yield f"{p}/output-tensor-wrong-shape", call(op, T(X), output_tensor=T([1, 1, 32, 32]))
    yield f"{p}/output-tensor-row-major", call(op, T(X), output_tensor=T(X, layout="ROW_MAJOR"))


def reduce_sum() -> Iterator[tuple[str, dict]]:
    op = "sum"
    yield "sum/ok", call(op, T(X), dim=-1, keepdim=True)
    yield "sum/fp32", call(op, T(X, "FLOAT32"), dim=-1, keepdim=True)
    yield "sum/bfp8", call(op, T(X, "BFLOAT8_B"), dim=-1, keepdim=True)
    yield "sum/int32", call(op, T(X, "INT32"), dim=-1, keepdim=True)
    yield "sum/uint32", call(op, T(X, "UINT32"), dim=-1, keepdim=True)
    yield "sum/uint16", call(op, T(X, "UINT16"), dim=-1, keepdim=True)
    yield "sum/row-major", call(op, T(X, layout="ROW_MAJOR"), dim=-1, keepdim=True)
    yield "sum/host", call(op, host(X, layout="TILE"), dim=-1, keepdim=True)
    yield "sum/l1", call(op, T(X, m=L1), dim=-1, keepdim=True)
    yield "sum/to-l1", call(op, T(X), dim=-1, keepdim=True, memory_config=L1)
    yield "sum/dim-2", call(op, T(X), dim=-2, keepdim=True)
    yield "sum/dim3", call(op, T(X), dim=3, keepdim=True)
    yield "sum/dim4", call(op, T(X), dim=4, keepdim=True)
    yield "sum/dim-5", call(op, T(X), dim=-5, keepdim=True)
    yield "sum/dim-none", call(op, T(X))
    yield "sum/dims-list", call(op, T(X), dim={"t": "list", "v": [2, 3]}, keepdim=True)
    yield "sum/unaligned", call(op, T([1, 1, 30, 50]), dim=-1, keepdim=True)
    yield "sum/wide", call(op, T([1, 1, 32, 4096], "FLOAT32"), dim=-1, keepdim=True)
    yield "sum/rank1", call(op, T([64]), dim=-1, keepdim=True)
    yield "sum/rank2", call(op, T([32, 64]), dim=-1, keepdim=True)
    yield "sum/scalar", call(op, T(X), dim=-1, keepdim=True, scalar=2.0)
    yield "sum/correction", call(op, T(X), dim=-1, keepdim=True, correction=True)
    yield "sum/batch", call(op, T([2, 3, 32, 64]), dim=-1, keepdim=True)


def cases() -> Iterator[tuple[str, dict]]:
    for op in ("sub", "gt", "ge", "eq"):
        yield from binary(op)
    for op in ("exp", "log"):
        yield from unary(op)
    yield from reduce_sum()
