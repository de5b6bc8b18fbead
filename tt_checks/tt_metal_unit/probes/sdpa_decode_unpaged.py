"""Probes behind docs/tt-metal-unit-tests.md (issue 22): the real ttnn 0.81.1's unpaged
transformer.scaled_dot_product_attention_decode on the mock N150 - which calls it accepts, what it refuses, the
output spec, and what enters the program cache (the cur_pos list, cur_pos_tensor, sharding).

    ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/sdpa_decode_unpaged.py
"""

import re

import torch
import ttnn


def verdict(name, f):
    try:
        r = f()
        extra = ""
        if isinstance(r, ttnn.Tensor):
            extra = f"{list(r.shape)} padded {list(r.padded_shape)} {r.dtype} {r.layout} {r.memory_config()}"
        print(f"{name}: OK {extra}")
    except Exception as e:  # noqa: BLE001
        m = re.search(r"info:\n(.*?)\nbacktrace", str(e), re.S)
        print(f"{name}: REJECTS {(m.group(1) if m else str(e))[:400]!r}")


dev = ttnn.open_device(device_id=0)
DR = ttnn.DRAM_MEMORY_CONFIG


def tt(shape, dtype=ttnn.bfloat16, mc=DR, layout=ttnn.TILE_LAYOUT):
    return ttnn.from_torch(torch.zeros(shape), dtype=dtype, layout=layout, device=dev, memory_config=mc)


def hs(b, rows=32, d=128):
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(min(b, 8) - 1, max(b // 8, 1) - 1))})
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                             ttnn.ShardSpec(grid, (rows, d), ttnn.ShardOrientation.ROW_MAJOR))


def pc(k=128, g=(8, 6), q=32):
    return ttnn.SDPAProgramConfig(compute_with_storage_grid_size=g, q_chunk_size=q, k_chunk_size=k,
                                  exp_approx_mode=False)


def cp(vals, dtype=ttnn.int32):
    return ttnn.Tensor(torch.tensor(vals), dtype).to(dev)


B, NH, NKV, S, D = 8, 8, 1, 1024, 128
sd = ttnn.transformer.scaled_dot_product_attention_decode
q, k, v = tt([1, B, NH, D]), tt([B, NKV, S, D], ttnn.bfloat8_b), tt([B, NKV, S, D], ttnn.bfloat8_b)
pos = [500] * B
verdict("ok list", lambda: sd(q, k, v, cur_pos=pos, scale=0.1, program_config=pc()))
verdict("ok tensor", lambda: sd(q, k, v, cur_pos_tensor=cp(pos), program_config=pc()))
verdict("ok no program config", lambda: sd(q, k, v, cur_pos=pos))
verdict("ok k chunk 0", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(0)))
verdict("causal without positions", lambda: sd(q, k, v, program_config=pc()))
verdict("list and tensor", lambda: sd(q, k, v, cur_pos=pos, cur_pos_tensor=cp(pos), program_config=pc()))
verdict("list pos = S", lambda: sd(q, k, v, cur_pos=[S] * B, program_config=pc()))
verdict("list pos = S-1", lambda: sd(q, k, v, cur_pos=[S - 1] * B, program_config=pc()))
verdict("list of 4", lambda: sd(q, k, v, cur_pos=[5] * 4, program_config=pc()))
verdict("list of 16", lambda: sd(q, k, v, cur_pos=[5] * 16, program_config=pc()))
verdict("list -1", lambda: sd(q, k, v, cur_pos=[-1] + [5] * 7, program_config=pc()))
verdict("tensor of 4", lambda: sd(q, k, v, cur_pos_tensor=cp([5] * 4), program_config=pc()))
verdict("tensor uint32", lambda: sd(q, k, v, cur_pos_tensor=cp([5] * 8, ttnn.uint32), program_config=pc()))
verdict("tensor 1xB", lambda: sd(q, k, v, cur_pos_tensor=cp([[5] * 8]), program_config=pc()))
verdict("k batch 4", lambda: sd(q, tt([4, 1, S, D], ttnn.bfloat8_b), tt([4, 1, S, D], ttnn.bfloat8_b),
                                cur_pos=[5] * 8, program_config=pc()))
verdict("v seq 512", lambda: sd(q, k, tt([B, 1, 512, D], ttnn.bfloat8_b), cur_pos=pos, program_config=pc()))
verdict("k hd 64", lambda: sd(q, tt([B, 1, S, 64]), tt([B, 1, S, 64]), cur_pos=pos, program_config=pc()))
verdict("v hd 64", lambda: sd(q, k, tt([B, 1, S, 64]), cur_pos=pos, program_config=pc()))
verdict("q dim0 2", lambda: sd(tt([2, B, NH, D]), k, v, cur_pos=pos, program_config=pc()))
verdict("k chunk 48", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(48)))
verdict("k chunk 16", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(16)))
verdict("k chunk 2048 > S", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(2048)))
verdict("S 96 no chunk", lambda: sd(q, tt([B, 1, 96, D]), tt([B, 1, 96, D]), cur_pos=[5] * B))
verdict("S 96 chunk 64", lambda: sd(q, tt([B, 1, 96, D]), tt([B, 1, 96, D]), cur_pos=[5] * B,
                                    program_config=pc(64)))
