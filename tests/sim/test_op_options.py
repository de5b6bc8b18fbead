"""Options of the decode attention and head ops beyond the models' calls, each against a plain-torch reference of the
op's semantics (tt-metal's sdpa_decode kernels and unit-test references, the nlp_create_qkv_heads sharded reader):

- attention_sink: a per-head logit, taken as scale * sink[h, 0] (callers pass sink / scale), that joins the softmax
  denominator and contributes no value row;
- non-causal paged decode: every position of the user's page-table span, with an additive mask [Bm, 1, heads, span]
  that the device adds to the raw scores before scaling; user b reads mask plane b % Bm;
- nlp_create_qkv_heads with input_kv (Q from one input, K and V from the other) and kv_tied (V = K's columns);
- nlp_create_qkv_heads on a sharded fused input: each core's shard is that core's own [q heads | k heads | v heads]
  block, so a caller must lay the fused weight out per core;
- nlp_concat_heads on a height-sharded input;
- cache_position_modulo M: a ring-buffer cache, position p in slot p % M of the row's blocks;
- spec_multi_pos_tiles T: Q row tile j of user b bounded by cur_pos[b * T + j].

Each test also checks that the option matters: the output is far from what the op gives with it ignored."""

import pytest
import torch

import ttnn_sim as ttnn
from tests.sim.helpers import bf16, dev_tensor, host


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


def _pt(pt: torch.Tensor, device) -> ttnn.Tensor:
    return ttnn.from_torch(pt.to(torch.int32), ttnn.int32, device=device)


def _page_table(users: int, width: int, num_blocks: int) -> torch.Tensor:
    return (torch.randperm(num_blocks - 1)[: users * width] + 1).reshape(users, width).to(torch.int32)


def _history(cache: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
    """A user's [nkv, width * bs, hd] K or V history, block after block of its page-table row."""
    return torch.cat([cache[int(b)] for b in row], dim=1)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, bias: torch.Tensor | None = None,
            sink: torch.Tensor | None = None) -> torch.Tensor:
    """One user: q [nh, hd], k/v [nh, t, hd] (kv heads repeated per query head), bias [nh, t] added to the scaled
    scores, sink [nh] extra logits in the denominator only."""
    logits = torch.einsum("hd,htd->ht", q, k) * scale
    if bias is not None:
        logits = logits + bias
    if sink is not None:
        logits = torch.cat([logits, sink[:, None]], dim=-1)
    w = torch.softmax(logits, dim=-1)[:, : k.shape[1]]
    return torch.einsum("ht,htd->hd", w, v)


def _close(got: torch.Tensor, ref: torch.Tensor) -> bool:
    return bool((got - ref).abs().max() <= 2**-6 * ref.abs().max())


def _far(got: torch.Tensor, other: torch.Tensor) -> bool:
    return bool((got - other).abs().max() > 2**-3 * other.abs().max())


