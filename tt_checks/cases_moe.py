"""Hand-written corpus cases: the mixture-of-experts ops (see tt_checks/corpus_cases.py for the encoding helpers).

`sparse_matmul` as the MoE layer calls it: a group of 32 tokens [1, G, 32, H] against every expert's weight
[1, E, H, I] (dense A, sparse B: one product per (group, expert) whose sparsity entry is non-zero), and the
down projection with the expert axis on A (sparse A, dense B). The program config must be the 1-D multicast one
with mcast_in0; the sparsity tensor is ROW_MAJOR with one entry per product. No case passes an nnz the op accepts:
the corpus's tensors hold zeros, and an nnz other than the count of non-zero entries hangs a device (the simulator
refuses it; tests/sim/test_sparse_matmul.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.corpus_cases import T, call, coord, obj


def pc1d(k_tiles: int, n_tiles: int, cores: int = 4, in0_block_w: int = 1, sub_w: int = 1, per_core_m: int = 1,
         mcast_in0: bool = True, per_core_n: int | None = None, rows: int = 1) -> dict:
    n = per_core_n if per_core_n is not None else -(-n_tiles // (cores * rows))
    return obj("MatmulMultiCoreReuseMultiCast1DProgramConfig", compute_with_storage_grid_size=coord(cores, rows),
               in0_block_w=in0_block_w, out_subblock_h=1, out_subblock_w=sub_w, out_block_h=per_core_m,
               out_block_w=n, per_core_M=per_core_m, per_core_N=n, fuse_batch=False, fused_activation=None,
               mcast_in0=mcast_in0)


def _rm(shape: Any, dtype: str = "BFLOAT16") -> dict:
    return T(shape, dtype, "ROW_MAJOR")


def sparse_matmul() -> Iterator[tuple[str, dict]]:
    op = "sparse_matmul"
    e, h, i = 8, 256, 128
    pc = pc1d(h // 32, i // 32)

    def dense_a(a: dict | None = None, b: dict | None = None, sparsity: dict | None = None, **kw: Any) -> dict:
        kw.setdefault("program_config", pc)
        return call(op, a or T([1, 1, 32, h]), b or T([1, e, h, i]), sparsity=sparsity or _rm([1, 1, 1, e]), **kw)

    yield "sparse-matmul/ok", dense_a()
    yield "sparse-matmul/groups-2", dense_a(T([1, 2, 32, h]), sparsity=_rm([1, 2, 1, e]))
    yield "sparse-matmul/nnz-0", dense_a(nnz=0)
    yield "sparse-matmul/nnz-9", dense_a(nnz=9)
    yield "sparse-matmul/fp32-out", dense_a(dtype={"t": "enum", "v": "DataType.FLOAT32"})
    yield "sparse-matmul/fp32-a", dense_a(T([1, 1, 32, h], "FLOAT32"))
    yield "sparse-matmul/bfp8-b", dense_a(b=T([1, e, h, i], "BFLOAT8_B"))
    yield "sparse-matmul/bfp4-b", dense_a(b=T([1, e, h, i], "BFLOAT4_B"))
    yield "sparse-matmul/uint32-a", dense_a(T([1, 1, 32, h], "UINT32"))
    yield "sparse-matmul/uint32-b", dense_a(b=T([1, e, h, i], "UINT32"))
    yield "sparse-matmul/a-row-major", dense_a(T([1, 1, 32, h], layout="ROW_MAJOR"))
    yield "sparse-matmul/b-row-major", dense_a(b=T([1, e, h, i], layout="ROW_MAJOR"))
    yield "sparse-matmul/sparsity-tile", dense_a(sparsity=T([1, 1, 1, e]))
    yield "sparse-matmul/sparsity-fp32", dense_a(sparsity=_rm([1, 1, 1, e], "FLOAT32"))
    yield "sparse-matmul/sparsity-uint32", dense_a(sparsity=_rm([1, 1, 1, e], "UINT32"))
    yield "sparse-matmul/sparsity-volume", dense_a(sparsity=_rm([1, 1, 1, 2 * e]))
    yield "sparse-matmul/k-mismatch", dense_a(T([1, 1, 32, 2 * h]))
    yield "sparse-matmul/m-64", dense_a(T([1, 1, 64, h]))
    yield "sparse-matmul/m-64-per-core-2", dense_a(T([1, 1, 64, h]), program_config=pc1d(h // 32, i // 32,
                                                                                         per_core_m=2))
    yield "sparse-matmul/m-64-8-cores", dense_a(T([1, 1, 64, h]), program_config=pc1d(h // 32, i // 32, cores=8))
    yield "sparse-matmul/m-16", dense_a(T([1, 1, 16, h]))
    yield "sparse-matmul/n-96-on-4-cores", dense_a(b=T([1, e, h, 96]), program_config=pc1d(h // 32, 3, cores=4))
    yield "sparse-matmul/n-256-on-4-cores", dense_a(b=T([1, e, h, 256]), program_config=pc1d(h // 32, 8, cores=4))
    yield "sparse-matmul/n-256-per-core-1", dense_a(b=T([1, e, h, 256]), program_config=pc1d(h // 32, 8, cores=4,
                                                                                              per_core_n=1))
    yield "sparse-matmul/neither-sparse", dense_a(is_input_b_sparse=False)
    yield "sparse-matmul/mcast-in1", dense_a(program_config=pc1d(h // 32, i // 32, mcast_in0=False))
    yield "sparse-matmul/in0-block-w-3", dense_a(program_config=pc1d(h // 32, i // 32, in0_block_w=3))
    yield "sparse-matmul/in0-block-w-2", dense_a(program_config=pc1d(h // 32, i // 32, in0_block_w=2))
    yield "sparse-matmul/subblock-w-3", dense_a(program_config=pc1d(h // 32, 3 * 4, sub_w=3),
                                                b=T([1, e, h, 3 * 4 * 32]))
    yield "sparse-matmul/out-block-w-not-multiple", dense_a(program_config=pc1d(h // 32, 12, sub_w=2, per_core_n=3),
                                                            b=T([1, e, h, 12 * 32]))
    # the output blocks must fill whole rows of the grid (or part of one)
    for blocks in (6, 12, 16):
        yield f"sparse-matmul/{blocks}-blocks-on-8x2", dense_a(b=T([1, e, h, blocks * 32]),
                                                               program_config=pc1d(h // 32, blocks, cores=8, rows=2,
                                                                                   per_core_n=1))
    yield "sparse-matmul/one-core", dense_a(program_config=pc1d(h // 32, i // 32, cores=1))
    yield "sparse-matmul/grid-9", dense_a(program_config=pc1d(h // 32, i // 32, cores=9))
    yield "sparse-matmul/2d-config", dense_a(program_config=obj(
        "MatmulMultiCoreReuseMultiCastProgramConfig", compute_with_storage_grid_size=coord(4, 1), in0_block_w=1,
        out_subblock_h=1, out_subblock_w=1, out_block_h=1, out_block_w=1, per_core_M=1, per_core_N=1,
        transpose_mcast=False, fused_activation=None, fuse_batch=False))
    # the down projection: expert axis on A (sparse A, dense B)
    pc_down = pc1d(i // 32, h // 32)

    def sparse_a(a: dict | None = None, sparsity: dict | None = None, **kw: Any) -> dict:
        kw.setdefault("program_config", pc_down)
        return call(op, a or T([1, e, 32, i]), T([1, e, i, h]), sparsity=sparsity or _rm([1, 1, 1, e]),
                    is_input_a_sparse=True, is_input_b_sparse=False, **kw)

    yield "sparse-matmul/sparse-a", sparse_a()
    yield "sparse-matmul/sparse-a-groups-2", sparse_a(T([2, e, 32, i]), _rm([1, 1, 2, e]))
    yield "sparse-matmul/sparse-a-volume", sparse_a(T([2, e, 32, i]))
    yield "sparse-matmul/both-sparse", call(op, T([1, e, 32, h]), T([1, e, h, i]), sparsity=_rm([1, 1, 1, e]),
                                            is_input_a_sparse=True, is_input_b_sparse=True, program_config=pc)


def cases() -> Iterator[tuple[str, dict]]:
    yield from sparse_matmul()