verdict("S 100 no chunk", lambda: sd(q, tt([B, 1, 100, D]), tt([B, 1, 100, D]), cur_pos=[5] * B))
verdict("k fp32", lambda: sd(q, tt([B, 1, S, D], ttnn.float32), v, cur_pos=pos, program_config=pc()))
verdict("q fp32", lambda: sd(tt([1, B, NH, D], ttnn.float32), k, v, cur_pos=pos, program_config=pc()))
verdict("k row major", lambda: sd(q, k, tt([B, 1, S, D], layout=ttnn.ROW_MAJOR_LAYOUT), cur_pos=pos,
                                  program_config=pc()))
verdict("q row major dram", lambda: sd(tt([1, B, NH, D], layout=ttnn.ROW_MAJOR_LAYOUT), k, v, cur_pos=pos,
                                       program_config=pc()))
verdict("k l1", lambda: sd(q, tt([B, 1, S, D], ttnn.bfloat8_b, ttnn.L1_MEMORY_CONFIG), v, cur_pos=pos,
                           program_config=pc()))
verdict("q l1", lambda: sd(tt([1, B, NH, D], mc=ttnn.L1_MEMORY_CONFIG), k, v, cur_pos=pos, program_config=pc()))
verdict("q height sharded", lambda: sd(tt([1, B, NH, D], mc=hs(B)), k, v, cur_pos=pos, program_config=pc()))
verdict("out height sharded", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(), memory_config=hs(B)))
verdict("out l1", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(), memory_config=ttnn.L1_MEMORY_CONFIG))
verdict("grid 4x1 < B", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(g=(4, 1))))
verdict("grid 9x9", lambda: sd(q, k, v, cur_pos=pos, program_config=pc(g=(9, 9))))
verdict("window 128", lambda: sd(q, k, v, cur_pos=pos, sliding_window_size=128, program_config=pc()))
# GQA
qg, kg = tt([1, 4, 32, D]), tt([4, 8, S, D], ttnn.bfloat8_b)
verdict("gqa ok", lambda: sd(qg, kg, kg, cur_pos_tensor=cp([5] * 4), program_config=pc(g=(8, 8))))
verdict("gqa q bfp8", lambda: sd(tt([1, 4, 32, D], ttnn.bfloat8_b), kg, kg, cur_pos=[5] * 4, program_config=pc()))
verdict("gqa sharded out", lambda: sd(qg, kg, kg, cur_pos=[5] * 4, program_config=pc(), memory_config=hs(4)))
verdict("gqa 9 q heads", lambda: sd(tt([1, 4, 9, D]), tt([4, 2, S, D]), tt([4, 2, S, D]), cur_pos=[5] * 4,
                                    program_config=pc()))
verdict("v heads 4", lambda: sd(qg, kg, tt([4, 4, S, D], ttnn.bfloat8_b), cur_pos=[5] * 4, program_config=pc()))
# non-causal with and without a mask
S2 = 2048
q1, k1 = tt([1, 1, 64, D]), tt([1, 8, S2, D], ttnn.bfloat8_b)
m = tt([1, 1, 64, S2], ttnn.bfloat4_b)
verdict("nc mask ok", lambda: sd(q1, k1, k1, is_causal=False, attn_mask=m, program_config=pc(512, (8, 8), 64)))
verdict("nc no mask", lambda: sd(q1, k1, k1, is_causal=False, program_config=pc(512, (8, 8), 64)))
verdict("nc mask and cur_pos", lambda: sd(q1, k1, k1, is_causal=False, attn_mask=m, cur_pos=[5],
                                          program_config=pc(512, (8, 8), 64)))
verdict("causal with mask", lambda: sd(q1, k1, k1, attn_mask=m, cur_pos=[5], program_config=pc(512, (8, 8), 64)))
verdict("nc mask S 1024", lambda: sd(q1, k1, k1, is_causal=False, attn_mask=tt([1, 1, 64, 1024], ttnn.bfloat4_b),
                                     program_config=pc(512, (8, 8), 64)))
verdict("nc mask heads 32", lambda: sd(q1, k1, k1, is_causal=False, attn_mask=tt([1, 1, 32, S2], ttnn.bfloat4_b),
                                       program_config=pc(512, (8, 8), 64)))
verdict("nc mask fp32", lambda: sd(q1, k1, k1, is_causal=False, attn_mask=tt([1, 1, 64, S2], ttnn.float32),
                                   program_config=pc(512, (8, 8), 64)))
verdict("nc mask chunk 0", lambda: sd(q1, k1, k1, is_causal=False, attn_mask=m, program_config=pc(0, (8, 8), 64)))
verdict("nc window", lambda: sd(q1, k1, k1, is_causal=False, sliding_window_size=128,
                                program_config=pc(512, (8, 8), 64)))
