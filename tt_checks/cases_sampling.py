"""Hand-written corpus cases: on-device sampling (ttnn.sampling over top-k candidates, ttnn.manual_seed for the
per-user random number generators), as the decode step uses them: 32 users' candidate values [1, 1, 32, W] bf16
tiles with their vocabulary ids as a ROW_MAJOR index tensor, and per-user k / p / temperature vectors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.corpus_cases import DEVICE, L1, T, call, height, host


def _rm(shape: Any, dtype: str, m: dict | None = None) -> dict:
    return T(shape, dtype, "ROW_MAJOR", **({"m": m} if m is not None else {}))


def sampling() -> Iterator[tuple[str, dict]]:
    op = "sampling"
    users, w = 32, 64

    def s(values: dict | None = None, indices: dict | None = None, k: dict | None = None, p: dict | None = None,
          temp: dict | None = None, **kw: Any) -> dict:
        n = users
        return call(op, values or T([1, 1, n, w]), indices or _rm([1, 1, n, w], "INT32"),
                    k=k or _rm([n], "UINT32"), p=p or _rm([n], "BFLOAT16"), temp=temp or _rm([n], "BFLOAT16"), **kw)

    yield "sampling/ok", s()
    yield "sampling/seed", s(seed=42)
    yield "sampling/uint32-indices", s(indices=_rm([1, 1, users, w], "UINT32"))
    yield "sampling/int32-k", s(k=_rm([users], "INT32"))
    yield "sampling/w-32", call(op, T([1, 1, users, 32]), _rm([1, 1, users, 32], "INT32"), k=_rm([users], "UINT32"),
                                p=_rm([users], "BFLOAT16"), temp=_rm([users], "BFLOAT16"))
    yield "sampling/w-128", call(op, T([1, 1, users, 128]), _rm([1, 1, users, 128], "INT32"),
                                 k=_rm([users], "UINT32"), p=_rm([users], "BFLOAT16"), temp=_rm([users], "BFLOAT16"))
    yield "sampling/w-96", call(op, T([1, 1, users, 96]), _rm([1, 1, users, 96], "INT32"), k=_rm([users], "UINT32"),
                                p=_rm([users], "BFLOAT16"), temp=_rm([users], "BFLOAT16"))
    yield "sampling/w-50", call(op, T([1, 1, users, 50]), _rm([1, 1, users, 50], "INT32"), k=_rm([users], "UINT32"),
                                p=_rm([users], "BFLOAT16"), temp=_rm([users], "BFLOAT16"))
    for n in (1, 8, 33):
        yield f"sampling/users-{n}", call(op, T([1, 1, n, w]), _rm([1, 1, n, w], "INT32"), k=_rm([n], "UINT32"),
                                          p=_rm([n], "BFLOAT16"), temp=_rm([n], "BFLOAT16"))
    yield "sampling/users-8-params-32", call(op, T([1, 1, 8, w]), _rm([1, 1, 8, w], "INT32"),
                                             k=_rm([users], "UINT32"), p=_rm([users], "BFLOAT16"),
                                             temp=_rm([users], "BFLOAT16"))
    yield "sampling/batch-2", call(op, T([2, 1, users, w]), _rm([2, 1, users, w], "INT32"), k=_rm([users], "UINT32"),
                                   p=_rm([users], "BFLOAT16"), temp=_rm([users], "BFLOAT16"))
    yield "sampling/rank-3", call(op, T([1, users, w]), _rm([1, users, w], "INT32"), k=_rm([users], "UINT32"),
                                  p=_rm([users], "BFLOAT16"), temp=_rm([users], "BFLOAT16"))
    # the values: bf16 tiles, interleaved
    yield "sampling/values-fp32", s(values=T([1, 1, users, w], "FLOAT32"))
    yield "sampling/values-bfp8", s(values=T([1, 1, users, w], "BFLOAT8_B"))
    yield "sampling/values-row-major", s(values=T([1, 1, users, w], layout="ROW_MAJOR"))
    yield "sampling/values-l1", s(values=T([1, 1, users, w], m=L1))
    yield "sampling/values-height-sharded", s(values=T([1, 1, users, w], m=height((32, w), 1)))
    yield "sampling/values-host", s(values=host([1, 1, users, w], layout="TILE"))
    # the indices: 32-bit ids, ROW_MAJOR, interleaved, the values' shape
    yield "sampling/indices-uint16", s(indices=_rm([1, 1, users, w], "UINT16"))
    yield "sampling/indices-bf16", s(indices=_rm([1, 1, users, w], "BFLOAT16"))
    yield "sampling/indices-tile", s(indices=T([1, 1, users, w], "INT32"))
    yield "sampling/indices-l1", s(indices=_rm([1, 1, users, w], "INT32", L1))
    yield "sampling/indices-height-sharded", s(indices=_rm([1, 1, users, w], "INT32", height((32, w), 1)))
    yield "sampling/indices-shape", s(indices=_rm([1, 1, users, 2 * w], "INT32"))
    # k, p, temp: one entry per user, ROW_MAJOR; k 32-bit ints, p and temp bf16
    yield "sampling/k-uint16", s(k=_rm([users], "UINT16"))
    yield "sampling/k-bf16", s(k=_rm([users], "BFLOAT16"))
    yield "sampling/k-tile", s(k=T([users], "UINT32"))
    yield "sampling/k-4d", s(k=_rm([1, 1, 1, users], "UINT32"))
    yield "sampling/k-16", s(k=_rm([16], "UINT32"))
    yield "sampling/k-l1", s(k=_rm([users], "UINT32", L1))
    yield "sampling/p-fp32", s(p=_rm([users], "FLOAT32"))
    yield "sampling/p-tile", s(p=T([users]))
    yield "sampling/p-16", s(p=_rm([16], "BFLOAT16"))
    yield "sampling/temp-fp32", s(temp=_rm([users], "FLOAT32"))
    yield "sampling/temp-tile", s(temp=T([users]))
    yield "sampling/temp-16", s(temp=_rm([users // 2], "BFLOAT16"))
    # preallocated output: [1, 1, 1, users] 32-bit ids
    yield "sampling/output-ok", s(output_tensor=_rm([1, 1, 1, users], "UINT32"))
    yield "sampling/output-int32", s(output_tensor=_rm([1, 1, 1, users], "INT32"))
    yield "sampling/output-bf16", s(output_tensor=_rm([1, 1, 1, users], "BFLOAT16"))
    yield "sampling/output-shape", s(output_tensor=_rm([1, 1, users, 1], "UINT32"))
    yield "sampling/output-tile", s(output_tensor=T([1, 1, 1, users], "UINT32"))
    yield "sampling/output-height-sharded", s(output_tensor=_rm([1, 1, 1, users], "UINT32", height((1, users), 1)))


def manual_seed() -> Iterator[tuple[str, dict]]:
    op = "manual_seed"
    yield "manual-seed/int", call(op, 42, device=DEVICE)
    yield "manual-seed/int-user", call(op, 42, device=DEVICE, user_ids=3)
    yield "manual-seed/tensors", call(op, _rm([32], "UINT32"), user_ids=_rm([32], "UINT32"))
    yield "manual-seed/tensors-8", call(op, _rm([8], "UINT32"), user_ids=_rm([8], "UINT32"))
    yield "manual-seed/tensor-no-users", call(op, _rm([32], "UINT32"))
    yield "manual-seed/int32-seeds", call(op, _rm([32], "INT32"), user_ids=_rm([32], "UINT32"))
    yield "manual-seed/int32-users", call(op, _rm([32], "UINT32"), user_ids=_rm([32], "INT32"))
    yield "manual-seed/tile-seeds", call(op, T([32], "UINT32"), user_ids=_rm([32], "UINT32"))
    yield "manual-seed/shape-mismatch", call(op, _rm([32], "UINT32"), user_ids=_rm([16], "UINT32"))
    yield "manual-seed/users-64", call(op, _rm([64], "UINT32"), user_ids=_rm([64], "UINT32"))
    yield "manual-seed/l1", call(op, _rm([32], "UINT32", L1), user_ids=_rm([32], "UINT32", L1))
    yield "manual-seed/no-device", call(op, 42)
    yield "manual-seed/int-user-31", call(op, 42, device=DEVICE, user_ids=31)
    yield "manual-seed/int-user-32", call(op, 42, device=DEVICE, user_ids=32)
    yield "manual-seed/int-users-tensor", call(op, 42, device=DEVICE, user_ids=_rm([8], "UINT32"))
    yield "manual-seed/tensor-int-user", call(op, _rm([32], "UINT32"), user_ids=3)
    yield "manual-seed/tile-users", call(op, _rm([32], "UINT32"), user_ids=T([32], "UINT32"))
    yield "manual-seed/2d", call(op, _rm([1, 32], "UINT32"), user_ids=_rm([1, 32], "UINT32"))
    yield "manual-seed/shape-differs", call(op, _rm([1, 32], "UINT32"), user_ids=_rm([32], "UINT32"))


def cases() -> Iterator[tuple[str, dict]]:
    yield from sampling()
    yield from manual_seed()
