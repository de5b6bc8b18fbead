"""Hand-written corpus cases at the widths real checkpoints have (issue 18): DRAM-sharded decode matmuls (how the
input's cores, in0_block_w, per_core_N and the weight's per-bank strip must relate, and where the program's circular
buffers stop fitting L1) and the interleaved rms_norm of a wide row (a row-major gamma holds whole rows in L1)."""

from __future__ import annotations

from collections.abc import Iterator

from tt_checks.corpus_cases import TILE, T, call, enum, mem, obj, rows

BANKS = 12  # Wormhole (the corpus is recorded on the mock N150)


def pcd(in0: int, n: int, m: int = 1) -> dict:
    return obj("MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig", in0_block_w=in0, per_core_M=m,
               per_core_N=n, fused_activation=None)


def dram_mm(kt: int, cores: int, nt: int, in0: int, per_core_n: int, shard: int | None = None,
            w_dtype: str = "BFLOAT8_B", per_core_k: int | None = None, out: str = "BFLOAT16", **kw) -> dict:
    """[32, kt tiles] width-sharded on `cores` cores (per_core_k tiles each, kt / cores by default) x a weight
    [kt, nt] tiles width-sharded over the 12 banks `shard` tiles each (ceil(nt / 12) by default)."""
    pk = per_core_k or kt // cores
    shard = shard or -(-nt // BANKS)
    x = T([1, 1, TILE, kt * TILE], m=mem("WIDTH_SHARDED", "L1", rows(cores), (TILE, pk * TILE)))
    w = T([1, 1, kt * TILE, nt * TILE], w_dtype, m=mem("WIDTH_SHARDED", "DRAM", [(0, 0, BANKS - 1, 0)],
                                                       (kt * TILE, shard * TILE)))
    return call("linear", x, w, program_config=pcd(in0, per_core_n), memory_config=mem("WIDTH_SHARDED", "L1"),
                dtype=enum(f"DataType.{out}"), **kw)


def cases() -> Iterator[tuple[str, dict]]:
    yield from dram_matmul()
    yield from wide_norm()


def dram_matmul() -> Iterator[tuple[str, dict]]:
    p = "matmul/dram-sharded/"
    # The input's cores must split K evenly: Qwen2.5-0.5B's MLP hidden (152 tiles), SmolLM2-360M's (80).
    yield p + "k152-on-38x4", dram_mm(152, 38, 28, 4, 1)
    yield p + "k152-on-8x19", dram_mm(152, 8, 28, 1, 4)
    yield p + "k80-on-40x2", dram_mm(80, 40, 30, 2, 1)
    yield p + "k80-on-27x3", dram_mm(80, 27, 30, 3, 2, per_core_k=3)
    yield p + "k152-on-26x6-bw5", dram_mm(152, 26, 28, 5, 2, per_core_k=6)
    # in0_block_w and the per-core width must divide one another.
    yield p + "k28-on-4x7-bw2", dram_mm(28, 4, 152, 2, 38)
    yield p + "k28-on-4x7-bw7", dram_mm(28, 4, 152, 7, 38)
    yield p + "k28-on-28x1-bw4", dram_mm(28, 28, 152, 4, 6)
    yield p + "k28-on-14x2-bw14", dram_mm(28, 14, 152, 14, 6)
    yield p + "k28-on-14x2-bw3", dram_mm(28, 14, 152, 3, 6, per_core_k=2)
    # per_core_N only sets the output's storage cores: any value whose cores fit the 64-core grid.
    yield p + "n152-per-core-13", dram_mm(28, 28, 152, 1, 13)
    yield p + "n152-per-core-3", dram_mm(28, 28, 152, 1, 3)
    yield p + "n152-per-core-2", dram_mm(28, 28, 152, 1, 2)
    # The weight's strip per bank: ceil(N / 12) or wider; narrower does not hold N on 12 banks.
    yield p + "n152-shard-16", dram_mm(28, 28, 152, 1, 6, shard=16)
    yield p + "n152-shard-12", dram_mm(28, 28, 152, 1, 6, shard=12)
    # Circular buffers: the weight stream is 3 x in0_block_w x strip tiles per core; wide strips need narrow blocks.
    # K 160 tiles (hidden 5120) on 32 cores, N 864 (MLP 27648): strip 72 tiles.
    for bw in (5, 4, 2, 1):
        yield p + f"k160-n864-bfp8-bw{bw}", dram_mm(160, 32, 864, bw, 27)
    for bw in (4, 2, 1):
        yield p + f"k128-n640-bf16-bw{bw}", dram_mm(128, 32, 640, bw, 20, w_dtype="BFLOAT16")
        yield p + f"k128-n448-bfp8-bw{bw}", dram_mm(128, 32, 448, bw, 14)
        yield p + f"k128-n448-bfp8-fp32acc-bw{bw}", dram_mm(128, 32, 448, bw, 14, compute_kernel_config=obj(
            "WormholeComputeKernelConfig", math_fidelity=enum("MathFidelity.HiFi4"), math_approx_mode=False,
            fp32_dest_acc_en=True, packer_l1_acc=True))
    for bw in (8, 4, 2, 1):
        yield p + f"k256-n448-bf16-bw{bw}", dram_mm(256, 32, 448, bw, 14, w_dtype="BFLOAT16")
        yield p + f"k128-n1024-bfp4-bw{bw}", dram_mm(128, 32, 1024, bw, 32, w_dtype="BFLOAT4_B")


def wide_norm() -> Iterator[tuple[str, dict]]:
    def kc(fp32_acc: bool) -> dict:
        return obj("WormholeComputeKernelConfig", math_fidelity=enum("MathFidelity.HiFi2"), math_approx_mode=False,
                   fp32_dest_acc_en=fp32_acc, packer_l1_acc=True)

    def rn(width: int, fp32_acc: bool, gamma: str = "ROW_MAJOR", dtype: str = "BFLOAT16", rows: int = 128,
           **kw) -> dict:
        w = T([1, 1, width // TILE, TILE], layout="ROW_MAJOR") if gamma == "ROW_MAJOR" else T([1, 1, 1, width])
        return call("rms_norm", T([1, 1, rows, width], dtype), epsilon=1e-5, weight=w,
                    compute_kernel_config=kc(fp32_acc), **kw)

    p = "rms-norm/whole-row-"
    yield p + "4096-fp32-acc", rn(4096, True)
    yield p + "5120-fp32-acc", rn(5120, True)
    yield p + "5120-bf16-acc", rn(5120, False)
    yield p + "6144-bf16-acc", rn(6144, False)
    yield p + "8192-bf16-acc", rn(8192, False)
    yield p + "5120-tile-gamma", rn(5120, True, gamma="TILE")
    yield p + "16384-tile-gamma", rn(16384, True, gamma="TILE", rows=32)
    yield p + "5120-fp32-in", rn(5120, True, dtype="FLOAT32")
    yield p + "4096-fp32-in-bf16-acc", rn(4096, False, dtype="FLOAT32")
    yield p + "5120-bfp8-in", rn(5120, True, dtype="BFLOAT8_B")
    yield p + "6144-bfp8-in-bf16-acc", rn(6144, False, dtype="BFLOAT8_B", rows=32)
    yield p + "4096-residual", rn(4096, True, residual_input_tensor=T([1, 1, 128, 4096]))
    yield p + "6144-residual-bf16-acc", rn(6144, False, residual_input_tensor=T([1, 1, 128, 6144]))
    yield p + "8192-2048-rows", rn(8192, True, rows=2048)