@pytest.mark.parametrize("nh,nkv", [(8, 2), (8, 1)])
def test_attention_sink_joins_the_softmax_denominator(device, nh, nkv):
    users, bs, hd, nb, width = 4, 32, 64, 40, 3
    scale = hd**-0.5
    pt = _page_table(users, width, nb)
    pos = torch.tensor([5, 40, 95, 63])
    k, v = bf16(torch.randn(nb, nkv, bs, hd)), bf16(torch.randn(nb, nkv, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    sink = bf16(2 + 2 * torch.rand(nh))  # model logits (GPT-OSS learns them per head), well above the scores
    # The device multiplies the sink by scale: callers pass sink / scale in column 0 of a [padded heads, 32] tile.
    sink_dev = torch.zeros(32, 32)
    sink_dev[:nh, 0] = sink / scale
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), _pt(pt, device),
        cur_pos_tensor=ttnn.from_torch(pos.to(torch.int32), ttnn.int32, device=device),
        attention_sink=dev_tensor(sink_dev, device), scale=scale)
    got = host(out)
    assert got.shape == (1, users, nh, hd)
    sink_used = bf16(sink / scale) * scale
    for b in range(users):
        kb = _history(k, pt[b])[:, : pos[b] + 1].repeat_interleave(nh // nkv, 0)
        vb = _history(v, pt[b])[:, : pos[b] + 1].repeat_interleave(nh // nkv, 0)
        ref = _attend(q[0, b], kb, vb, scale, sink=sink_used)
        assert _close(got[0, b], ref), b
        assert _far(got[0, b], _attend(q[0, b], kb, vb, scale)), "the sink is ignored"


def test_attention_sink_rank1_reaches_head_0_only(device):
    """A rank-1 [32] sink is one tile row: column 0 of row 0 (its first value) is head 0's sink; the other heads
    read the tile padding (0), so they get a zero logit in their denominators."""
    users, nh, nkv, bs, hd, nb = 2, 4, 1, 32, 32, 8
    pt = _page_table(users, 2, nb)
    pos = torch.tensor([10, 50])
    k, v = bf16(torch.randn(nb, nkv, bs, hd)), bf16(torch.randn(nb, nkv, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    sink = torch.full((32,), 3.0)
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), _pt(pt, device),
        cur_pos_tensor=ttnn.from_torch(pos.to(torch.int32), ttnn.int32, device=device),
        attention_sink=dev_tensor(sink, device), scale=1.0)
    got = host(out)
    for b in range(users):
        kb = _history(k, pt[b])[:, : pos[b] + 1].repeat_interleave(nh, 0)
        vb = _history(v, pt[b])[:, : pos[b] + 1].repeat_interleave(nh, 0)
        ref = _attend(q[0, b], kb, vb, 1.0, sink=torch.tensor([3.0, 0.0, 0.0, 0.0]))
        assert _close(got[0, b], ref)


@pytest.mark.parametrize("mask_batch", ["per-user", "broadcast"])
def test_non_causal_decode_with_mask(device, mask_batch):
    users, nh, nkv, bs, hd, nb, width = 4, 8, 2, 32, 64, 40, 4
    span = width * bs
    scale = 0.2
    pt = _page_table(users, width, nb)
    k, v = bf16(torch.randn(nb, nkv, bs, hd)), bf16(torch.randn(nb, nkv, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    bm = users if mask_batch == "per-user" else 1
    mask = torch.randn(bm, 1, nh, span) * 3
    mask[..., span // 2 :] = torch.where(torch.rand(bm, 1, nh, span - span // 2) < 0.5, -1e4, 0.0)
    mask = bf16(mask)
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), _pt(pt, device), is_causal=False,
        attn_mask=dev_tensor(mask, device), scale=scale)
    got = host(out)
    for b in range(users):
        kb = _history(k, pt[b]).repeat_interleave(nh // nkv, 0)
        vb = _history(v, pt[b]).repeat_interleave(nh // nkv, 0)
        plane = mask[b % bm, 0]
        # The kernel adds the mask to the raw scores and scales after: scale * (q.k + mask).
        ref = _attend(q[0, b], kb, vb, scale, bias=scale * plane)
        assert _close(got[0, b], ref), b
        assert _far(got[0, b], _attend(q[0, b], kb, vb, scale)), "the mask is ignored"


def test_non_causal_decode_reads_the_whole_span_not_cur_pos(device):
    users, nh, nkv, bs, hd, nb, width = 3, 4, 1, 32, 32, 20, 3
    pt = _page_table(users, width, nb)
    k, v = bf16(torch.randn(nb, nkv, bs, hd)), bf16(torch.randn(nb, nkv, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    pos = torch.tensor([0, -1, 7])  # not read in non-causal mode
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), _pt(pt, device), is_causal=False,
        cur_pos_tensor=ttnn.from_torch(pos.to(torch.int32), ttnn.int32, device=device), scale=0.3)
    got = host(out)
    for b in range(users):
        kb, vb = _history(k, pt[b]).repeat_interleave(nh, 0), _history(v, pt[b]).repeat_interleave(nh, 0)
        assert _close(got[0, b], _attend(q[0, b], kb, vb, 0.3))
        if pos[b] >= 0:
            causal = _attend(q[0, b], kb[:, : pos[b] + 1], vb[:, : pos[b] + 1], 0.3)
            assert _far(got[0, b], causal)


def test_non_causal_window_ends_at_the_span_end(device):
    users, nh, nkv, bs, hd, nb, width, window = 2, 4, 2, 32, 32, 20, 4, 50
    span = width * bs
    pt = _page_table(users, width, nb)
    k, v = bf16(torch.randn(nb, nkv, bs, hd)), bf16(torch.randn(nb, nkv, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), _pt(pt, device), is_causal=False,
        sliding_window_size=window, scale=0.3)
    got = host(out)
    for b in range(users):
        kb = _history(k, pt[b])[:, span - window :].repeat_interleave(nh // nkv, 0)
        vb = _history(v, pt[b])[:, span - window :].repeat_interleave(nh // nkv, 0)
        assert _close(got[0, b], _attend(q[0, b], kb, vb, 0.3))


@pytest.mark.parametrize("window", [None, 64])
def test_ring_buffer_cache_position_modulo(device, window):
    """Position p lives in slot p % M of the row's blocks: a sliding-window layer keeps only M positions."""
    users, nh, nkv, bs, hd, nb, width, modulo = 3, 4, 1, 32, 32, 30, 4, 64
    pt = _page_table(users, width, nb)
    pos = torch.tensor([20, 63, 150])
    k, v = bf16(torch.randn(nb, nkv, bs, hd)), bf16(torch.randn(nb, nkv, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), _pt(pt, device),
        cur_pos_tensor=ttnn.from_torch(pos.to(torch.int32), ttnn.int32, device=device), scale=0.25,
        cache_position_modulo=modulo, sliding_window_size=window)
    got = host(out)
    for b in range(users):
        p = int(pos[b])
        first = 0 if window is None else max(0, p - window + 1)
        slots = torch.arange(first, p + 1) % modulo
        kb = _history(k, pt[b])[:, slots].repeat_interleave(nh, 0)
        vb = _history(v, pt[b])[:, slots].repeat_interleave(nh, 0)
        assert _close(got[0, b], _attend(q[0, b], kb, vb, 0.25)), b
        if p >= modulo:  # read without the wrap, slots past M would be other (here never written) positions
            plain = _history(k, pt[b])[:, first : p + 1].repeat_interleave(nh, 0)
            assert _far(got[0, b], _attend(q[0, b], plain, _history(v, pt[b])[:, first : p + 1].repeat_interleave(
                nh, 0), 0.25))


def test_speculative_multi_position_decode(device):
    """spec_multi_pos_tiles T: Q row tile j of user b (heads 32j..32j+31) attends over 0..cur_pos[b * T + j]."""
    users, t, nh, bs, hd, nb, width = 2, 2, 64, 32, 32, 20, 4
    pt = _page_table(users, width, nb)
    pos = torch.tensor([10, 12, 70, 100])  # ascending within each user's group
    k, v = bf16(torch.randn(nb, 1, bs, hd)), bf16(torch.randn(nb, 1, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), _pt(pt, device),
        cur_pos_tensor=ttnn.from_torch(pos.to(torch.int32), ttnn.int32, device=device), scale=0.3,
        spec_multi_pos_tiles=t)
    got = host(out)
    for b in range(users):
        for j in range(t):
            p = int(pos[b * t + j])
            kb = _history(k, pt[b])[:, : p + 1].expand(32, -1, -1)
            vb = _history(v, pt[b])[:, : p + 1].expand(32, -1, -1)
            heads = slice(32 * j, 32 * j + 32)
            assert _close(got[0, b, heads], _attend(q[0, b, heads], kb, vb, 0.3)), (b, j)
        last = int(pos[b * t + t - 1])
        whole = _attend(q[0, b, :32], _history(k, pt[b])[:, : last + 1].expand(32, -1, -1),
                        _history(v, pt[b])[:, : last + 1].expand(32, -1, -1), 0.3)
        assert _far(got[0, b, :32], whole), "every row bounded by the group's last position"


def test_speculative_groups_must_ascend(device):
    users, nh, bs, hd, nb = 1, 64, 32, 32, 8
    pt = _page_table(users, 2, nb)
    q = bf16(torch.randn(1, users, nh, hd))
    k = bf16(torch.randn(nb, 1, bs, hd))
    with pytest.raises(RuntimeError, match="must be non-decreasing"):
        ttnn.transformer.paged_scaled_dot_product_attention_decode(
            dev_tensor(q, device), dev_tensor(k, device), dev_tensor(k, device), _pt(pt, device),
            cur_pos_tensor=ttnn.from_torch(torch.tensor([9, 3], dtype=torch.int32), ttnn.int32, device=device),
            spec_multi_pos_tiles=2)


def _split(x: torch.Tensor, first: int, n: int, hd: int) -> torch.Tensor:
    """Heads first..first+n-1 of [B, 1, S, W] as [B, n, S, hd]."""
    b, _, s, _ = x.shape
    return x[..., first * hd : (first + n) * hd].reshape(b, s, n, hd).transpose(1, 2)


@pytest.mark.parametrize("kv_tied", [False, True])
def test_create_qkv_heads_separate_kv_input(device, kv_tied):
    b, s, nh, nkv, hd = 2, 64, 8, 2, 64
    xq = bf16(torch.randn(b, 1, s, nh * hd))
    xkv = bf16(torch.randn(b, 1, s, (1 if kv_tied else 2) * nkv * hd))
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(
        dev_tensor(xq, device), dev_tensor(xkv, device), num_heads=nh, num_kv_heads=nkv, transpose_k_heads=True,
        kv_tied=kv_tied)
    assert torch.equal(host(q), _split(xq, 0, nh, hd))
    assert torch.equal(host(k), _split(xkv, 0, nkv, hd).transpose(-1, -2))
    assert torch.equal(host(v), _split(xkv, 0 if kv_tied else nkv, nkv, hd))


def test_create_qkv_heads_tied_fused_input(device):
    nh, nkv, hd = 8, 2, 64
    x = bf16(torch.randn(1, 1, 32, (nh + nkv) * hd))
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(dev_tensor(x, device), num_heads=nh, num_kv_heads=nkv,
                                                     transpose_k_heads=False, kv_tied=True)
    assert torch.equal(host(q), _split(x, 0, nh, hd))
    assert torch.equal(host(k), _split(x, nh, nkv, hd))
    assert torch.equal(host(v), host(k))


def _width_sharded(rows: int, shard_width: int, cores: int) -> ttnn.MemoryConfig:
    grid = ttnn.num_cores_to_corerangeset(cores, ttnn.CoreCoord(8, 8), True)
    spec = ttnn.ShardSpec(grid, [rows, shard_width], ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1, spec)


@pytest.mark.parametrize("nh,nkv", [(8, 2), (32, 8), (8, 1)])
def test_create_qkv_heads_sharded_input_is_read_per_core(device, nh, nkv):
    """The fused QKV shard on core c is [q heads c*g .. c*g+g-1 | k head c | v head c] (g = nh / nkv): a caller lays
    its fused weight out that way. Q/K/V come out height-sharded, one [32, hd] head per core."""
    hd, g = 64, nh // nkv
    q_ref = bf16(torch.randn(1, nh, 32, hd))
    k_ref = bf16(torch.randn(1, nkv, 32, hd))
    v_ref = bf16(torch.randn(1, nkv, 32, hd))
    blocks = []
    for c in range(nkv):
        blocks += [q_ref[:, c * g + i] for i in range(g)] + [k_ref[:, c], v_ref[:, c]]
    x = torch.cat(blocks, dim=-1)[:, None]  # [1, 1, 32, (nh + 2 nkv) * hd], core blocks side by side
    xt = dev_tensor(x, device, memory_config=_width_sharded(32, (g + 2) * hd, nkv))
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(xt, num_heads=nh, num_kv_heads=nkv, transpose_k_heads=False,
                                                     memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    assert torch.equal(host(q), q_ref)
    assert torch.equal(host(k), k_ref)
    assert torch.equal(host(v), v_ref)
    assert q.memory_config().shard_spec.shape == [32, hd] and q.memory_config().shard_spec.num_cores() == nh
    # Read as one [all Q | all K | all V] row (the interleaved interpretation) the heads would be others.
    if nkv > 1:
        assert not torch.equal(host(q), _split(x, 0, nh, hd))


def test_create_qkv_heads_sharded_separate_kv_input(device):
    nh, nkv, hd = 8, 2, 64
    g = nh // nkv
    q_ref, k_ref, v_ref = (bf16(torch.randn(1, n, 32, hd)) for n in (nh, nkv, nkv))
    xq = torch.cat([q_ref[:, h] for h in range(nh)], dim=-1)[:, None]
    xkv = torch.cat([t for c in range(nkv) for t in (k_ref[:, c], v_ref[:, c])], dim=-1)[:, None]
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(
        dev_tensor(xq, device, memory_config=_width_sharded(32, g * hd, nkv)),
        dev_tensor(xkv, device, memory_config=_width_sharded(32, 2 * hd, nkv)), num_heads=nh, num_kv_heads=nkv,
        transpose_k_heads=False, memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    assert torch.equal(host(q), q_ref)
    assert torch.equal(host(k), k_ref)
    assert torch.equal(host(v), v_ref)


def test_create_qkv_heads_sharded_input_off_the_output_grid_is_undefined(device):
    """Source core i is looked up at (i % w, i // w) of the Q output grid's width: an input sharded elsewhere reads
    other cores' L1, contents no caller can use (NaN here)."""
    nh, nkv, hd = 8, 2, 64
    x = bf16(torch.randn(1, 1, 32, (nh + 2 * nkv) * hd))
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 1))})  # a column
    spec = ttnn.ShardSpec(grid, [32, (nh // nkv + 2) * hd], ttnn.ShardOrientation.ROW_MAJOR)
    mc = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1, spec)
    q, k, _ = ttnn.experimental.nlp_create_qkv_heads(dev_tensor(x, device, memory_config=mc), num_heads=nh,
                                                     num_kv_heads=nkv, transpose_k_heads=False,
                                                     memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    got_q, got_k = host(q), host(k)
    assert torch.equal(got_q[:, :4], _split(x, 0, 4, hd))  # core 0 = (0, 0) is in place
    assert torch.isnan(got_q[:, 4:]).all() and torch.isnan(got_k[:, 1]).all()  # core 1 is read at (1, 0)


@pytest.mark.parametrize("heads_per_core", [1, 2])
def test_concat_heads_sharded_input(device, heads_per_core):
    nh, s, hd = 8, 64, 64
    x = bf16(torch.randn(1, nh, s, hd))
    cores = nh // heads_per_core
    grid = ttnn.num_cores_to_corerangeset(cores, ttnn.CoreCoord(8, 8), True)
    spec = ttnn.ShardSpec(grid, [heads_per_core * s, hd], ttnn.ShardOrientation.ROW_MAJOR)
    mc = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)
    out = ttnn.experimental.nlp_concat_heads(dev_tensor(x, device, memory_config=mc),
                                             memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG)
    assert torch.equal(host(out), x.transpose(1, 2).reshape(1, 1, s, nh * hd))
    assert out.memory_config().shard_spec.shape == [s, heads_per_core * hd]
