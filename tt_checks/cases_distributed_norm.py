"""Hand-written corpus cases: the distributed RMSNorm pair tensor parallelism runs on a fractured residual
(tt_transformers' tt_distributed_rmsnorm): rms_norm_pre_all_gather (each chip's per-row sum of x^2 over its columns,
one tile column wide) and rms_norm_post_all_gather (x * rsqrt(mean over the gathered stats + eps) * weight). Both are
single-chip ops, so they are recorded on the N150 like every other case; the all_gather between them is a CCL case
(tests/sim/test_ccl.py). Valid calls as the model makes them (prefill rows of a [1, 1, S, dim / N] residual in DRAM,
the weight [1, 1, dim / N / 32, 32] row-major sticks), and the calls that break each rule next to them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.cases_eltwise import dt
from tt_checks.corpus_cases import L1, T, call, host, obj, width

X = [1, 1, 128, 128]  # a prefill chunk of 128 rows, 128 columns per chip
STATS = [1, 1, 128, 64]  # two chips' stats gathered: one tile column each
W_RM = [1, 1, 4, 32]  # the weight as row-major sticks for 128 columns
KERNEL = obj("WormholeComputeKernelConfig", math_fidelity={"t": "enum", "v": "MathFidelity.HiFi2"},
             math_approx_mode=False, fp32_dest_acc_en=True, packer_l1_acc=True)
KERNEL16 = obj("WormholeComputeKernelConfig", math_fidelity={"t": "enum", "v": "MathFidelity.HiFi2"},
               math_approx_mode=False, fp32_dest_acc_en=False, packer_l1_acc=True)
WS = width((32, 32), 4)  # [1, 1, 32, 128] width-sharded over 4 cores
SHARDED_PC = obj("LayerNormShardedMultiCoreProgramConfig", compute_with_storage_grid_size=obj("CoreCoord", x=4, y=1),
                 subblock_w=1, block_h=1, block_w=1, inplace=False)


def pre(x: Any, **kw: Any) -> dict:
    return call("rms_norm_pre_all_gather", x, **kw)


def post(x: Any, stats: Any, **kw: Any) -> dict:
    return call("rms_norm_post_all_gather", x, stats, **kw)


def pre_cases() -> Iterator[tuple[str, dict]]:
    p = "rms-norm-pre"
    yield f"{p}/ok", pre(T(X))
    yield f"{p}/model", pre(T(X), compute_kernel_config=KERNEL, dtype=dt("BFLOAT16"))
    yield f"{p}/decode-rows", pre(T([1, 1, 32, 128]))
    yield f"{p}/wide", pre(T([1, 1, 32, 1024]))
    yield f"{p}/fp32", pre(T(X, "FLOAT32"))
    yield f"{p}/fp32-kernel", pre(T(X, "FLOAT32"), compute_kernel_config=KERNEL)
    yield f"{p}/fp32-kernel-no-fp32-acc", pre(T(X, "FLOAT32"), compute_kernel_config=KERNEL16)
    yield f"{p}/fp32-row-major", pre(T(X, "FLOAT32", "ROW_MAJOR"))
    yield f"{p}/bfp8", pre(T(X, "BFLOAT8_B"))
    yield f"{p}/dtype-fp32", pre(T(X), dtype=dt("FLOAT32"))
    yield f"{p}/dtype-bfp8", pre(T(X), dtype=dt("BFLOAT8_B"))
    yield f"{p}/l1", pre(T(X, m=L1))
    yield f"{p}/to-l1", pre(T(X), memory_config=L1)
    yield f"{p}/batch", pre(T([2, 3, 32, 64]))
    yield f"{p}/rank3", pre(T([1, 32, 64]))
    yield f"{p}/rank2", pre(T([32, 64]))
    yield f"{p}/unaligned", pre(T([1, 1, 30, 50]))
    yield f"{p}/row-major", pre(T(X, layout="ROW_MAJOR"))
    yield f"{p}/int32", pre(T(X, "INT32"))
    yield f"{p}/uint32", pre(T(X, "UINT32"))
    yield f"{p}/bfp4", pre(T(X, "BFLOAT4_B"))
    yield f"{p}/residual", pre(T(X), residual_input_tensor=T(X))
    yield f"{p}/residual-row-major", pre(T(X), residual_input_tensor=T(X, layout="ROW_MAJOR"))
    yield f"{p}/residual-other-shape", pre(T(X), residual_input_tensor=T([1, 1, 64, 128]))
    yield f"{p}/width-sharded", pre(T([1, 1, 32, 128], m=WS))
    yield f"{p}/welford", pre(T(X), program_config=obj("LayerNormDefaultProgramConfig", use_welford=True))
    yield f"{p}/default-config", pre(T(X), program_config=obj("LayerNormDefaultProgramConfig"))
    yield f"{p}/2d-grid", pre(T(X), use_2d_core_grid=True)


def post_cases() -> Iterator[tuple[str, dict]]:
    p = "rms-norm-post"
    w = T(W_RM, layout="ROW_MAJOR")
    yield f"{p}/ok", post(T(X), T(STATS))
    yield f"{p}/model", post(T(X), T(STATS), epsilon=1e-5, weight=w, compute_kernel_config=KERNEL)
    yield f"{p}/one-chip-stats", post(T(X), T([1, 1, 128, 32]))
    yield f"{p}/eight-chips-stats", post(T(X), T([1, 1, 128, 256]))
    yield f"{p}/stats-narrow", post(T(X), T([1, 1, 128, 16]))
    yield f"{p}/stats-fewer-rows", post(T(X), T([1, 1, 64, 64]))
    yield f"{p}/stats-batch", post(T(X), T([2, 1, 128, 64]))
    yield f"{p}/stats-dim1", post(T(X), T([1, 2, 128, 64]))
    yield f"{p}/stats-row-major", post(T(X), T(STATS, layout="ROW_MAJOR"))
    yield f"{p}/stats-int32", post(T(X), T(STATS, "INT32"))
    yield f"{p}/stats-fp32", post(T(X), T(STATS, "FLOAT32"))
    yield f"{p}/stats-fp32-kernel", post(T(X), T(STATS, "FLOAT32"), compute_kernel_config=KERNEL)
    yield f"{p}/input-fp32-kernel", post(T(X, "FLOAT32"), T(STATS), compute_kernel_config=KERNEL)
    yield f"{p}/input-fp32-kernel-no-fp32-acc", post(T(X, "FLOAT32"), T(STATS), compute_kernel_config=KERNEL16)
    yield f"{p}/input-fp32-stats-row-major", post(T(X, "FLOAT32"), T(STATS, layout="ROW_MAJOR"))
    yield f"{p}/input-row-major-stats-int32", post(T(X, layout="ROW_MAJOR"), T(STATS, "INT32"))
    yield f"{p}/stats-bfp8", post(T(X), T(STATS, "BFLOAT8_B"))
    yield f"{p}/stats-host", post(T(X), host(STATS, layout="TILE"))
    yield f"{p}/stats-l1", post(T(X), T(STATS, m=L1))
    yield f"{p}/input-row-major", post(T(X, layout="ROW_MAJOR"), T(STATS))
    yield f"{p}/input-int32", post(T(X, "INT32"), T(STATS))
    yield f"{p}/input-fp32", post(T(X, "FLOAT32"), T(STATS))
    yield f"{p}/input-bfp8", post(T(X, "BFLOAT8_B"), T(STATS))
    yield f"{p}/input-l1", post(T(X, m=L1), T(STATS))
    yield f"{p}/to-l1", post(T(X), T(STATS), memory_config=L1)
    yield f"{p}/dtype-fp32", post(T(X), T(STATS), dtype=dt("FLOAT32"))
    yield f"{p}/dtype-bfp8", post(T(X), T(STATS), dtype=dt("BFLOAT8_B"))
    yield f"{p}/unaligned", post(T([1, 1, 30, 50]), T([1, 1, 30, 64]))
    yield f"{p}/weight-rm-fp32", post(T(X), T(STATS), weight=T(W_RM, "FLOAT32", "ROW_MAJOR"))
    yield f"{p}/weight-rm-short", post(T(X), T(STATS), weight=T([1, 1, 2, 32], layout="ROW_MAJOR"))
    yield f"{p}/weight-rm-flat", post(T(X), T(STATS), weight=T([128], layout="ROW_MAJOR"))
    yield f"{p}/weight-rm-uint32", post(T(X), T(STATS), weight=T(W_RM, "UINT32", "ROW_MAJOR"))
    yield f"{p}/weight-rm-host", post(T(X), T(STATS), weight=host(W_RM))
    yield f"{p}/weight-tile", post(T(X), T(STATS), weight=T([1, 1, 1, 128]))
    yield f"{p}/weight-tile-narrow", post(T(X), T(STATS), weight=T([1, 1, 1, 64]))
    yield f"{p}/weight-tile-32-rows", post(T(X), T(STATS), weight=T([1, 1, 32, 128]))
    yield f"{p}/weight-tile-64-rows", post(T(X), T(STATS), weight=T([1, 1, 64, 128]))
    yield f"{p}/weight-tile-bfp8", post(T(X), T(STATS), weight=T([1, 1, 1, 128], "BFLOAT8_B"))
    yield f"{p}/bias-rm", post(T(X), T(STATS), weight=w, bias=T(W_RM, layout="ROW_MAJOR"))
    yield f"{p}/bias-rm-short", post(T(X), T(STATS), weight=w, bias=T([1, 1, 2, 32], layout="ROW_MAJOR"))
    yield f"{p}/bias-rm-uint32", post(T(X), T(STATS), weight=w, bias=T(W_RM, "UINT32", "ROW_MAJOR"))
    yield f"{p}/bias-tile-bfp8", post(T(X), T(STATS), bias=T([1, 1, 1, 128], "BFLOAT8_B"))
    yield f"{p}/bias-tile-64-rows", post(T(X), T(STATS), bias=T([1, 1, 64, 128]))
    yield f"{p}/bias-tile-32-rows", post(T(X), T(STATS), bias=T([1, 1, 32, 128]))
    yield f"{p}/bias-tile-narrow", post(T(X), T(STATS), bias=T([1, 1, 1, 64]))
    yield f"{p}/width-sharded-config", post(T([1, 1, 32, 128], m=WS), T([1, 1, 32, 64]), program_config=SHARDED_PC)
    yield f"{p}/width-sharded", post(T([1, 1, 32, 128], m=WS), T([1, 1, 32, 64]))
    yield f"{p}/welford", post(T(X), T(STATS), program_config=obj("LayerNormDefaultProgramConfig", use_welford=True))
    yield f"{p}/2d-grid", post(T(X), T(STATS), use_2d_core_grid=True)


def cases() -> Iterator[tuple[str, dict]]:
    yield from pre_cases()
    yield from post_cases()
