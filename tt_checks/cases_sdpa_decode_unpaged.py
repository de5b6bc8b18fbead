"""Hand-written corpus cases: transformer.scaled_dot_product_attention_decode, the unpaged decode op (see
tt_checks/corpus_cases.py for the encoding helpers).

Q [1, B, nh, hd] over K/V [B, nkv, S, hd] (or [1, nkv, S, hd] with share_cache), causal with a cur_pos list or a
cur_pos tensor, non-causal with or without a mask, attention sink, GQA: valid calls and, next to them, the call that
breaks each rule 0.81.1 checks (measured first with tt_checks/tt_metal_unit/probes/sdpa_decode_unpaged.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tt_checks.corpus_cases import L1, T, call, coord, height, i32, obj, width

OP = "transformer.scaled_dot_product_attention_decode"
_U = "sdpa-decode-unpaged/"


def pc(k_chunk: int = 128, gx: int = 8, gy: int = 6, q_chunk: int = 32) -> dict:
    return obj("SDPAProgramConfig", compute_with_storage_grid_size=coord(gx, gy), q_chunk_size=q_chunk,
               k_chunk_size=k_chunk, exp_approx_mode=False)


def cases() -> Iterator[tuple[str, dict]]:
    b, nh, s, hd = 8, 8, 1024, 128
    q = T([1, b, nh, hd])
    kv = T([b, 1, s, hd], "BFLOAT8_B")
    pos = [500] * b

    def sd(qq: dict = q, k: dict = kv, v: dict = kv, **kw: Any) -> dict:
        kw = {"cur_pos": pos, "program_config": pc(), **kw}
        return call(OP, qq, k, v, **{n: x for n, x in kw.items() if x is not None})

    yield _U + "ok", sd(scale=0.1)
    yield _U + "cur-pos-tensor", sd(cur_pos=None, cur_pos_tensor=i32([b]))
    yield _U + "no-program-config", sd(program_config=None)
    yield _U + "window-128", sd(sliding_window_size=128)
    # the host's chunk size: the user's (power of 2, multiple of 32), else the largest power-of-2 divisor of S
    yield _U + "k-chunk-48", sd(program_config=pc(48))
    yield _U + "k-chunk-16", sd(program_config=pc(16))
    yield _U + "k-chunk-0", sd(program_config=pc(0))
    yield _U + "k-chunk-2048", sd(program_config=pc(2048))
    yield _U + "seq-100", sd(k=T([b, 1, 100, hd]), v=T([b, 1, 100, hd]), cur_pos=[5] * b, program_config=None)
    yield _U + "seq-96", sd(k=T([b, 1, 96, hd]), v=T([b, 1, 96, hd]), cur_pos=[5] * b, program_config=None)
    # the inputs
    yield _U + "q-fp32", sd({**q, "dtype": "FLOAT32"})
    yield _U + "k-fp32", sd(k={**kv, "dtype": "FLOAT32"})
    yield _U + "v-row-major", sd(v={**kv, "dtype": "BFLOAT16", "layout": "ROW_MAJOR"})
    yield _U + "q-row-major-dram", sd({**q, "layout": "ROW_MAJOR"})
    yield _U + "q-row-major-sharded", sd(T([1, b, nh, hd], layout="ROW_MAJOR", m=height((nh, hd), b)))
    yield _U + "q-width-sharded", sd(T([1, b, nh, hd], m=width((b * 32, 32), 4)))
    yield _U + "q-height-sharded", sd(T([1, b, nh, hd], m=height((32, hd), b)))
    yield _U + "q-l1", sd({**q, "mem": L1})
    yield _U + "k-l1", sd(k={**kv, "mem": L1})
    yield _U + "output-width-sharded", sd(memory_config=width((b * 32, 32), 4))
    yield _U + "output-height-sharded", sd(memory_config=height((32, hd), b))
    yield _U + "output-l1", sd(memory_config=L1)
    # shapes: batches, Q's dim 0, sequence lengths, hidden sizes
    yield _U + "k-batch-4", sd(k=T([4, 1, s, hd], "BFLOAT8_B"))
    yield _U + "v-batch-4", sd(v=T([4, 1, s, hd], "BFLOAT8_B"))
    yield _U + "q-dim0-2", sd(T([2, b, nh, hd]))
    yield _U + "v-seq-512", sd(v=T([b, 1, 512, hd], "BFLOAT8_B"))
    yield _U + "k-hd-64", sd(k=T([b, 1, s, 64]), v=T([b, 1, s, 64]))
    yield _U + "v-hd-64", sd(v=T([b, 1, s, 64]))
    # share_cache: one K/V of batch 1 for every user
    one = T([1, 1, s, hd], "BFLOAT8_B")
    yield _U + "share-cache", sd(k=one, v=one, share_cache=True)
    yield _U + "share-cache-k-batch-8", sd(share_cache=True)
    yield _U + "share-cache-v-batch-8", sd(k=one, share_cache=True)
    yield _U + "share-cache-false-k-batch-1", sd(k=one, v=one, share_cache=False)
    # positions: a list of uint32 below S with one entry per user, or a tensor of at least B in its last dim
    yield _U + "cur-pos-S", sd(cur_pos=[s] * b)
    yield _U + "cur-pos-S-1", sd(cur_pos=[s - 1] * b)
    yield _U + "cur-pos-list-4", sd(cur_pos=[5] * 4)
    yield _U + "cur-pos-list-16", sd(cur_pos=[5] * 16)
    yield _U + "no-cur-pos", sd(cur_pos=None)
    yield _U + "cur-pos-list-and-tensor", sd(cur_pos=[5] * 4, cur_pos_tensor=i32([b]))
    yield _U + "cur-pos-S-and-tensor", sd(cur_pos=[s] * b, cur_pos_tensor=i32([b]))
    yield _U + "cur-pos-tensor-4", sd(cur_pos=None, cur_pos_tensor=i32([4]))
    yield _U + "cur-pos-tensor-16", sd(cur_pos=None, cur_pos_tensor=i32([16]))
    yield _U + "cur-pos-uint32", sd(cur_pos=None, cur_pos_tensor=i32([b], dtype="UINT32"))
    yield _U + "cur-pos-8x1", sd(cur_pos=None, cur_pos_tensor=i32([b, 1]))
    yield _U + "cur-pos-1x8", sd(cur_pos=None, cur_pos_tensor=i32([1, b]))
    yield _U + "cur-pos-tile", sd(cur_pos=None, cur_pos_tensor=i32([1, b], layout="TILE"))
    yield _U + "cur-pos-8x1-k-batch-4", sd(k=T([4, 1, s, hd], "BFLOAT8_B"), cur_pos=None, cur_pos_tensor=i32([b, 1]))
    yield _U + "cur-pos-tensor-4-k-batch-4", sd(k=T([4, 1, s, hd]), v=T([4, 1, s, hd]), cur_pos=None,
                                                 cur_pos_tensor=i32([4]))
    yield _U + "cur-pos-tensor-4-grid-4x1", sd(cur_pos=None, cur_pos_tensor=i32([4]), program_config=pc(gx=4, gy=1))
    yield _U + "cur-pos-list-4-grid-4x1", sd(cur_pos=[5] * 4, program_config=pc(gx=4, gy=1))
    yield _U + "cur-pos-S-k-hd-64", sd(cur_pos=[s] * b, k=T([b, 1, s, 64]), v=T([b, 1, s, 64]))
    yield _U + "cur-pos-8x1-v-4-heads", sd(v=T([b, 4, s, hd], "BFLOAT8_B"), cur_pos=None, cur_pos_tensor=i32([b, 1]))
    # the grid
    yield _U + "grid-9x9", sd(program_config=pc(gx=9, gy=9))
    yield _U + "grid-4x1", sd(program_config=pc(gx=4, gy=1))
    # GQA
    qg, kg = T([1, 4, 32, hd]), T([4, 8, s, hd], "BFLOAT8_B")
    yield _U + "gqa", sd(qg, kg, kg, cur_pos=None, cur_pos_tensor=i32([4]), program_config=pc(gx=8, gy=8))
    yield _U + "gqa-q-bfp8", sd(T([1, 4, 32, hd], "BFLOAT8_B"), kg, kg, cur_pos=[5] * 4)
    yield _U + "gqa-sharded-output", sd(qg, kg, kg, cur_pos=[5] * 4, memory_config=height((32, hd), 4))
    yield _U + "9q-2kv", sd(T([1, 4, 9, hd]), T([4, 2, s, hd]), T([4, 2, s, hd]), cur_pos=[5] * 4)
    yield _U + "v-4-heads", sd(qg, kg, T([4, 4, s, hd], "BFLOAT8_B"), cur_pos=[5] * 4)
    # non-causal, with and without a mask [B, 1, nh, S]
    s2 = 2048
    q1, k1 = T([1, 1, 64, hd]), T([1, 8, s2, hd], "BFLOAT8_B")
    mask = T([1, 1, 64, s2], "BFLOAT4_B")

    def nc(**kw: Any) -> dict:
        kw = {"cur_pos": None, "is_causal": False, "attn_mask": mask, "program_config": pc(512, 8, 8, 64), **kw}
        return sd(q1, k1, k1, **kw)

    yield _U + "mask/ok", nc()
    yield _U + "non-causal-no-mask", nc(attn_mask=None)
    yield _U + "non-causal-window", nc(attn_mask=None, sliding_window_size=128)
    yield _U + "mask/with-cur-pos", nc(cur_pos=[5])
    yield _U + "mask/chunk-0", nc(program_config=pc(0, 8, 8, 64))
    yield _U + "mask/chunk-4096", nc(program_config=pc(4096, 8, 8, 64))
    yield _U + "causal-with-mask", nc(is_causal=True, cur_pos=[5])
    yield _U + "mask/seq-1024", nc(attn_mask=T([1, 1, 64, 1024], "BFLOAT4_B"))
    yield _U + "mask/heads-32", nc(attn_mask=T([1, 1, 32, s2], "BFLOAT4_B"))
    yield _U + "mask/heads-40", nc(attn_mask=T([1, 1, 40, s2], "BFLOAT4_B"))
    yield _U + "mask/fp32", nc(attn_mask=T([1, 1, 64, s2], "FLOAT32"))
    # the attention sink: [padded heads, 32], bf16, tiled, in DRAM
    yield _U + "sink/ok", sd(attention_sink=T([32, 32]))
    yield _U + "sink/4d", sd(attention_sink=T([1, 1, 32, 32]))
    yield _U + "sink/heads-64", sd(attention_sink=T([64, 32]))
    yield _U + "sink/width-64", sd(attention_sink=T([32, 64]))
    yield _U + "sink/bfp8", sd(attention_sink=T([32, 32], "BFLOAT8_B"))
    yield _U + "sink/row-major", sd(attention_sink=T([32, 32], layout="ROW_MAJOR"))
    yield _U + "sink/l1", sd(attention_sink=T([32, 32], m=L1))
    yield _U + "sink/share-cache", sd(k=one, v=one, share_cache=True, attention_sink=T([32, 32]))