# attention sink, share_cache
verdict("sink ok", lambda: sd(q, k, v, cur_pos=pos, attention_sink=tt([32, 32]), program_config=pc()))
verdict("sink bfp8", lambda: sd(q, k, v, cur_pos=pos, attention_sink=tt([32, 32], ttnn.bfloat8_b),
                                program_config=pc()))
verdict("sink 4d", lambda: sd(q, k, v, cur_pos=pos, attention_sink=tt([1, 1, 32, 32]), program_config=pc()))
k1b = tt([1, 1, S, D], ttnn.bfloat8_b)
verdict("share_cache", lambda: sd(q, k1b, k1b, cur_pos=pos, share_cache=True, program_config=pc()))
verdict("share_cache false k batch 1", lambda: sd(q, k1b, k1b, cur_pos=pos, share_cache=False, program_config=pc()))
verdict("share_cache k batch 8", lambda: sd(q, k, v, cur_pos=pos, share_cache=True, program_config=pc()))
verdict("tensor of 16", lambda: sd(q, k, v, cur_pos_tensor=cp([5] * 16), program_config=pc()))
verdict("tensor 8x1", lambda: sd(q, k, v, cur_pos_tensor=cp([[5]] * 8), program_config=pc()))
verdict("tensor 2x4", lambda: sd(q, k, v, cur_pos_tensor=cp([[5] * 4] * 2), program_config=pc()))
verdict("tensor tile", lambda: sd(q, k, v, cur_pos_tensor=ttnn.from_torch(torch.zeros(1, 8), dtype=ttnn.int32,
                                  layout=ttnn.TILE_LAYOUT, device=dev), program_config=pc()))
verdict("tensor bf16", lambda: sd(q, k, v, cur_pos_tensor=tt([8], layout=ttnn.ROW_MAJOR_LAYOUT), program_config=pc()))
verdict("tensor of 4 and k batch 4", lambda: sd(q, tt([4, 1, S, D]), tt([4, 1, S, D]), cur_pos_tensor=cp([5] * 4),
                                                 program_config=pc()))
verdict("tensor of 4 and grid 4x1", lambda: sd(q, k, v, cur_pos_tensor=cp([5] * 4), program_config=pc(g=(4, 1))))
verdict("list of 4 and grid 4x1", lambda: sd(q, k, v, cur_pos=[5] * 4, program_config=pc(g=(4, 1))))
verdict("list of 4 and tensor", lambda: sd(q, k, v, cur_pos=[5] * 4, cur_pos_tensor=cp(pos), program_config=pc()))
verdict("list S and tensor", lambda: sd(q, k, v, cur_pos=[S] * 8, cur_pos_tensor=cp(pos), program_config=pc()))
verdict("nc no positions grid 4x1", lambda: sd(q, k, v, is_causal=False, program_config=pc(g=(4, 1))))
verdict("nc window no mask", lambda: sd(q, k, v, is_causal=False, sliding_window_size=64, program_config=pc()))
verdict("b 32 nh 8 grid 8x6", lambda: sd(tt([1, 32, 8, D]), tt([32, 1, 256, D]), tt([32, 1, 256, D]),
                                         cur_pos_tensor=cp([5] * 32), program_config=pc(g=(8, 6))))
verdict("sink and share", lambda: sd(q, k1b, k1b, cur_pos=pos, share_cache=True, attention_sink=tt([32, 32]),
                                     program_config=pc()))

# the program cache: what keys it
dev.enable_program_cache()
n0 = dev.num_program_cache_entries()
sd(q, k, v, cur_pos=pos, program_config=pc())
n1 = dev.num_program_cache_entries()
sd(q, k, v, cur_pos=[7] * B, program_config=pc())
n2 = dev.num_program_cache_entries()
sd(q, k, v, cur_pos=pos, program_config=pc(), scale=0.5)
n3 = dev.num_program_cache_entries()
sd(q, k, v, cur_pos_tensor=cp(pos), program_config=pc())
n4 = dev.num_program_cache_entries()
sd(q, k, v, cur_pos_tensor=cp([9] * B), program_config=pc())
n5 = dev.num_program_cache_entries()
sd(q, k, v, cur_pos=pos, program_config=pc(64))
n6 = dev.num_program_cache_entries()
qs = tt([1, B, NH, D], mc=hs(B))
sd(qs, k, v, cur_pos=pos, program_config=pc())
n7 = dev.num_program_cache_entries()
sd(qs, k, v, cur_pos=[3] * B, program_config=pc(), memory_config=hs(B))
n8 = dev.num_program_cache_entries()
sd(q, k, v, cur_pos_tensor=cp(pos), program_config=pc(), memory_config=hs(B))
n9 = dev.num_program_cache_entries()
print("sharded q", n7, "sharded q+out other list", n8, "tensor sharded out", n9)
print("cache entries: start", n0, "list", n1, "other list", n2, "scale", n3, "tensor", n4, "other tensor", n5,
      "k chunk 64", n6)
ttnn.close_device(dev)
