"""Hand-written corpus cases: options of the decode attention and head ops beyond what the models use (attention
sinks, masks and non-causal paged decode; separate KV input, tied K/V and sharded inputs to nlp_create_qkv_heads;
sharded nlp_concat_heads). See tt_checks/corpus_cases.py for the encoding helpers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.corpus_cases import DRAM, L1, T, block, call, coord, height, i32, mem, obj, rows, width


def _pc(k_chunk: int = 0, gx: int = 8, gy: int = 8) -> dict:
    return obj("SDPAProgramConfig", compute_with_storage_grid_size=coord(gx, gy), q_chunk_size=32,
               k_chunk_size=k_chunk, exp_approx_mode=False)


def sdpa_decode() -> Iterator[tuple[str, dict]]:
    """paged_scaled_dot_product_attention_decode: attention sinks ([padded heads, 32] bf16 tiles in DRAM) and
    non-causal decode over the whole page-table span, with or without an additive mask [b, 1, heads, span]."""
    op = "transformer.paged_scaled_dot_product_attention_decode"
    users, nh, nkv, hd, bs, nb = 32, 8, 2, 64, 64, 128
    q = T([1, users, nh, hd])
    kc = T([nb, nkv, bs, hd], "BFLOAT8_B")
    mqa = T([nb, 1, bs, hd], "BFLOAT8_B")
    pt, pos = i32([users, 4]), i32([users])
    span = 4 * bs

    def sd(qq: dict = q, k: dict = kc, v: dict = kc, table: dict = pt, **kw: Any) -> dict:
        kw = {"cur_pos_tensor": pos, **kw}
        return call(op, qq, k, v, table, **{k2: v2 for k2, v2 in kw.items() if v2 is not None})

    sink = T([32, 32])

    # ---- attention sink: a [padded Q heads, 32] bf16 TILE tensor in DRAM; column 0 holds each head's logit
    yield "sdpa-decode-opt/sink/ok", sd(attention_sink=sink)
    yield "sdpa-decode-opt/sink/logical-8x1", sd(attention_sink=T([nh, 1]))
    yield "sdpa-decode-opt/sink/mqa", sd(k=mqa, v=mqa, attention_sink=sink)
    yield "sdpa-decode-opt/sink/q-height-sharded", sd(qq=T([1, users, nh, hd], m=height((32, hd), users)),
                                                      attention_sink=sink)
    yield "sdpa-decode-opt/sink/window", sd(attention_sink=sink, sliding_window_size=128)
    yield "sdpa-decode-opt/sink/64-heads", sd(qq=T([1, users, 64, hd]), attention_sink=T([64, 32]))
    yield "sdpa-decode-opt/sink/4d", sd(attention_sink=T([1, 1, 32, 32]))
    yield "sdpa-decode-opt/sink/1d", sd(attention_sink=T([32]))
    yield "sdpa-decode-opt/sink/heads-64", sd(attention_sink=T([64, 32]))
    yield "sdpa-decode-opt/sink/heads-33", sd(attention_sink=T([33, 32]))
    yield "sdpa-decode-opt/sink/width-64", sd(attention_sink=T([32, 64]))
    yield "sdpa-decode-opt/sink/bfp8", sd(attention_sink=T([32, 32], "BFLOAT8_B"))
    yield "sdpa-decode-opt/sink/fp32", sd(attention_sink=T([32, 32], "FLOAT32"))
    yield "sdpa-decode-opt/sink/row-major", sd(attention_sink=T([32, 32], layout="ROW_MAJOR"))
    yield "sdpa-decode-opt/sink/l1", sd(attention_sink=T([32, 32], m=L1))
    yield "sdpa-decode-opt/sink/height-sharded", sd(attention_sink=T([32, 32], m=height((32, 32), 1)))
    yield "sdpa-decode-opt/sink/gqa-q-bfp8", sd(qq={**q, "dtype": "BFLOAT8_B"}, attention_sink=sink)
    yield "sdpa-decode-opt/sink/with-mask-causal", sd(attention_sink=sink, attn_mask=T([users, 1, nh, span]))

    # ---- non-causal decode: every position of the page-table span; an optional additive mask
    def nc(**kw: Any) -> dict:
        return sd(is_causal=False, **{"cur_pos_tensor": None, "attn_mask": T([users, 1, nh, span]), **kw})

    yield "sdpa-decode-opt/mask/ok", nc()
    yield "sdpa-decode-opt/mask/q-like-1xb", nc(attn_mask=T([1, users, nh, span]))
    yield "sdpa-decode-opt/mask/batch-1", nc(attn_mask=T([1, 1, nh, span]))
    yield "sdpa-decode-opt/mask/batch-2", nc(attn_mask=T([2, 1, nh, span]))
    yield "sdpa-decode-opt/mask/bfp8", nc(attn_mask=T([users, 1, nh, span], "BFLOAT8_B"))
    yield "sdpa-decode-opt/mask/bfp4", nc(attn_mask=T([users, 1, nh, span], "BFLOAT4_B"))
    yield "sdpa-decode-opt/mask/fp32", nc(attn_mask=T([users, 1, nh, span], "FLOAT32"))
    yield "sdpa-decode-opt/mask/row-major", nc(attn_mask=T([users, 1, nh, span], layout="ROW_MAJOR"))
    yield "sdpa-decode-opt/mask/l1", nc(attn_mask=T([users, 1, nh, span], m=L1))
    yield "sdpa-decode-opt/mask/heads-16", nc(attn_mask=T([users, 1, 16, span]))
    yield "sdpa-decode-opt/mask/heads-40", nc(attn_mask=T([users, 1, 40, span]))
    yield "sdpa-decode-opt/mask/heads-32-padded", nc(attn_mask=T([users, 1, 32, span]))
    yield "sdpa-decode-opt/mask/span-128", nc(attn_mask=T([users, 1, nh, 128]))
    yield "sdpa-decode-opt/mask/span-512", nc(attn_mask=T([users, 1, nh, 512]))
    yield "sdpa-decode-opt/mask/span-200", nc(attn_mask=T([users, 1, nh, 200]))
    yield "sdpa-decode-opt/mask/span-96-chunk-64", nc(attn_mask=T([users, 1, nh, 96]), program_config=_pc(64))
    yield "sdpa-decode-opt/mask/span-256-chunk-64", nc(program_config=_pc(64))
    yield "sdpa-decode-opt/mask/chunk-0", nc(program_config=_pc(0))
    yield "sdpa-decode-opt/mask/chunk-128", nc(program_config=_pc(128))
    yield "sdpa-decode-opt/mask/chunk-512", nc(program_config=_pc(512))
    yield "sdpa-decode-opt/mask/with-cur-pos", nc(cur_pos_tensor=pos)
    yield "sdpa-decode-opt/mask/cur-pos-uint32", nc(cur_pos_tensor=i32([users], dtype="UINT32"))
    yield "sdpa-decode-opt/mask/window", nc(sliding_window_size=128)
    yield "sdpa-decode-opt/mask/mqa", nc(k=mqa, v=mqa)
    yield "sdpa-decode-opt/mask/q-height-sharded", nc(qq=T([1, users, nh, hd], m=height((32, hd), users)))
    yield "sdpa-decode-opt/mask/sink", nc(attention_sink=sink)
    yield "sdpa-decode-opt/mask/page-table-16", nc(table=i32([16, 4]), attn_mask=T([16, 1, nh, span]))
    yield "sdpa-decode-opt/mask/3d", nc(attn_mask=T([users, nh, span]))
    yield "sdpa-decode-opt/no-mask/ok", nc(attn_mask=None)
    yield "sdpa-decode-opt/no-mask/chunk-0", nc(attn_mask=None, program_config=_pc(0))
    yield "sdpa-decode-opt/no-mask/chunk-128", nc(attn_mask=None, program_config=_pc(128))
    yield "sdpa-decode-opt/no-mask/span-192-chunk-128", nc(attn_mask=None, table=i32([users, 3]),
                                                         program_config=_pc(128))
    yield "sdpa-decode-opt/no-mask/span-192-chunk-64", nc(attn_mask=None, table=i32([users, 3]),
                                                        program_config=_pc(64))
    yield "sdpa-decode-opt/no-mask/window", nc(attn_mask=None, sliding_window_size=100)
    yield "sdpa-decode-opt/no-mask/cur-pos", nc(attn_mask=None, cur_pos_tensor=pos)
    # ---- cache_position_modulo: a ring-buffer cache; position p lives in slot p % modulo of the row's blocks
    yield "sdpa-decode-opt/modulo/ok", sd(cache_position_modulo=128)
    yield "sdpa-decode-opt/modulo/span", sd(cache_position_modulo=span)
    yield "sdpa-decode-opt/modulo/window", sd(cache_position_modulo=128, sliding_window_size=128)
    yield "sdpa-decode-opt/modulo/window-wider", sd(cache_position_modulo=128, sliding_window_size=129)
    yield "sdpa-decode-opt/modulo/not-block-multiple", sd(cache_position_modulo=96)
    yield "sdpa-decode-opt/modulo/zero", sd(cache_position_modulo=0)
    yield "sdpa-decode-opt/modulo/beyond-span", sd(cache_position_modulo=2 * span)
    yield "sdpa-decode-opt/modulo/non-causal", nc(attn_mask=None, cache_position_modulo=128)
    yield "sdpa-decode-opt/modulo/sink", sd(cache_position_modulo=128, attention_sink=sink)
    yield "sdpa-decode-opt/modulo/block-32", sd(cache_position_modulo=32, k=T([nb, nkv, 32, hd], "BFLOAT8_B"),
                                                v=T([nb, nkv, 32, hd], "BFLOAT8_B"))
    yield "sdpa-decode-opt/modulo/chunk-128", sd(cache_position_modulo=128, program_config=_pc(128))
    yield "sdpa-decode-opt/modulo/chunk-256", sd(cache_position_modulo=128, program_config=_pc(256))
    # ---- spec_multi_pos_tiles T: T candidate positions per user, Q row tile j (heads 32j..32j+31) bounded by
    # cur_pos[b * T + j]
    def spec(t: int = 1, nq: int = 32, **kw: Any) -> dict:
        return sd(**{"qq": T([1, users, nq, hd]), "k": mqa, "v": mqa, "cur_pos_tensor": i32([users * t]),
                     "spec_multi_pos_tiles": t, **kw})

    yield "sdpa-decode-opt/spec/ok", spec()
    yield "sdpa-decode-opt/spec/t2", spec(2, 64)
    yield "sdpa-decode-opt/spec/t2-40-heads", spec(2, 40)
    yield "sdpa-decode-opt/spec/t0", spec(0)
    yield "sdpa-decode-opt/spec/gqa", spec(k=kc, v=kc)
    yield "sdpa-decode-opt/spec/q-bfp8", spec(qq=T([1, users, 32, hd], "BFLOAT8_B"))
    yield "sdpa-decode-opt/spec/q-height-sharded", spec(qq=T([1, users, 32, hd], m=height((32, hd), users)))
    yield "sdpa-decode-opt/spec/mask", spec(is_causal=False, cur_pos_tensor=None, attn_mask=T([users, 1, 32, span]))
    yield "sdpa-decode-opt/spec/non-causal", spec(is_causal=False, cur_pos_tensor=None)
    yield "sdpa-decode-opt/spec/window", spec(sliding_window_size=128)
    yield "sdpa-decode-opt/spec/cur-pos-32-for-t2", spec(2, 64, cur_pos_tensor=i32([users]))
    yield "sdpa-decode-opt/spec/cur-pos-1x64", spec(2, 64, cur_pos_tensor=i32([1, 2 * users]))
    yield "sdpa-decode-opt/spec/t2-32-heads", spec(2, 32)
    yield "sdpa-decode-opt/spec/t1-64-heads", spec(1, 64)
    yield "sdpa-decode-opt/spec/16-heads", spec(1, 16)
    yield "sdpa-decode-opt/spec/chunk-0", spec(program_config=_pc(0))
    yield "sdpa-decode-opt/spec/chunk-128", spec(program_config=_pc(128))
    yield "sdpa-decode-opt/spec/sink", spec(attention_sink=T([32, 32]))
    yield "sdpa-decode-opt/spec/modulo", spec(cache_position_modulo=128)
    yield "sdpa-decode-opt/spec/bf16-cache", spec(k=T([nb, 1, bs, hd]), v=T([nb, 1, bs, hd]))
    yield "sdpa-decode-opt/spec/output-sharded", spec(memory_config=height((32, hd), users))
    yield "sdpa-decode-opt/no-mask/block-32", nc(attn_mask=None, k=T([nb, nkv, 32, hd], "BFLOAT8_B"),
                                               v=T([nb, nkv, 32, hd], "BFLOAT8_B"))


def heads() -> Iterator[tuple[str, dict]]:
    """nlp_create_qkv_heads with a separate KV input, tied K/V, preallocated outputs and sharded inputs (each core's
    shard one [q heads | k heads | v heads] block); nlp_concat_heads on height-sharded inputs."""
    op = "experimental.nlp_create_qkv_heads"

    def ph(x: dict, kv: dict | None = None, nh: int = 8, nkv: int | None = 2, **kw: Any) -> dict:
        args = (x,) if kv is None else (x, kv)
        kw = {"num_heads": nh, "num_kv_heads": nkv, "transpose_k_heads": False, **kw}
        return call(op, *args, **{k: v for k, v in kw.items() if v is not None})

    seq = 128
    q_in, kv_in = T([1, 1, seq, 8 * 64]), T([1, 1, seq, 4 * 64])
    # ---- separate Q and fused KV inputs
    yield "heads-opt/input-kv/ok", ph(q_in, kv_in)
    yield "heads-opt/input-kv/transpose-k", ph(q_in, kv_in, transpose_k_heads=True)
    yield "heads-opt/input-kv/batch-2", ph(T([2, 1, seq, 512]), T([2, 1, seq, 256]))
    yield "heads-opt/input-kv/seq-100", ph(T([1, 1, 100, 512]), T([1, 1, 100, 256]))
    yield "heads-opt/input-kv/mha-default-kv", ph(q_in, T([1, 1, seq, 16 * 64]), nkv=None)
    yield "heads-opt/input-kv/kv-l1", ph(q_in, {**kv_in, "mem": L1})
    yield "heads-opt/input-kv/l1-output", ph(q_in, kv_in, memory_config=L1)
    yield "heads-opt/input-kv/bfp8", ph(T([1, 1, seq, 512], "BFLOAT8_B"), T([1, 1, seq, 256], "BFLOAT8_B"))
    yield "heads-opt/input-kv/q-width-3-heads", ph(q_in, kv_in, nh=3)
    yield "heads-opt/input-kv/kv-width-3-kv", ph(q_in, kv_in, nkv=3)
    yield "heads-opt/input-kv/head-dim-mismatch", ph(q_in, T([1, 1, seq, 512]))
    yield "heads-opt/input-kv/kv-0", ph(q_in, kv_in, nkv=0)
    yield "heads-opt/input-kv/q-heads-exceed-width", ph(T([1, 1, seq, 32]), kv_in, nh=64)
    yield "heads-opt/input-kv/kv-heads-exceed-width", ph(q_in, T([1, 1, seq, 32]), nkv=32)
    yield "heads-opt/input-kv/dtype-mismatch", ph(q_in, {**kv_in, "dtype": "BFLOAT8_B"})
    yield "heads-opt/input-kv/kv-row-major", ph(q_in, {**kv_in, "layout": "ROW_MAJOR"})
    yield "heads-opt/input-kv/batch-mismatch", ph(q_in, T([2, 1, seq, 256]))
    yield "heads-opt/input-kv/kv-dim1-2", ph(q_in, T([1, 2, seq, 256]))
    yield "heads-opt/input-kv/seq-mismatch", ph(q_in, T([1, 1, 64, 256]))
    yield "heads-opt/input-kv/kv-sharded-q-interleaved", ph(q_in, T([1, 1, seq, 256], m=width((seq, 128), 2)))
    yield "heads-opt/input-kv/kv-bfp4", ph(q_in, {**kv_in, "dtype": "BFLOAT4_B"})
    yield "heads-opt/input-kv/q-bfp4", ph({**q_in, "dtype": "BFLOAT4_B"}, {**kv_in, "dtype": "BFLOAT4_B"})
    # ---- tied K/V: one K/V section, V read from K's columns
    yield "heads-opt/kv-tied/ok", ph(T([1, 1, seq, 10 * 64]), kv_tied=True)
    yield "heads-opt/kv-tied/transpose-k", ph(T([1, 1, seq, 10 * 64]), kv_tied=True, transpose_k_heads=True)
    yield "heads-opt/kv-tied/ambiguous", ph(T([1, 1, seq, 960]), kv_tied=True)
    yield "heads-opt/kv-tied/indivisible", ph(T([1, 1, seq, 768]), kv_tied=True)
    yield "heads-opt/kv-tied/exceeds-width", ph(T([1, 1, seq, 96]), nh=64, nkv=64, kv_tied=True)
    yield "heads-opt/kv-tied/input-kv", ph(q_in, T([1, 1, seq, 128]), kv_tied=True)
    yield "heads-opt/kv-tied/input-kv-two-sections", ph(q_in, kv_in, kv_tied=True)
    yield "heads-opt/untied/exceeds-width", ph(T([1, 1, seq, 96]), nh=64, nkv=64)
    yield "heads-opt/nh-0", ph(T([1, 1, seq, 768]), nh=0)
    yield "heads-opt/nkv-0", ph(T([1, 1, seq, 512]), nkv=0)
    yield "heads-opt/interleaved/hs-output", ph(T([1, 1, 32, 768]), memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "heads-opt/interleaved/l1-output", ph(T([1, 1, 32, 768]), memory_config=L1)
    # ---- preallocated outputs
    outs = [T([1, 8, seq, 64]), T([1, 2, seq, 64]), T([1, 2, seq, 64])]
    x = T([1, 1, seq, 768])

    def lst(*ts: dict) -> dict:
        return {"t": "list", "v": list(ts)}

    yield "heads-opt/output-tensors/ok", ph(x, output_tensors=lst(*outs))
    yield "heads-opt/output-tensors/two", ph(x, output_tensors=lst(*outs[:2]))
    yield "heads-opt/output-tensors/empty", ph(x, output_tensors=lst())
    yield "heads-opt/output-tensors/wrong-shape", ph(x, output_tensors=lst(T([1, 8, 64, 64]), *outs[1:]))
    yield "heads-opt/output-tensors/wrong-dtype", ph(x, output_tensors=lst(T([1, 8, seq, 64], "BFLOAT8_B"),
                                                                          *outs[1:]))
    yield "heads-opt/output-tensors/l1", ph(x, output_tensors=lst(*[{**o, "mem": L1} for o in outs]))
    yield "heads-opt/output-tensors/transpose-k", ph(x, output_tensors=lst(outs[0], T([1, 2, 64, seq]), outs[2]),
                                                     transpose_k_heads=True)
    yield "heads-opt/output-tensors/memory-config-ignored", ph(x, output_tensors=lst(*outs), memory_config=L1)

    # ---- sharded fused input: width-sharded over nkv cores, shard [B*S, (nh/nkv + 2) * hd]
    hs_out = mem("HEIGHT_SHARDED", "L1")

    def sh(nh: int = 8, nkv: int = 2, hd: int = 64, s: int = 32, b: int = 1, cores: int | None = None,
           m: dict | None = None, dtype: str = "BFLOAT16", tied: bool = False, **kw: Any) -> dict:
        sections = nh + (1 if tied else 2) * nkv
        c = cores or nkv
        xm = m or width((b * s, sections * hd // c), c)
        extra = {"kv_tied": True} if tied else {}
        return ph(T([b, 1, s, sections * hd], dtype, m=xm), nh=nh, nkv=nkv, **{"memory_config": hs_out,
                                                                                **extra, **kw})

    yield "heads-opt/sharded/ok", sh()
    yield "heads-opt/sharded/mqa", sh(nh=8, nkv=1)
    yield "heads-opt/sharded/mha-8", sh(nh=8, nkv=8)
    yield "heads-opt/sharded/32q-8kv-hd128", sh(nh=32, nkv=8, hd=128)
    yield "heads-opt/sharded/16q-16kv", sh(nh=16, nkv=16)
    yield "heads-opt/sharded/bfp8", sh(dtype="BFLOAT8_B")
    yield "heads-opt/sharded/fp32", sh(dtype="FLOAT32")
    yield "heads-opt/sharded/output-with-spec", sh(memory_config=height((32, 64), 8))
    yield "heads-opt/sharded/output-dram-hs", sh(memory_config=mem("HEIGHT_SHARDED", "DRAM"))
    yield "heads-opt/sharded/output-block", sh(memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/sharded/output-width", sh(memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/sharded/output-interleaved", sh(memory_config=L1)
    yield "heads-opt/sharded/output-default", sh(memory_config=None)
    yield "heads-opt/sharded/transpose-k", sh(transpose_k_heads=True)
    yield "heads-opt/sharded/seq-64", sh(s=64)
    yield "heads-opt/sharded/batch-2", sh(b=2)
    yield "heads-opt/sharded/one-core", sh(cores=1)
    yield "heads-opt/sharded/four-cores", sh(nh=8, nkv=4, cores=4)
    yield "heads-opt/sharded/kv-not-divisible", sh(nh=8, nkv=2, cores=4, m=width((32, 192), 4))
    yield "heads-opt/sharded/q-not-divisible", sh(nh=6, nkv=2, cores=4)
    yield "heads-opt/sharded/transpose-k-hd32", sh(hd=32, transpose_k_heads=True)
    yield "heads-opt/sharded/hd32", sh(hd=32)
    yield "heads-opt/sharded/kv-tied-shard-width", sh(tied=True, m=width((32, 640), 1))
    yield "heads-opt/sharded/col-major", sh(m=mem("WIDTH_SHARDED", "L1", rows(2), (32, 384), "COL_MAJOR"))
    yield "heads-opt/sharded/height-sharded-1-core", sh(nh=8, nkv=1, m=height((32, 640), 1))
    yield "heads-opt/sharded/height-sharded-2-cores", sh(s=64, m=height((32, 768), 2))
    yield "heads-opt/sharded/block-1-row", sh(m=block((32, 384), 2, 1))
    yield "heads-opt/sharded/offset-grid", sh(m=mem("WIDTH_SHARDED", "L1", [(2, 0, 3, 0)], (32, 384)))
    yield "heads-opt/sharded/column-grid", sh(m=mem("WIDTH_SHARDED", "L1", [(0, 0, 0, 1)], (32, 384)))
    yield "heads-opt/sharded/65-heads", sh(nh=65, nkv=1, hd=32)
    yield "heads-opt/sharded/q-lt-kv", sh(nh=2, nkv=4, cores=2, m=width((32, 320), 2))
    yield "heads-opt/sharded/hd-48", sh(nh=8, nkv=2, hd=48, m=width((32, 288), 2))
    yield "heads-opt/sharded/dram-input", sh(m=mem("WIDTH_SHARDED", "DRAM", [(0, 0, 1, 0)], (32, 384)))
    yield "heads-opt/sharded/kv-tied", sh(tied=True)
    yield "heads-opt/sharded/kv-tied-ambiguous", sh(nh=2, nkv=1, tied=True)
    yield "heads-opt/sharded/kv-tied-q4", sh(nh=4, nkv=1, tied=True)
    # ---- sharded separate Q [B, 1, S, nh*hd] and KV inputs: both width-sharded on the same nkv cores
    def shkv(nh: int = 8, nkv: int = 2, hd: int = 64, qm: dict | None = None, kvm: dict | None = None,
             kvw: int | None = None, tied: bool = False, **kw: Any) -> dict:
        sec = 1 if tied else 2
        kvw = kvw or sec * nkv * hd
        xq = T([1, 1, 32, nh * hd], m=qm or width((32, nh * hd // nkv), nkv))
        xkv = T([1, 1, 32, kvw], m=kvm or width((32, kvw // nkv), nkv))
        extra = {"kv_tied": True} if tied else {}
        return ph(xq, xkv, nh=nh, nkv=nkv, **{"memory_config": hs_out, **extra, **kw})

    yield "heads-opt/sharded-kv/ok", shkv()
    yield "heads-opt/sharded-kv/32q-8kv", shkv(nh=32, nkv=8)
    yield "heads-opt/sharded-kv/kv-interleaved", shkv(kvm=L1)
    yield "heads-opt/sharded-kv/kv-other-grid", shkv(kvm=mem("WIDTH_SHARDED", "L1", [(0, 1, 1, 1)], (32, 128)))
    yield "heads-opt/sharded-kv/kv-shard-width", shkv(nh=4, nkv=3, qm=width((32, 64), 4), kvw=384,
                                                      kvm=width((32, 96), 4))
    yield "heads-opt/sharded-kv/q-shard-width", shkv(qm=width((32, 128), 4), kvm=width((32, 64), 4))
    yield "heads-opt/sharded-kv/bfp8", ph(T([1, 1, 32, 512], "BFLOAT8_B", m=width((32, 256), 2)),
                                          T([1, 1, 32, 256], "BFLOAT8_B", m=width((32, 128), 2)), nh=8, nkv=2,
                                          memory_config=hs_out)
    yield "heads-opt/sharded-kv/kv-col-major", shkv(kvm=mem("WIDTH_SHARDED", "L1", rows(2), (32, 128), "COL_MAJOR"))
    yield "heads-opt/sharded-kv/kv-tied", shkv(tied=True)
    yield "heads-opt/sharded-kv/kv-tied-shard-width", shkv(tied=True, kvm=width((32, 128), 1))

    # ---- nlp_concat_heads on height-sharded [B, nh, S, hd]
    cat = "experimental.nlp_concat_heads"
    yield "heads-opt/concat-sharded/ok", call(cat, T([1, 8, 128, 128], m=height((128, 128), 8)),
                                              memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/two-heads-per-core", call(cat, T([1, 8, 128, 128], m=height((256, 128), 4)),
                                                              memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/block-output", call(cat, T([1, 8, 128, 128], m=height((256, 128), 4)),
                                                        memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/batch-2-block", call(cat, T([2, 4, 64, 64], m=height((128, 64), 4)),
                                                         memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/batch-2-width", call(cat, T([2, 4, 64, 64], m=height((128, 64), 4)),
                                                         memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/default-output", call(cat, T([1, 8, 128, 128], m=height((128, 128), 8)))
    yield "heads-opt/concat-sharded/interleaved-output", call(cat, T([1, 8, 128, 128], m=height((128, 128), 8)),
                                                              memory_config=L1)
    yield "heads-opt/concat-sharded/height-output", call(cat, T([1, 8, 128, 128], m=height((128, 128), 8)),
                                                         memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/width-sharded-input", call(cat, T([1, 8, 128, 128], m=width((1024, 64), 2)),
                                                               memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/block-input", call(cat, T([1, 8, 128, 128], m=block((512, 64), 2, 2)),
                                                       memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/three-heads-per-core", call(cat, T([1, 8, 128, 128], m=height((384, 128), 3)),
                                                                memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/seq-100", call(cat, T([1, 8, 100, 128], m=height((128, 128), 8)),
                                                   memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/output-with-spec", call(cat, T([1, 8, 128, 128], m=height((128, 128), 8)),
                                                            memory_config=width((128, 256), 4))
    yield "heads-opt/concat-sharded/dram-output", call(cat, T([1, 8, 128, 128], m=height((128, 128), 8)),
                                                       memory_config=mem("WIDTH_SHARDED", "DRAM"))
    yield "heads-opt/concat-sharded/height-output-all-heads", call(
        cat, T([1, 8, 128, 128], m=height((1024, 128), 1)), memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/block-input-narrow", call(cat, T([1, 2, 32, 64], m=block((64, 32), 2, 1)),
                                                              memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/block-input-full", call(cat, T([1, 2, 32, 64], m=block((64, 64), 1, 1)),
                                                            memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/shard-96-rows", call(cat, T([1, 3, 64, 64], m=height((96, 64), 3)),
                                                         memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/shard-64-rows-3-heads", call(cat, T([1, 3, 64, 64], m=height((64, 64), 3)),
                                                                 memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/batch-2-block-grid", call(
        cat, T([2, 4, 64, 64], m=mem("HEIGHT_SHARDED", "L1", [(0, 0, 1, 1)], (128, 64))),
        memory_config=mem("BLOCK_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/col-major", call(
        cat, T([1, 8, 128, 128], m=mem("HEIGHT_SHARDED", "L1", [(0, 0, 1, 3)], (128, 128), "COL_MAJOR")),
        memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-sharded/bfp8", call(cat, T([1, 8, 128, 128], "BFLOAT8_B", m=height((128, 128), 8)),
                                                memory_config=mem("WIDTH_SHARDED", "L1"))
    yield "heads-opt/concat-interleaved/height-output", call(cat, T([1, 8, 128, 128]),
                                                             memory_config=mem("HEIGHT_SHARDED", "L1"))
    yield "heads-opt/concat-interleaved/width-output", call(cat, T([1, 8, 128, 128]),
                                                            memory_config=width((128, 128), 8))
    yield "heads-opt/concat-interleaved/dram", call(cat, T([1, 8, 128, 128], m=L1), memory_config=DRAM)


def cases() -> Iterator[tuple[str, dict]]:
    yield from sdpa_decode()
    yield from heads()
