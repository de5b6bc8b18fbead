"""Trace capture/replay: a decode-like graph captured once and replayed with fresh inputs is bit-identical to
running the same ops eagerly; host reads and device open/close during capture raise."""

import pytest
import torch

from tests.sim.helpers import bf16
from tt_models.sim import ttnn

USERS, NH, NKV, HD, DIM, VOCAB, BS, BLOCKS, WIDTH = 32, 4, 2, 32, 128, 256, 32, 80, 2


def make_weights(device):
    g = torch.Generator().manual_seed(1)

    def w(*shape, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT):
        return ttnn.from_torch(bf16(torch.randn(*shape, generator=g) * 0.2), dtype, layout=layout, device=device)

    tm = torch.zeros(1, 1, 32, 32)
    tm[..., torch.arange(0, 32, 2), torch.arange(1, 32, 2)] = 1
    tm[..., torch.arange(1, 32, 2), torch.arange(0, 32, 2)] = -1
    return {
        "emb": w(1, 1, VOCAB, DIM, layout=ttnn.ROW_MAJOR_LAYOUT),
        "norm": w(1, 1, DIM // 32, 32, layout=ttnn.ROW_MAJOR_LAYOUT),
        "wqkv": w(1, 1, DIM, (NH + 2 * NKV) * HD, dtype=ttnn.bfloat8_b),
        "wo": w(1, 1, NH * HD, DIM, dtype=ttnn.bfloat8_b),
        "out": w(1, 1, DIM, VOCAB),
        "cos": w(1, 1, 64, HD, layout=ttnn.ROW_MAJOR_LAYOUT),
        "sin": w(1, 1, 64, HD, layout=ttnn.ROW_MAJOR_LAYOUT),
        "tm": ttnn.from_torch(tm, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device),
    }


def decode_step(w, tokens, pos, rot_idx, page_table, k_cache, v_cache, fused_update=False):
    x = ttnn.embedding(tokens, w["emb"], layout=ttnn.TILE_LAYOUT)  # [1, B, DIM]
    x = ttnn.reshape(x, (1, 1, USERS, DIM))
    h = ttnn.rms_norm(x, epsilon=1e-5, weight=w["norm"])
    qkv = ttnn.linear(h, w["wqkv"])
    q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(qkv, num_heads=NH, num_kv_heads=NKV)
    cos = ttnn.reshape(ttnn.embedding(rot_idx, w["cos"], layout=ttnn.TILE_LAYOUT), (1, USERS, 1, HD))
    sin = ttnn.reshape(ttnn.embedding(rot_idx, w["sin"], layout=ttnn.TILE_LAYOUT), (1, USERS, 1, HD))
    q = ttnn.experimental.rotary_embedding_llama(q, cos, sin, w["tm"], is_decode_mode=True)
    k = ttnn.experimental.rotary_embedding_llama(k, cos, sin, w["tm"], is_decode_mode=True)
    if fused_update:
        ttnn.experimental.paged_fused_update_cache(k_cache, k, v_cache, v, update_idxs_tensor=pos,
                                                   page_table=page_table)
    else:
        ttnn.experimental.paged_update_cache(k_cache, k, update_idxs_tensor=pos, page_table=page_table)
        ttnn.experimental.paged_update_cache(v_cache, v, update_idxs_tensor=pos, page_table=page_table)
    attn = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        q, k_cache, v_cache, cur_pos_tensor=pos, page_table_tensor=page_table, scale=HD**-0.5)
    ttnn.deallocate(q)
    o = ttnn.linear(ttnn.experimental.nlp_concat_heads_decode(attn, num_heads=NH), w["wo"])
    x = ttnn.add(x, o)
    logits = ttnn.linear(x, w["out"])
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
        assert torch.equal(ttnn.to_torch(logits), eager[step][0])
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
