"""Trace capture/replay: a decode-like graph captured once and replayed with fresh inputs is bit-identical to
running the same ops eagerly; host reads and device open/close during capture raise."""

import pytest
import torch

import ttnn_sim as ttnn
from tests.sim.helpers import bf16, per_user
from tt_models.layouts import dram_sharded_weight

USERS, NH, NKV, HD, DIM, VOCAB, BS, BLOCKS, WIDTH = 32, 4, 2, 32, 128, 256, 32, 80, 2


def make_weights(device):
    """A one-layer decode graph's constants, placed as a device takes them (see tt_models/layouts.py): weights
    width-sharded over the DRAM banks, the rotation tile repeated on every user's core."""
    g = torch.Generator().manual_seed(1)

    def w(*shape, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, memory_config=None):
        return ttnn.from_torch(bf16(torch.randn(*shape, generator=g) * 0.2), dtype, layout=layout, device=device,
                               memory_config=memory_config)

    def dram(k, n):
        return dram_sharded_weight(ttnn, k, n, device.dram_grid_size().x)

    tm = torch.zeros(1, 1, 32, 32)
    tm[..., torch.arange(0, 32, 2), torch.arange(1, 32, 2)] = 1
    tm[..., torch.arange(1, 32, 2), torch.arange(0, 32, 2)] = -1
    qkv = (NH + 2 * NKV) * HD
    return {
        "emb": w(1, 1, VOCAB, DIM, layout=ttnn.ROW_MAJOR_LAYOUT),
        "norm": w(1, 1, DIM // 32, 32, layout=ttnn.ROW_MAJOR_LAYOUT),
        "wqkv": w(1, 1, DIM, qkv, dtype=ttnn.bfloat8_b, memory_config=dram(DIM, qkv)),
        "wo": w(1, 1, NH * HD, DIM, dtype=ttnn.bfloat8_b, memory_config=dram(NH * HD, DIM)),
        "out": w(1, 1, DIM, VOCAB, memory_config=dram(DIM, VOCAB)),
        "cos": w(1, 1, 64, HD, layout=ttnn.ROW_MAJOR_LAYOUT),
        "sin": w(1, 1, 64, HD, layout=ttnn.ROW_MAJOR_LAYOUT),
        "tm_q": ttnn.from_torch(tm.repeat(1, 1, USERS, 1), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                                memory_config=per_user(USERS, 32, 32)),
        "tm_k": ttnn.from_torch(tm.repeat(1, 1, USERS, 1), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                                memory_config=per_user(USERS, 32, 32, USERS)),
    }


RESIDUAL = ttnn.create_sharded_memory_config((32, DIM // 4), ttnn.CoreGrid(x=4, y=1), ttnn.ShardStrategy.WIDTH,
                                             ttnn.ShardOrientation.ROW_MAJOR, use_height_and_width_as_shard_shape=True)
NORM = ttnn.LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(4, 1), subblock_w=1,
                                                   block_h=1, block_w=DIM // 32 // 4, inplace=False)


def dram_mm(n_tiles: int, k_tiles: int, cores: int) -> ttnn.MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
    return ttnn.MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(
        in0_block_w=k_tiles // cores, per_core_M=1, per_core_N=-(-n_tiles // cores))


def decode_step(w, tokens, pos, rot_idx, page_table, k_cache, v_cache, fused_update=False):
    x = ttnn.embedding(tokens, w["emb"], layout=ttnn.TILE_LAYOUT)  # [1, B, DIM]
    x = ttnn.to_memory_config(ttnn.reshape(x, (1, 1, USERS, DIM)), RESIDUAL)
    h = ttnn.rms_norm(x, epsilon=1e-5, weight=w["norm"], program_config=NORM, memory_config=RESIDUAL)
    qkv = ttnn.linear(h, w["wqkv"], program_config=dram_mm((NH + 2 * NKV) * HD // 32, DIM // 32, 4),
                      memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG, dtype=ttnn.bfloat16)
    qkv = ttnn.sharded_to_interleaved(qkv, ttnn.L1_MEMORY_CONFIG)
    q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(qkv, num_heads=NH, num_kv_heads=NKV,
                                                            memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    rot = {}
    for name in ("cos", "sin"):
        t = ttnn.transpose(ttnn.unsqueeze_to_4D(ttnn.embedding(rot_idx, w[name], layout=ttnn.TILE_LAYOUT)), 1, 2)
        rot[name] = ttnn.interleaved_to_sharded(t, per_user(USERS, 1, HD))
        rot[name + "_k"] = ttnn.interleaved_to_sharded(t, per_user(USERS, 1, HD, USERS if fused_update else 0))
    if fused_update:  # K beside V on disjoint cores, for the one-op update of both caches
        k = ttnn.to_memory_config(k, per_user(USERS, NKV, HD, USERS))
    q = ttnn.experimental.rotary_embedding_llama(q, rot["cos"], rot["sin"], w["tm_q"], is_decode_mode=True)
    k = ttnn.experimental.rotary_embedding_llama(k, rot["cos_k"], rot["sin_k"],
                                                 w["tm_k"] if fused_update else w["tm_q"], is_decode_mode=True)
    if fused_update:
        ttnn.experimental.paged_fused_update_cache(k_cache, k, v_cache, v, update_idxs_tensor=pos,
                                                   page_table=page_table)
    else:
        ttnn.experimental.paged_update_cache(k_cache, k, update_idxs_tensor=pos, page_table=page_table)
        ttnn.experimental.paged_update_cache(v_cache, v, update_idxs_tensor=pos, page_table=page_table)
    attn = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        q, k_cache, v_cache, page_table, cur_pos_tensor=pos, scale=HD**-0.5, memory_config=ttnn.DRAM_MEMORY_CONFIG)
    ttnn.deallocate(q)
    attn = ttnn.to_memory_config(attn, per_user(USERS, NH, HD))
    o = ttnn.linear(ttnn.experimental.nlp_concat_heads_decode(attn, num_heads=NH), w["wo"],
                    program_config=dram_mm(DIM // 32, NH * HD // 32, NH),
                    memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG)
    x = ttnn.add(x, ttnn.to_memory_config(o, RESIDUAL), memory_config=RESIDUAL)
    logits = ttnn.linear(x, w["out"], program_config=dram_mm(VOCAB // 32, DIM // 32, 4),
                         memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG)
    logits = ttnn.sharded_to_interleaved(logits, ttnn.L1_MEMORY_CONFIG)
    return logits, ttnn.argmax(logits, dim=3, keepdim=True)


def host_inputs(step: int):
    g = torch.Generator().manual_seed(100 + step)
    tokens = torch.randint(0, VOCAB, (1, USERS), generator=g, dtype=torch.int32)
    pos = torch.randint(0, WIDTH * BS, (USERS,), generator=g, dtype=torch.int32)
    pos[torch.randperm(USERS, generator=g)[:5]] = -1
    page_table = (torch.randperm(BLOCKS - 1, generator=g)[: USERS * WIDTH] + 1).reshape(USERS, WIDTH).to(torch.int32)
    return (
        ttnn.from_torch(tokens, ttnn.uint32),
        ttnn.from_torch(pos, ttnn.int32),
        ttnn.from_torch(pos.clamp(min=0).reshape(1, USERS), ttnn.uint32),
        ttnn.from_torch(page_table, ttnn.int32),
    )


def fresh_caches(device):
    g = torch.Generator().manual_seed(7)
    return [ttnn.from_torch(torch.randn(BLOCKS, NKV, BS, HD, generator=g), ttnn.bfloat8_b,
                            layout=ttnn.TILE_LAYOUT, device=device) for _ in range(2)]


@pytest.mark.parametrize("fused_update", [False, True])
def test_replay_is_bit_identical_to_eager(device, fused_update):
    w = make_weights(device)
    # Eager reference on its own caches, always with the unfused update: the fused op must write the same values.
    eager_caches = fresh_caches(device)
    eager = []
    for step in range(3):
        ins = [ttnn.to_device(t, device) for t in host_inputs(step)]
        logits, tok = decode_step(w, *ins, *eager_caches)
        eager.append((ttnn.to_torch(logits), ttnn.to_torch(tok)))

    # Traced: persistent device inputs, one compile run, capture, then copy fresh inputs + execute per step.
    caches = fresh_caches(device)
    dev_ins = [ttnn.to_device(t, device) for t in host_inputs(0)]
    scratch = fresh_caches(device)
    decode_step(w, *dev_ins, *scratch, fused_update)  # compile run, on throw-away caches
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    logits, tok = decode_step(w, *dev_ins, *caches, fused_update)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    # Capturing did not write the caches: in-place cache updates only run on replay, as on hardware.
    assert torch.equal(ttnn.to_torch(caches[0]), ttnn.to_torch(fresh_caches(device)[0]))
    for step in range(3):
        for src, dst in zip(host_inputs(step), dev_ins, strict=True):
            ttnn.copy_host_to_device_tensor(src, dst)
        ttnn.execute_trace(device, tid, cq_id=0, blocking=False)
        # bit-identical, the empty slots' unwritten (NaN) rows included
        torch.testing.assert_close(ttnn.to_torch(logits), eager[step][0], rtol=0, atol=0, equal_nan=True)
        assert torch.equal(ttnn.to_torch(tok), eager[step][1])
    assert torch.equal(ttnn.to_torch(caches[0]), ttnn.to_torch(eager_caches[0]))
    assert torch.equal(ttnn.to_torch(caches[1]), ttnn.to_torch(eager_caches[1]))
    # Replay skips the argument checks (shapes are frozen) but not the data-dependent ones.
    bad = host_inputs(0)[3].to_torch()
    bad[3, 0] = BLOCKS + 5
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(bad, ttnn.int32), dev_ins[3])
    with pytest.raises(ttnn.TTError, match=f"page table points at block {BLOCKS + 5}"):
        ttnn.execute_trace(device, tid)
    ttnn.release_trace(device, tid)
    with pytest.raises(ttnn.TTError, match="no captured trace"):
        ttnn.execute_trace(device, tid)


def test_host_read_and_device_management_during_capture_raise(device):
    x = ttnn.from_torch(torch.randn(1, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    tid = ttnn.begin_trace_capture(device)
    y = ttnn.add(x, x)
    with pytest.raises(ttnn.TTError, match="to_torch: reading a device tensor back to host"):
        ttnn.to_torch(y)
    with pytest.raises(ttnn.TTError, match="from_device"):
        ttnn.from_device(y)
    with pytest.raises(ttnn.TTError, match="open_mesh_device: not allowed while a trace is being captured"):
        ttnn.open_mesh_device(ttnn.MeshShape(1, 1))
    with pytest.raises(ttnn.TTError, match="close_mesh_device"):
        ttnn.close_mesh_device(device)
    with pytest.raises(ttnn.TTError, match="copy_host_to_device_tensor"):
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(torch.zeros(1, 1, 32, 32), ttnn.bfloat16,
                                                        layout=ttnn.TILE_LAYOUT), x)
    ttnn.end_trace_capture(device, tid)
    ttnn.execute_trace(device, tid)
    assert torch.equal(ttnn.to_torch(y), ttnn.to_torch(x) * 2)


def test_replay_input_shape_is_frozen(device):
    x = ttnn.from_torch(torch.zeros(1, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    with pytest.raises(ttnn.TTError, match="does not match"):
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(torch.zeros(1, 1, 64, 32), ttnn.bfloat16,
                                                        layout=ttnn.TILE_LAYOUT), x)


def test_capture_needs_trace_region():
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1))
    try:
        with pytest.raises(ttnn.TTError, match="trace_region_size"):
            ttnn.begin_trace_capture(dev)
    finally:
        ttnn.close_mesh_device(dev)
