"""Hand-written corpus cases: sdpa prefill ops (see tt_checks/corpus_cases.py for the encoding helpers).

scaled_dot_product_attention over interleaved Q [b, nqh, S, dh] and K/V [b, nkv, S, dh], and
chunked_scaled_dot_product_attention of a Q chunk over the paged K/V cache [blocks, nkv, block, dh] through a
page table [b, pages]: valid calls (sequence lengths, chunk sizes, head ratios, dtypes, memory configs) and, next to
them, the call that breaks each rule the device checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.corpus_cases import L1, T, call, coord, enum, height, host, i32, obj


def pc(q_chunk: int = 64, k_chunk: int = 64, gx: int = 8, gy: int = 8) -> dict:
    return obj("SDPAProgramConfig", compute_with_storage_grid_size=coord(gx, gy), q_chunk_size=q_chunk,
               k_chunk_size=k_chunk, exp_approx_mode=False)


# The models' prefill SDPA kernel config (HiFi4, fp32 accumulation).
HIFI4 = obj("WormholeComputeKernelConfig", math_fidelity=enum("MathFidelity.HiFi4"), math_approx_mode=False,
            fp32_dest_acc_en=True, packer_l1_acc=False)


def prefill() -> Iterator[tuple[str, dict]]:
    op = "transformer.scaled_dot_product_attention"
    q, kv = T([1, 8, 128, 64]), T([1, 2, 128, 64])  # GQA 4:1

    def sd(qq: dict = q, k: dict = kv, v: dict = kv, **kw: Any) -> dict:
        kw = {"program_config": pc(), **kw}
        return call(op, qq, k, v, **{n: x for n, x in kw.items() if x is not None})

    def nc(**kw: Any) -> dict:  # non-causal with a mask over [Sq, Sk]
        return sd(is_causal=False, **{"attn_mask": T([1, 1, 128, 128]), **kw})

    # valid: sequence lengths, chunk sizes, head ratios, dtypes, memory configs
    yield "sdpa-prefill/ok", sd()
    yield "sdpa-prefill/mha-s512-dh128-hifi4", sd(T([1, 4, 512, 128]), T([1, 4, 512, 128]), T([1, 4, 512, 128]),
                                                  program_config=pc(128, 128), compute_kernel_config=HIFI4)
    yield "sdpa-prefill/mqa-s1024-chunk256", sd(T([1, 8, 1024, 64]), T([1, 1, 1024, 64]), T([1, 1, 1024, 64]),
                                                program_config=pc(256, 256))
    yield "sdpa-prefill/no-program-config", sd(program_config=None)
    yield "sdpa-prefill/q-bfp8-kv-bfp4", sd(T([1, 8, 128, 64], "BFLOAT8_B"), T([1, 2, 128, 64], "BFLOAT4_B"),
                                            T([1, 2, 128, 64], "BFLOAT4_B"))
    yield "sdpa-prefill/seq-100", sd(T([1, 8, 100, 64]), T([1, 2, 100, 64]), T([1, 2, 100, 64]))
    yield "sdpa-prefill/sliding-window-64", sd(sliding_window_size=64)
    yield "sdpa-prefill/scale-0.1", sd(scale=0.1)
    yield "sdpa-prefill/l1-inputs", sd({**q, "mem": L1}, {**kv, "mem": L1}, {**kv, "mem": L1})
    yield "sdpa-prefill/output-height-sharded", sd(memory_config=height((128, 64), 8))
    yield "sdpa-prefill/non-causal-mask", nc()
    yield "sdpa-prefill/non-causal-k-256", sd(k=T([1, 2, 256, 64]), v=T([1, 2, 256, 64]), is_causal=False)
    # the inputs: on device, tiled, bf16/bfp8/bfp4, interleaved
    yield "sdpa-prefill/k-host", sd(k=host([1, 2, 128, 64], layout="TILE"))
    yield "sdpa-prefill/k-row-major", sd(k={**kv, "layout": "ROW_MAJOR"})
    yield "sdpa-prefill/q-fp32", sd({**q, "dtype": "FLOAT32"})
    yield "sdpa-prefill/q-height-sharded", sd({**q, "mem": height((128, 64), 8)})
    # the mask: not with causal or a sliding window; on device, tiled, bf16/bfp8/bfp4, in DRAM; [1|b, 1|nqh, Sq, Sk]
    yield "sdpa-prefill/causal-with-mask", sd(attn_mask=T([1, 1, 128, 128]))
    yield "sdpa-prefill/window-with-mask", nc(sliding_window_size=64)
    yield "sdpa-prefill/mask-host", nc(attn_mask=host([1, 1, 128, 128], layout="TILE"))
    yield "sdpa-prefill/mask-row-major", nc(attn_mask=T([1, 1, 128, 128], layout="ROW_MAJOR"))
    yield "sdpa-prefill/mask-fp32", nc(attn_mask=T([1, 1, 128, 128], "FLOAT32"))
    yield "sdpa-prefill/mask-l1", nc(attn_mask=T([1, 1, 128, 128], m=L1))
    q2, kv2 = T([2, 8, 128, 64]), T([2, 2, 128, 64])
    yield "sdpa-prefill/batch-2-mask-per-head", nc(qq=q2, k=kv2, v=kv2, attn_mask=T([2, 8, 128, 128], "BFLOAT8_B"))
    yield "sdpa-prefill/mask-batch-3", nc(qq=q2, k=kv2, v=kv2, attn_mask=T([3, 1, 128, 128]))
    yield "sdpa-prefill/mask-heads-2", nc(attn_mask=T([1, 2, 128, 128]))  # the kv heads, not Q's
    yield "sdpa-prefill/mask-q-len-64", nc(attn_mask=T([1, 1, 64, 128]))
    yield "sdpa-prefill/mask-k-len-64", nc(attn_mask=T([1, 1, 128, 64]))
    # shapes: causal needs Sq == Sk; K and V agree with each other and with Q; heads divide
    yield "sdpa-prefill/causal-k-256", sd(k=T([1, 2, 256, 64]), v=T([1, 2, 256, 64]))
    yield "sdpa-prefill/kv-batch-1", sd(q2)
    yield "sdpa-prefill/v-heads-4", sd(v=T([1, 4, 128, 64]))
    yield "sdpa-prefill/v-seq-256", sd(v=T([1, 2, 256, 64]), is_causal=False)
    yield "sdpa-prefill/k-hd-128", sd(k=T([1, 2, 128, 128]), v=T([1, 2, 128, 128]))
    yield "sdpa-prefill/9q-2kv", sd(T([1, 9, 128, 64]))
    yield "sdpa-prefill/9q-3kv", sd(T([1, 9, 128, 64]), T([1, 3, 128, 64]), T([1, 3, 128, 64]))
    yield "sdpa-prefill/2q-4kv", sd(T([1, 2, 128, 64]), T([1, 4, 128, 64]), T([1, 4, 128, 64]))
    # program config: tile-multiple chunks (larger than the sequence is fine), a grid the device has
    yield "sdpa-prefill/q-chunk-48", sd(program_config=pc(48, 64))
    yield "sdpa-prefill/k-chunk-0", sd(program_config=pc(64, 0))
    yield "sdpa-prefill/chunks-256-over-seq-128", sd(program_config=pc(256, 256))
    yield "sdpa-prefill/hd-48", sd(T([1, 8, 128, 48]), T([1, 2, 128, 48]), T([1, 2, 128, 48]))
    yield "sdpa-prefill/grid-9x9", sd(program_config=pc(gx=9, gy=9))
    # the attention sink: one logit per Q head, [1, nqh, 1, 1], tiled bf16/bfp8/bfp4 in DRAM
    yield "sdpa-prefill/sink/host", sd(attention_sink=host([1, 8, 1, 1], layout="TILE"))
    yield "sdpa-prefill/sink/row-major", sd(attention_sink=T([1, 8, 1, 1], layout="ROW_MAJOR"))
    yield "sdpa-prefill/sink/fp32", sd(attention_sink=T([1, 8, 1, 1], "FLOAT32"))
    yield "sdpa-prefill/sink/l1", sd(attention_sink=T([1, 8, 1, 1], m=L1))
    yield "sdpa-prefill/sink/batch-2", sd(attention_sink=T([2, 8, 1, 1]))
    yield "sdpa-prefill/sink/kv-heads", sd(attention_sink=T([1, 2, 1, 1]))  # the kv heads, not Q's
    yield "sdpa-prefill/sink/2d", sd(attention_sink=T([8, 32]))
    yield "sdpa-prefill/sink/seq-32", sd(attention_sink=T([1, 8, 32, 1]))
    yield "sdpa-prefill/sink/width-32", sd(attention_sink=T([1, 8, 1, 32]))
    yield "sdpa-prefill/sink/bfp8", sd(attention_sink=T([1, 8, 1, 1], "BFLOAT8_B"))
    yield "sdpa-prefill/sink/ok", sd(attention_sink=T([1, 8, 1, 1]))


def chunked() -> Iterator[tuple[str, dict]]:
    op = "transformer.chunked_scaled_dot_product_attention"
    # A 128-row chunk of 8 query heads at position 128 over a bfp8 cache of 64-row blocks, 2 kv heads.
    q, cache, pt = T([1, 8, 128, 64]), T([64, 2, 64, 64], "BFLOAT8_B"), i32([1, 8])

    def ch(qq: dict = q, k: dict = cache, v: dict = cache, table: dict = pt, start: Any = 128, **kw: Any) -> dict:
        kw = {"scale": 0.125, "program_config": pc(), **kw}
        args = (qq, k, v, table) if start is None else (qq, k, v, table, start)
        return call(op, *args, **{n: x for n, x in kw.items() if x is not None})

    yield "sdpa-chunked/ok", ch()
    yield "sdpa-chunked/start-0-hifi4", ch(start=0, compute_kernel_config=HIFI4)
    yield "sdpa-chunked/block-32-q-bfp8", ch(T([1, 8, 128, 64], "BFLOAT8_B"), T([64, 2, 32, 64], "BFLOAT4_B"),
                                             T([64, 2, 32, 64], "BFLOAT4_B"), i32([1, 16]))
    yield "sdpa-chunked/mqa-batch-2-window", ch(T([2, 8, 64, 64]), T([64, 1, 64, 64]), T([64, 1, 64, 64]),
                                                i32([2, 8]), sliding_window_size=64)
    yield "sdpa-chunked/output-l1", ch(memory_config=L1)
    # the binding: a start (scalar or tensor), a scale an fp32 holds exactly
    yield "sdpa-chunked/scale-0.1", ch(scale=0.1)
    yield "sdpa-chunked/no-start", ch(start=None)
    yield "sdpa-chunked/start-tensor", ch(start=None, chunk_start_idx_tensor=i32([1]))
    yield "sdpa-chunked/start-scalar-and-tensor", ch(chunk_start_idx_tensor=i32([1]))
    # the inputs
    yield "sdpa-chunked/page-table-host", ch(table=host([1, 8], "INT32"))
    yield "sdpa-chunked/cache-row-major", ch(k=T([64, 2, 64, 64], layout="ROW_MAJOR"))
    yield "sdpa-chunked/q-fp32", ch({**q, "dtype": "FLOAT32"})
    yield "sdpa-chunked/cache-height-sharded", ch(v={**cache, "mem": height((128, 64), 64)})
    # the start
    yield "sdpa-chunked/start-negative", ch(start=-64)
    yield "sdpa-chunked/start-tensor-uint32", ch(start=None, chunk_start_idx_tensor=i32([1], dtype="UINT32"))
    yield "sdpa-chunked/start-tensor-2", ch(start=None, chunk_start_idx_tensor=i32([2]))
    # the page table: row-major int32, one row per user
    yield "sdpa-chunked/page-table-uint32", ch(table=i32([1, 8], dtype="UINT32"))
    yield "sdpa-chunked/page-table-tile", ch(table=i32([1, 8], layout="TILE"))
    yield "sdpa-chunked/page-table-2-rows", ch(table=i32([2, 8]))
    # the caches and heads
    yield "sdpa-chunked/v-block-32", ch(v=T([128, 2, 32, 64], "BFLOAT8_B"))
    yield "sdpa-chunked/v-heads-4", ch(v=T([64, 4, 64, 64], "BFLOAT8_B"))
    yield "sdpa-chunked/cache-hd-128", ch(k=T([64, 2, 64, 128], "BFLOAT8_B"), v=T([64, 2, 64, 128], "BFLOAT8_B"))
    yield "sdpa-chunked/6q-4kv", ch(T([1, 6, 128, 64]), T([64, 4, 64, 64]), T([64, 4, 64, 64]))
    # chunk sizes and the start's alignment to them
    yield "sdpa-chunked/q-chunk-48", ch(program_config=pc(48, 64))
    yield "sdpa-chunked/k-chunk-0", ch(program_config=pc(64, 0))
    yield "sdpa-chunked/start-32-q-chunk-64", ch(start=32)
    yield "sdpa-chunked/start-32-k-chunk-64", ch(start=32, program_config=pc(32, 64))
    yield "sdpa-chunked/start-32-chunks-32", ch(start=32, program_config=pc(32, 32))
    yield "sdpa-chunked/start-32-no-program-config", ch(start=32, program_config=None)
    # the pages hold the chunk's keys: pages * block >= start + Sq (tensor start: >= Sq)
    yield "sdpa-chunked/pages-short", ch(table=i32([1, 4]), start=256)
    yield "sdpa-chunked/pages-exact", ch(table=i32([1, 4]))
    yield "sdpa-chunked/start-tensor-pages-short", ch(T([1, 8, 512, 64]), T([64, 2, 32, 64], "BFLOAT8_B"),
                                                      T([64, 2, 32, 64], "BFLOAT8_B"), start=None,
                                                      chunk_start_idx_tensor=i32([1]))
    # the program: page-table rows 32-byte aligned (a tensor start reads whole rows; an L1 table's pages)
    yield "sdpa-chunked/start-tensor-page-table-4", ch(table=i32([1, 4]), start=None, chunk_start_idx_tensor=i32([1]))
    yield "sdpa-chunked/page-table-l1-4", ch(table=i32([1, 4], m=L1))
    yield "sdpa-chunked/page-table-l1-8", ch(table=i32([1, 8], m=L1))
    yield "sdpa-chunked/page-table-dram-6", ch(table=i32([1, 6]))
    yield "sdpa-chunked/hd-48", ch(T([1, 8, 128, 48]), T([64, 2, 64, 48]), T([64, 2, 64, 48]))
    yield "sdpa-chunked/grid-9x9", ch(program_config=pc(gx=9, gy=9))
    # the attention sink (GPT-OSS): one logit per Q head, [1, nqh, 1, 1], as in the unchunked op
    yield "sdpa-chunked/sink/ok", ch(attention_sink=T([1, 8, 1, 1]))
    yield "sdpa-chunked/sink/start-tensor", ch(start=None, chunk_start_idx_tensor=i32([1]),
                                               attention_sink=T([1, 8, 1, 1]))
    yield "sdpa-chunked/sink/window-batch-2", ch(T([2, 8, 64, 64]), T([64, 1, 64, 64]), T([64, 1, 64, 64]),
                                                 i32([2, 8]), sliding_window_size=64, attention_sink=T([1, 8, 1, 1]))
    yield "sdpa-chunked/sink/bfp8", ch(attention_sink=T([1, 8, 1, 1], "BFLOAT8_B"))
    yield "sdpa-chunked/sink/host", ch(attention_sink=host([1, 8, 1, 1], layout="TILE"))
    yield "sdpa-chunked/sink/row-major", ch(attention_sink=T([1, 8, 1, 1], layout="ROW_MAJOR"))
    yield "sdpa-chunked/sink/fp32", ch(attention_sink=T([1, 8, 1, 1], "FLOAT32"))
    yield "sdpa-chunked/sink/l1", ch(attention_sink=T([1, 8, 1, 1], m=L1))
    yield "sdpa-chunked/sink/batch-2", ch(attention_sink=T([2, 8, 1, 1]))
    yield "sdpa-chunked/sink/kv-heads", ch(attention_sink=T([1, 2, 1, 1]))
    yield "sdpa-chunked/sink/2d", ch(attention_sink=T([8, 32]))
    yield "sdpa-chunked/sink/seq-32", ch(attention_sink=T([1, 8, 32, 1]))
    yield "sdpa-chunked/sink/width-32", ch(attention_sink=T([1, 8, 1, 32]))
    # the order: the device checks the sink after the chunked-mode rules and before the head_dim padding
    yield "sdpa-chunked/sink/l1-pages-short", ch(table=i32([1, 4]), start=256, attention_sink=T([1, 8, 1, 1], m=L1))
    yield "sdpa-chunked/sink/l1-hd-48", ch(T([1, 8, 128, 48]), T([64, 2, 64, 48]), T([64, 2, 64, 48]),
                                           attention_sink=T([1, 8, 1, 1], m=L1))


def copy_cases() -> Iterator[tuple[str, dict]]:
    """ttnn.copy(a, b), which the chunked-prefill trace tests use to write new inputs into a trace's tensors: same
    logical shape and layout; dtype and memory config may differ."""
    op = "copy"
    a = T([1, 8, 128, 64])
    yield "copy/ok", call(op, a, T([1, 8, 128, 64]))
    yield "copy/int32-row-major-1", call(op, i32([1]), i32([1]))
    yield "copy/bf16-to-bfp8-l1", call(op, a, T([1, 8, 128, 64], "BFLOAT8_B", m=L1))
    yield "copy/row-major", call(op, T([1, 8, 128, 64], layout="ROW_MAJOR"), T([1, 8, 128, 64], layout="ROW_MAJOR"))
    yield "copy/a-host", call(op, host([1, 8, 128, 64], layout="TILE"), T([1, 8, 128, 64]))
    yield "copy/shape-mismatch", call(op, a, T([1, 8, 64, 64]))
    yield "copy/same-volume-other-shape", call(op, T([1, 1, 64, 32]), T([1, 1, 32, 64]))
    yield "copy/tile-to-row-major", call(op, a, T([1, 8, 128, 64], layout="ROW_MAJOR"))


def cases() -> Iterator[tuple[str, dict]]:
    yield from prefill()
    yield from chunked()
    yield from copy_cases()
