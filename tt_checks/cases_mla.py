"""Hand-written corpus cases: the multi-latent-attention ops (DeepSeek's MLA): paged decode
(transformer.paged_flash_multi_latent_attention_decode), unpaged decode over a [B, 1, S, dh] latent cache
(transformer.flash_multi_latent_attention_decode; tt-metal's MLA decode unit tests call it, the models do not),
prefill (transformer.flash_mla_prefill) and chunked prefill over a paged cache (transformer.chunked_flash_mla_prefill).
One latent cache per layer holds each position's compressed KV and its rotary part ([blocks, 1, block_size,
kv_lora_rank + rope_dim]); V is its first head_dim_v columns. Valid calls and, next to them, the call that breaks
each rule 0.81.1 checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.corpus_cases import L1, T, call, coord, height, host, i32, obj, width

DEC = "transformer.paged_flash_multi_latent_attention_decode"
UNPAGED = "transformer.flash_multi_latent_attention_decode"
PRE = "transformer.flash_mla_prefill"
CHUNK = "transformer.chunked_flash_mla_prefill"


def pc(k_chunk: int = 0, q_chunk: int = 32, gx: int = 8, gy: int = 8) -> dict:
    return obj("SDPAProgramConfig", compute_with_storage_grid_size=coord(gx, gy), q_chunk_size=q_chunk,
               k_chunk_size=k_chunk, exp_approx_mode=False)


def decode() -> Iterator[tuple[str, dict]]:
    users, nh, dh, dv, bs, nb = 32, 16, 576, 512, 64, 128
    q = T([1, users, nh, dh])
    kc = T([nb, 1, bs, dh], "BFLOAT8_B")
    pt, pos = i32([users, 4]), i32([users])
    _D = "mla-decode/"

    def sd(qq: dict = q, k: dict = kc, v: Any = None, hv: int = dv, table: dict = pt, **kw: Any) -> dict:
        kw = {"cur_pos_tensor": pos, **kw}
        return call(DEC, qq, k, v, hv, table, **{n: x for n, x in kw.items() if x is not None})

    yield _D + "ok", sd()
    yield _D + "scale", sd(scale=0.05)
    yield _D + "program-config", sd(program_config=pc(128))
    yield _D + "k-bf16", sd(k=T([nb, 1, bs, dh]))
    yield _D + "k-bfp4", sd(k=T([nb, 1, bs, dh], "BFLOAT4_B"))
    yield _D + "q-bfp8", sd({**q, "dtype": "BFLOAT8_B"})
    yield _D + "q-fp32", sd({**q, "dtype": "FLOAT32"})
    yield _D + "with-v", sd(v=T([nb, 1, bs, dv], "BFLOAT8_B"))
    yield _D + "with-v-576", sd(v=kc)
    yield _D + "hv-576", sd(hv=dh)
    yield _D + "hv-640", sd(hv=640)
    yield _D + "hv-500", sd(hv=500)
    yield _D + "hv-64", sd(hv=64)  # (head_dim_v 0 kills the process: SIGFPE in the program factory)
    yield _D + "two-kv-heads", sd(k=T([nb, 2, bs, dh], "BFLOAT8_B"))
    yield _D + "q-hd-512", sd(T([1, users, nh, 512]))
    yield _D + "nh-8", sd(T([1, users, 8, dh]))
    yield _D + "nh-32", sd(T([1, users, 32, dh]))
    yield _D + "nh-64", sd(T([1, users, 64, dh]))
    yield _D + "nh-128", sd(T([1, users, 128, dh]))
    yield _D + "users-8", sd(T([1, 8, nh, dh]), table=i32([8, 4]), cur_pos_tensor=i32([8]))
    yield _D + "users-64", sd(T([1, 64, nh, dh]), table=i32([64, 4]), cur_pos_tensor=i32([64]))
    yield _D + "dh-192", sd(T([1, users, nh, 192]), k=T([nb, 1, bs, 192], "BFLOAT8_B"), hv=128)
    yield _D + "dh-128-hv-128", sd(T([1, users, nh, 128]), k=T([nb, 1, bs, 128], "BFLOAT8_B"), hv=128)
    yield _D + "block-32", sd(k=T([nb, 1, 32, dh], "BFLOAT8_B"))
    yield _D + "q-height-sharded", sd(T([1, users, nh, dh], m=height((32, dh), users)))
    yield _D + "q-height-sharded-out-sharded", sd(T([1, users, nh, dh], m=height((32, dh), users)),
                                                   memory_config=height((32, dv), users))
    yield _D + "out-height-sharded", sd(memory_config=height((32, dv), users))
    yield _D + "out-width-sharded", sd(memory_config=width((users * 32, 32), 16))
    yield _D + "out-l1", sd(memory_config=L1)
    yield _D + "q-l1", sd({**q, "mem": L1})
    yield _D + "k-l1", sd(k={**kc, "mem": L1})
    yield _D + "q-row-major-dram", sd({**q, "layout": "ROW_MAJOR"})
    yield _D + "no-cur-pos", sd(cur_pos_tensor=None)
    yield _D + "cur-pos-16", sd(cur_pos_tensor=i32([16]))
    yield _D + "page-table-uint32", sd(table=i32([users, 4], dtype="UINT32"))
    yield _D + "page-table-tile", sd(table=i32([users, 4], layout="TILE"))
    yield _D + "window-128", sd(sliding_window_size=128)
    yield _D + "non-causal", sd(is_causal=False, cur_pos_tensor=None)
    yield _D + "non-causal-chunk", sd(is_causal=False, cur_pos_tensor=None, program_config=pc(64))
    yield _D + "sink", sd(attention_sink=T([32, 32]))
    yield _D + "k-chunk-48", sd(program_config=pc(48))
    yield _D + "grid-4x4", sd(program_config=pc(0, gx=4, gy=4))
    yield _D + "k-row-major", sd(k={**kc, "dtype": "BFLOAT16", "layout": "ROW_MAJOR"})
    yield _D + "k-chunk-16", sd(program_config=pc(16))
    yield _D + "grid-9x9", sd(program_config=pc(0, gx=9, gy=9))
    yield _D + "q-width-sharded", sd(T([1, users, nh, dh], m=width((users * 32, 32), 18)))
    rm_q = T([1, users, nh, dh], layout="ROW_MAJOR", m=height((nh, dh), users))
    yield _D + "q-row-major-sharded", sd(rm_q)
    yield _D + "q-row-major-sharded-output", sd(rm_q, memory_config=height((nh, dv), users))
    yield _D + "q-row-major-32-heads-sharded-output", sd(
        T([1, users, 32, dh], layout="ROW_MAJOR", m=height((32, dh), users)), memory_config=height((32, dv), users))
    yield _D + "causal-with-mask", sd(attn_mask=T([1, users, nh, 4 * bs]))
    yield _D + "cur-pos-uint32", sd(cur_pos_tensor=i32([users], dtype="UINT32"))
    yield _D + "cur-pos-tile", sd(cur_pos_tensor=i32([1, users], layout="TILE"))
    yield _D + "cur-pos-1xB", sd(cur_pos_tensor=i32([1, users]))
    yield _D + "with-v-2-heads", sd(v=T([nb, 2, bs, dv], "BFLOAT8_B"))
    gqa = T([nb, 2, bs, dh], "BFLOAT8_B")
    yield _D + "gqa-sharded-output", sd(k=gqa, memory_config=height((32, dv), users))
    yield _D + "gqa-q-bfp8", sd({**q, "dtype": "BFLOAT8_B"}, k=gqa)
    yield _D + "9q-2kv", sd(T([1, users, 9, dh]), k=gqa)
    yield _D + "sink-heads-64", sd(attention_sink=T([64, 32]))
    yield _D + "sink-bfp8", sd(attention_sink=T([32, 32], "BFLOAT8_B"))
    yield _D + "sink-4d", sd(attention_sink=T([1, 1, 32, 32]))
    yield _D + "sink-width-64", sd(attention_sink=T([32, 64]))
    yield _D + "sink-row-major", sd(attention_sink=T([32, 32], layout="ROW_MAJOR"))
    yield _D + "sink-l1", sd(attention_sink=T([32, 32], m=L1))
    yield _D + "mqa-q-bfp4-k-bfp4", sd({**q, "dtype": "BFLOAT4_B"}, k=T([nb, 1, bs, dh], "BFLOAT4_B"))


def unpaged() -> Iterator[tuple[str, dict]]:
    b, nh, s, dh, dv = 8, 16, 1024, 576, 512
    q = T([1, b, nh, dh])
    k = T([b, 1, s, dh], "BFLOAT8_B")
    _U = "mla-decode-unpaged/"

    def su(qq: dict = q, kk: dict = k, v: Any = None, hv: int = dv, **kw: Any) -> dict:
        kw = {"cur_pos_tensor": i32([b]), "program_config": pc(128), **kw}
        return call(UNPAGED, qq, kk, v, hv, **{n: x for n, x in kw.items() if x is not None})

    yield _U + "ok", su()
    yield _U + "scale", su(scale=0.05)
    # Without a program config the host picks min(512, S's largest power-of-2 divisor) rows per K chunk: at 576
    # wide that outgrows a core's L1 unless the cache is bfloat4_b.
    yield _U + "default-chunk", su(program_config=None)
    yield _U + "default-chunk-k-bfp4", su(kk=T([b, 1, s, dh], "BFLOAT4_B"), program_config=None)
    yield _U + "default-chunk-cur-pos-list", su(cur_pos=[500] * b, cur_pos_tensor=None, program_config=None)
    yield _U + "chunk-256", su(program_config=pc(256))
    yield _U + "cur-pos-list", su(cur_pos=[500] * b, cur_pos_tensor=None)
    yield _U + "cur-pos-list-4", su(cur_pos=[5] * 4, cur_pos_tensor=None)
    yield _U + "cur-pos-S", su(cur_pos=[s] * b, cur_pos_tensor=None)
    yield _U + "no-cur-pos", su(cur_pos_tensor=None)
    yield _U + "cur-pos-4", su(cur_pos_tensor=i32([4]))
    yield _U + "cur-pos-uint32", su(cur_pos_tensor=i32([b], dtype="UINT32"))
    yield _U + "k-bf16", su(kk=T([b, 1, s, dh]))
    yield _U + "k-bfp4", su(kk=T([b, 1, s, dh], "BFLOAT4_B"))
    yield _U + "q-bfp8", su({**q, "dtype": "BFLOAT8_B"})
    yield _U + "q-fp32", su({**q, "dtype": "FLOAT32"})
    yield _U + "with-v", su(v=T([b, 1, s, dv], "BFLOAT8_B"))
    yield _U + "with-v-576", su(v=k)
    yield _U + "with-v-seq-512", su(v=T([b, 1, 512, dv], "BFLOAT8_B"))
    yield _U + "with-v-batch-4", su(v=T([4, 1, s, dv], "BFLOAT8_B"))
    yield _U + "with-v-2-heads", su(v=T([b, 2, s, dv], "BFLOAT8_B"))
    yield _U + "hv-576", su(hv=dh)
    yield _U + "hv-640", su(hv=640)
    yield _U + "hv-500", su(hv=500)
    yield _U + "hv-64", su(hv=64)
    yield _U + "two-kv-heads", su(kk=T([b, 2, s, dh], "BFLOAT8_B"))
    yield _U + "16q-16kv", su(kk=T([b, 16, s, dh], "BFLOAT8_B"))
    yield _U + "9q-2kv", su(T([1, b, 9, dh]), T([b, 2, s, dh], "BFLOAT8_B"))
    yield _U + "gqa-q-bfp8", su({**q, "dtype": "BFLOAT8_B"}, T([b, 2, s, dh], "BFLOAT8_B"))
    yield _U + "gqa-sharded-output", su(kk=T([b, 2, s, dh], "BFLOAT8_B"), memory_config=height((32, dv), b))
    yield _U + "q-hd-512", su(T([1, b, nh, 512]))
    yield _U + "k-batch-4", su(kk=T([4, 1, s, dh], "BFLOAT8_B"))
    yield _U + "q-dim0-2", su(T([2, b, nh, dh]))
    yield _U + "nh-128", su(T([1, b, 128, dh]))
    yield _U + "nh-128-chunk-32", su(T([1, b, 128, dh]), program_config=pc(32))
    yield _U + "users-32", su(T([1, 32, nh, dh]), T([32, 1, s, dh], "BFLOAT8_B"), cur_pos_tensor=i32([32]))
    yield _U + "users-64", su(T([1, 64, nh, dh]), T([64, 1, s, dh], "BFLOAT8_B"), cur_pos_tensor=i32([64]))
    yield _U + "seq-100", su(kk=T([b, 1, 100, dh], "BFLOAT8_B"), program_config=None)
    yield _U + "seq-96", su(kk=T([b, 1, 96, dh], "BFLOAT8_B"), program_config=None)
    yield _U + "seq-96-chunk-128", su(kk=T([b, 1, 96, dh], "BFLOAT8_B"))
    yield _U + "seq-2048", su(kk=T([b, 1, 2048, dh], "BFLOAT8_B"))
    yield _U + "k-chunk-48", su(program_config=pc(48))
    yield _U + "k-chunk-16", su(program_config=pc(16))
    yield _U + "k-chunk-2048", su(program_config=pc(2048))
    yield _U + "k-chunk-0", su(program_config=pc(0))
    yield _U + "grid-4x1", su(program_config=pc(0, gx=4, gy=1))
    yield _U + "grid-9x9", su(program_config=pc(0, gx=9, gy=9))
    yield _U + "dh-192", su(T([1, b, nh, 192]), T([b, 1, s, 192], "BFLOAT8_B"), hv=128)
    yield _U + "q-height-sharded", su(T([1, b, nh, dh], m=height((32, dh), b)))
    yield _U + "q-height-sharded-out-sharded", su(T([1, b, nh, dh], m=height((32, dh), b)),
                                                   memory_config=height((32, dv), b))
    yield _U + "q-width-sharded", su(T([1, b, nh, dh], m=width((b * 32, 32), 18)))
    yield _U + "out-width-sharded", su(memory_config=width((b * 32, 32), 16))
    yield _U + "out-l1", su(memory_config=L1)
    yield _U + "q-l1", su({**q, "mem": L1})
    yield _U + "k-l1", su(kk={**k, "mem": L1})
    yield _U + "k-row-major", su(kk={**k, "dtype": "BFLOAT16", "layout": "ROW_MAJOR"})
    yield _U + "q-row-major-dram", su({**q, "layout": "ROW_MAJOR"})
    yield _U + "window-128", su(sliding_window_size=128)
    yield _U + "non-causal", su(is_causal=False, cur_pos_tensor=None)
    yield _U + "non-causal-mask", su(is_causal=False, cur_pos_tensor=None, attn_mask=T([1, b, nh, s]))
    yield _U + "causal-with-mask", su(attn_mask=T([1, b, nh, s]))
    yield _U + "sink", su(attention_sink=T([32, 32]))
    yield _U + "sink-heads-64", su(attention_sink=T([64, 32]))
    yield _U + "sink-4d", su(attention_sink=T([1, 1, 32, 32]))
    yield _U + "sink-width-64", su(attention_sink=T([32, 64]))
    yield _U + "sink-bfp8", su(attention_sink=T([32, 32], "BFLOAT8_B"))
    yield _U + "sink-row-major", su(attention_sink=T([32, 32], layout="ROW_MAJOR"))
    yield _U + "sink-l1", su(attention_sink=T([32, 32], m=L1))
    yield _U + "cur-pos-2-rows", su(cur_pos_tensor=i32([2, b]))
    yield _U + "cur-pos-1xB", su(cur_pos_tensor=i32([1, b]))
    yield _U + "cur-pos-tile", su(cur_pos_tensor=i32([1, b], layout="TILE"))
    rm_q = T([1, b, nh, dh], layout="ROW_MAJOR", m=height((nh, dh), b))
    yield _U + "q-row-major-sharded", su(rm_q)
    yield _U + "q-row-major-sharded-output", su(rm_q, memory_config=height((nh, dv), b))
    yield _U + "q-row-major-32-heads-sharded-output", su(
        T([1, b, 32, dh], layout="ROW_MAJOR", m=height((32, dh), b)), memory_config=height((32, dv), b))
    yield _U + "k-host", su(kk=host([b, 1, s, dh], layout="TILE"))  # (a host Q kills the process: segfault)
    # tt-metal's unit-test shapes: 128 heads of 512 + 64, Q height-sharded over 64 cores, bf16 Q over a bfp4 cache
    yield _U + "unit-128-heads", su(T([1, 4, 128, dh], m=height((32, dh), 64)), T([4, 1, s, dh], "BFLOAT8_B"),
                                    cur_pos_tensor=i32([4]), memory_config=height((32, dv), 64),
                                    program_config=pc(128))
    yield _U + "unit-rope-0", su(T([1, 2, 64, 256]), T([2, 1, s, 256], "BFLOAT4_B"), hv=256,
                                 cur_pos_tensor=i32([2]), program_config=pc(128))
    yield _U + "unit-lora-32", su(T([1, 2, 64, 96]), T([2, 1, s, 96], "BFLOAT8_B"), hv=32,
                                  cur_pos_tensor=i32([2]), program_config=pc(128))


def prefill() -> Iterator[tuple[str, dict]]:
    b, nh, s, dh, dv = 1, 16, 256, 576, 512
    q = T([b, nh, s, dh])
    k = T([b, 1, s, dh])
    _P = "mla-prefill/"

    def sp(qq: dict = q, kk: dict = k, hv: int = dv, **kw: Any) -> dict:
        kw = {"program_config": pc(64, 64), **kw}
        return call(PRE, qq, kk, hv, **{n: x for n, x in kw.items() if x is not None})

    yield _P + "ok", sp()
    yield _P + "scale", sp(scale=0.05)
    yield _P + "no-program-config", sp(program_config=None)
    yield _P + "k-bfp8", sp(kk=T([b, 1, s, dh], "BFLOAT8_B"))
    yield _P + "q-bfp8", sp({**q, "dtype": "BFLOAT8_B"})
    yield _P + "q-fp32", sp({**q, "dtype": "FLOAT32"})
    yield _P + "hv-576", sp(hv=dh)
    yield _P + "hv-640", sp(hv=640)
    yield _P + "hv-500", sp(hv=500)
    yield _P + "hv-128", sp(hv=128)
    yield _P + "two-kv-heads", sp(kk=T([b, 2, s, dh]))
    yield _P + "k-hd-512", sp(kk=T([b, 1, s, 512]))
    yield _P + "k-seq-128", sp(kk=T([b, 1, 128, dh]))
    yield _P + "seq-100", sp(T([b, nh, 100, dh]), T([b, 1, 100, dh]))
    yield _P + "seq-96", sp(T([b, nh, 96, dh]), T([b, 1, 96, dh]), program_config=pc(32, 32))
    yield _P + "batch-2", sp(T([2, nh, s, dh]), T([2, 1, s, dh]))
    yield _P + "nh-8", sp(T([b, 8, s, dh]))
    yield _P + "nh-128", sp(T([b, 128, s, dh]))
    yield _P + "dh-192", sp(T([b, nh, s, 192]), T([b, 1, s, 192]), hv=128)
    yield _P + "q-l1", sp({**q, "mem": L1})
    yield _P + "out-l1", sp(memory_config=L1)
    yield _P + "non-causal", sp(is_causal=False)
    yield _P + "mask", sp(is_causal=False, attn_mask=T([b, 1, s, s]))
    yield _P + "q-chunk-48", sp(program_config=pc(64, 48))
    yield _P + "k-chunk-96", sp(program_config=pc(96, 64))
    yield _P + "chunk-512", sp(program_config=pc(512, 512))
    yield _P + "q-row-major", sp({**q, "layout": "ROW_MAJOR"})
    yield _P + "k-row-major", sp(kk={**k, "layout": "ROW_MAJOR"})
    yield _P + "k-host", sp(kk=host([b, 1, s, dh], layout="TILE"))
    yield _P + "q-height-sharded", sp(T([b, nh, s, dh], m=height((64, dh), 64)))
    yield _P + "causal-with-mask", sp(attn_mask=T([b, 1, s, s]))
    yield _P + "mask-host", sp(is_causal=False, attn_mask=host([b, 1, s, s], layout="TILE"))
    yield _P + "mask-row-major", sp(is_causal=False, attn_mask=T([b, 1, s, s], layout="ROW_MAJOR"))
    yield _P + "mask-fp32", sp(is_causal=False, attn_mask=T([b, 1, s, s], "FLOAT32"))
    yield _P + "mask-bfp8", sp(is_causal=False, attn_mask=T([b, 1, s, s], "BFLOAT8_B"))
    yield _P + "mask-l1", sp(is_causal=False, attn_mask=T([b, 1, s, s], m=L1))
    yield _P + "mask-batch-3", sp(is_causal=False, attn_mask=T([3, 1, s, s]))
    yield _P + "mask-heads-2", sp(is_causal=False, attn_mask=T([b, 2, s, s]))
    yield _P + "mask-per-head", sp(is_causal=False, attn_mask=T([b, nh, s, s]))
    yield _P + "mask-q-len-128", sp(is_causal=False, attn_mask=T([b, 1, 128, s]))
    yield _P + "mask-k-len-128", sp(is_causal=False, attn_mask=T([b, 1, s, 128]))
    yield _P + "non-causal-k-128", sp(kk=T([b, 1, 128, dh]), is_causal=False)
    yield _P + "k-hd-512-hv-576", sp(kk=T([b, 1, s, 512]), hv=dh)
    yield _P + "9q-2kv", sp(T([b, 9, s, dh]), T([b, 2, s, dh]))
    yield _P + "k-chunk-0", sp(program_config=pc(0, 64))
    yield _P + "hd-48", sp(T([b, nh, s, 48]), T([b, 1, s, 48]), hv=32)
    yield _P + "grid-9x9", sp(program_config=pc(64, 64, gx=9, gy=9))
    # The program's circular buffers must end below the lowest L1 buffer: a long Q in L1 sits under them.
    yield _P + "q-l1-clash", sp(T([b, nh, 2048, dh], m=L1), T([b, 1, 2048, dh]), program_config=pc(128, 128))
    yield _P + "q-dram-chunk-128", sp(T([b, nh, 2048, dh]), T([b, 1, 2048, dh]), program_config=pc(128, 128))


def chunked() -> Iterator[tuple[str, dict]]:
    nh, s, dh, dv, bs, nb = 16, 128, 576, 512, 64, 64
    q = T([1, nh, s, dh])
    kc = T([nb, 1, bs, dh], "BFLOAT8_B")
    pt = i32([1, 8])
    _C = "mla-chunked/"

    def sc(qq: dict = q, k: dict = kc, hv: int = dv, table: dict = pt, start: int = 128, **kw: Any) -> dict:
        kw = {"program_config": pc(64, 64), **kw}
        return call(CHUNK, qq, k, hv, table, start, **{n: x for n, x in kw.items() if x is not None})

    yield _C + "ok", sc()
    yield _C + "start-0", sc(start=0)
    yield _C + "start-32", sc(start=32)
    yield _C + "start-384", sc(start=384)
    yield _C + "start-512", sc(start=512)
    yield _C + "no-program-config", sc(program_config=None)
    yield _C + "k-bf16", sc(k=T([nb, 1, bs, dh]))
    yield _C + "k-bfp4", sc(k=T([nb, 1, bs, dh], "BFLOAT4_B"))
    yield _C + "q-bfp8", sc({**q, "dtype": "BFLOAT8_B"})
    yield _C + "hv-576", sc(hv=dh)
    yield _C + "hv-640", sc(hv=640)
    yield _C + "two-kv-heads", sc(k=T([nb, 2, bs, dh], "BFLOAT8_B"))
    yield _C + "q-hd-512", sc(T([1, nh, s, 512]))
    yield _C + "batch-2", sc(T([2, nh, s, dh]), table=i32([2, 8]))
    yield _C + "page-table-uint32", sc(table=i32([1, 8], dtype="UINT32"))
    yield _C + "page-table-tile", sc(table=i32([1, 8], layout="TILE"))
    yield _C + "block-32", sc(k=T([nb, 1, 32, dh], "BFLOAT8_B"))
    yield _C + "q-chunk-48", sc(program_config=pc(64, 48))
    yield _C + "seq-96", sc(T([1, nh, 96, dh]), program_config=pc(32, 32), start=96)
    yield _C + "q-l1", sc({**q, "mem": L1})
    yield _C + "k-l1", sc(k={**kc, "mem": L1})
    yield _C + "page-table-host", sc(table=host([1, 8], "INT32"))
    yield _C + "cache-row-major", sc(k=T([nb, 1, bs, dh], layout="ROW_MAJOR"))
    yield _C + "q-fp32", sc({**q, "dtype": "FLOAT32"})
    yield _C + "q-height-sharded", sc(T([1, nh, s, dh], m=height((32, dh), 64)))
    yield _C + "start-negative", sc(start=-64)
    yield _C + "page-table-2-rows", sc(table=i32([2, 8]))
    yield _C + "6q-4kv", sc(T([1, 6, s, dh]), k=T([nb, 4, bs, dh], "BFLOAT8_B"))
    yield _C + "k-chunk-0", sc(program_config=pc(0, 64))
    yield _C + "start-32-chunks-32", sc(start=32, program_config=pc(32, 32))
    yield _C + "start-32-k-chunk-64", sc(start=32, program_config=pc(64, 32))
    yield _C + "hd-48", sc(T([1, nh, s, 48]), k=T([nb, 1, bs, 48], "BFLOAT8_B"), hv=32)
    yield _C + "page-table-l1-4", sc(table=i32([1, 4], m=L1), start=0)
    yield _C + "page-table-l1-8", sc(table=i32([1, 8], m=L1), start=0)
    yield _C + "grid-9x9", sc(program_config=pc(64, 64, gx=9, gy=9))
    yield _C + "scale", sc(scale=0.05)


def cases() -> Iterator[tuple[str, dict]]:
    yield from decode()
    yield from unpaged()
    yield from prefill()
    yield from chunked()
