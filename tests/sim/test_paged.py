"""Paged KV-cache ops against a contiguous-cache reference, with random non-contiguous page tables and mixed
positions including -1 (empty decode slots)."""

import pytest
import torch

import ttnn_sim as ttnn
from tests.sim.helpers import bf16, dev_tensor, host, per_user


def random_page_table(users: int, blocks_per_user: int, num_blocks: int) -> torch.Tensor:
    """Every user gets distinct physical blocks, scattered over the cache (block 0 stays the null block)."""
    perm = torch.randperm(num_blocks - 1)[: users * blocks_per_user] + 1
    return perm.reshape(users, blocks_per_user).to(torch.int32)


def paged_view(cache: torch.Tensor, page_table: torch.Tensor) -> torch.Tensor:
    """Reference: a user's contiguous [nkv, blocks*bs, hd] history read block by block."""
    return torch.cat([cache[int(b)] for b in page_table], dim=1)


def pt_tensor(pt: torch.Tensor, device) -> ttnn.Tensor:
    return ttnn.from_torch(pt, ttnn.int32, device=device)


def pos_tensor(pos: torch.Tensor, device) -> ttnn.Tensor:
    return ttnn.from_torch(pos.to(torch.int32), ttnn.int32, device=device)


@pytest.mark.parametrize("seq", [64, 100])
def test_paged_fill_cache_matches_contiguous(device, seq):
    nkv, bs, hd, num_blocks, users = 2, 32, 64, 40, 3
    pt = random_page_table(users, 4, num_blocks)
    cache = ttnn.from_torch(torch.zeros(num_blocks, nkv, bs, hd), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                            device=device)
    kv = bf16(torch.randn(1, nkv, seq, hd))
    ttnn.experimental.paged_fill_cache(cache, dev_tensor(kv, device), pt_tensor(pt, device), batch_idx=1)
    got = host(cache)
    assert torch.equal(paged_view(got, pt[1])[:, :seq], kv[0])
    # Rows up to the next tile boundary are written (zero padding); nothing else in the cache changes.
    padded = -(-seq // 32) * 32
    assert torch.count_nonzero(paged_view(got, pt[1])[:, seq:padded]) == 0
    others = [b for b in range(num_blocks) if b not in pt[1].tolist()[: -(-padded // bs)]]
    assert torch.count_nonzero(got[others]) == 0


@pytest.mark.parametrize("cache_dtype", [ttnn.bfloat16, ttnn.bfloat8_b])
def test_paged_update_cache_matches_contiguous(device, cache_dtype):
    users, nkv, bs, hd, num_blocks, width = 32, 8, 64, 64, 160, 4
    pt = random_page_table(users, width, num_blocks)
    pos = torch.randint(0, width * bs, (users,))
    pos[torch.randperm(users)[:7]] = -1  # empty slots
    start = bf16(torch.randn(num_blocks, nkv, bs, hd))
    cache = ttnn.from_torch(start, cache_dtype, layout=ttnn.TILE_LAYOUT, device=device)
    before = host(cache)
    new = bf16(torch.randn(1, users, nkv, hd))
    ttnn.experimental.paged_update_cache(cache, dev_tensor(new, device, memory_config=per_user(users, nkv, hd)),
                                         update_idxs_tensor=pos_tensor(pos, device), page_table=pt_tensor(pt, device))
    expected = before.clone()
    for b in range(users):
        if pos[b] >= 0:
            row = new[0, b]
            if cache_dtype == ttnn.bfloat8_b:
                row = host(ttnn.from_torch(row.reshape(nkv, 1, hd), ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT))[:, 0]
            expected[pt[b, pos[b] // bs], :, pos[b] % bs] = row
    assert torch.equal(host(cache), expected)


def test_two_users_on_one_cache_tile_race(device):
    """Users whose rows fall in one cache tile (same block, same 32 positions) in one call: the device's kernel
    reads, updates and writes back that tile on each user's core at once, so the simulator leaves those rows
    undefined (NaN); users on other tiles of the same block, and the same rows written in separate calls, are exact."""
    users, nkv, bs, hd, num_blocks = 32, 1, 64, 64, 8
    pt = torch.zeros(users, 2, dtype=torch.int32)
    pt[:, 0] = 3
    pos = torch.full((users,), -1)
    pos[:4] = torch.tensor([5, 6, 40, 63])  # users 0 and 1 share rows 0..31 of block 3; users 2, 3 share 32..63
    pos[4] = 10  # alone on its tile in block 4
    pt[4, 0] = 4
    new = bf16(torch.randn(1, users, nkv, hd))

    def write(positions):
        cache = ttnn.from_torch(torch.zeros(num_blocks, nkv, bs, hd), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                                device=device)
        for p in positions:
            ttnn.experimental.paged_update_cache(cache, dev_tensor(new, device, memory_config=per_user(users, nkv, hd)),
                                                 update_idxs_tensor=pos_tensor(p, device),
                                                 page_table=pt_tensor(pt, device))
        return host(cache)

    raced = write([pos])
    assert torch.isnan(raced[3, :, [5, 6, 40, 63]]).all()
    assert torch.equal(raced[4, :, 10], new[0, 4])
    apart = write([torch.where(torch.isin(torch.arange(users), torch.tensor([0, 2, 4])), pos, -1),
                   torch.where(torch.isin(torch.arange(users), torch.tensor([1, 3])), pos, -1)])
    for u in range(5):
        assert torch.equal(apart[int(pt[u, 0]), :, int(pos[u])], new[0, u])


@pytest.mark.parametrize("cache_dtype", [ttnn.bfloat16, ttnn.bfloat8_b])
def test_paged_fused_update_cache_equals_two_updates(device, cache_dtype):
    users, nkv, bs, hd, num_blocks, width = 16, 2, 32, 64, 80, 4
    pt = pt_tensor(random_page_table(users, width, num_blocks), device)
    pos = torch.randint(0, width * bs, (users,))
    pos[[1, 6]] = -1
    pos_t = pos_tensor(pos, device)
    start = [bf16(torch.randn(num_blocks, nkv, bs, hd)) for _ in range(2)]
    # The fused op takes K and V on disjoint cores (K's users after V's, as nlp_create_qkv_heads_decode places them
    # without overlap); each single update takes its input one user per core.
    new = [dev_tensor(bf16(torch.randn(1, users, nkv, hd)), device, memory_config=per_user(users, nkv, hd, i * users))
           for i in range(2)]
    fused = [ttnn.from_torch(c, cache_dtype, layout=ttnn.TILE_LAYOUT, device=device) for c in start]
    single = [ttnn.from_torch(c, cache_dtype, layout=ttnn.TILE_LAYOUT, device=device) for c in start]
    # The second cache in fp32: each pair is re-packed into its own cache's dtype.
    fused[1], single[1] = (ttnn.typecast(c, ttnn.float32) for c in (fused[1], single[1]))
    ttnn.experimental.paged_fused_update_cache(fused[0], new[0], fused[1], new[1], update_idxs_tensor=pos_t,
                                               page_table=pt)
    for c, x in zip(single, new, strict=True):
        ttnn.experimental.paged_update_cache(c, x, update_idxs_tensor=pos_t, page_table=pt)
    for a, b in zip(fused, single, strict=True):
        assert torch.equal(host(a), host(b))


@pytest.mark.parametrize("nh,nkv,window", [(32, 8, None), (4, 4, None), (8, 2, 50)])
def test_paged_sdpa_decode_matches_contiguous(device, nh, nkv, window):
    users, bs, hd, num_blocks, width = 8, 32, 64, 64, 6
    pt = random_page_table(users, width, num_blocks)
    pos = torch.randint(0, width * bs, (users,))
    pos[2] = -1
    pos[5] = 0
    k, v = bf16(torch.randn(num_blocks, nkv, bs, hd)), bf16(torch.randn(num_blocks, nkv, bs, hd))
    q = bf16(torch.randn(1, users, nh, hd))
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        dev_tensor(q, device), dev_tensor(k, device), dev_tensor(v, device), cur_pos_tensor=pos_tensor(pos, device),
        page_table_tensor=pt_tensor(pt, device), scale=hd**-0.5, sliding_window_size=window)
    check_decode(host(out), q, k, v, pt, pos, window)


def check_decode(got: torch.Tensor, q, k, v, pt, pos, window=None) -> None:
    users, nh, hd = q.shape[1], q.shape[2], q.shape[3]
    nkv = k.shape[1]
    for b in range(users):
        if pos[b] < 0:  # the device leaves a skipped user's rows unwritten: nothing a caller could rely on
            assert torch.isnan(got[0, b]).all()
            continue
        lo = 0 if window is None else max(0, int(pos[b]) - window + 1)
        kb = paged_view(k, pt[b])[:, lo : pos[b] + 1].repeat_interleave(nh // nkv, 0)
        vb = paged_view(v, pt[b])[:, lo : pos[b] + 1].repeat_interleave(nh // nkv, 0)
        probs = torch.softmax(q[0, b][:, None] @ kb.transpose(-1, -2) * hd**-0.5, -1)
        ref = (probs @ vb)[:, 0]
        assert (got[0, b] - ref).abs().max() <= 2**-7 * ref.abs().max()


def test_decode_plans_follow_writes_to_table_and_positions(device):
    """Decode attention and cache updates plan their indices once per version of the page table and positions
    (every layer shares them); writing either buffer in place, as a trace's input refresh does, must re-plan and
    re-check."""
    users, nh, nkv, bs, hd, num_blocks, width = 4, 4, 2, 32, 64, 40, 4
    k, v = bf16(torch.randn(num_blocks, nkv, bs, hd)), bf16(torch.randn(num_blocks, nkv, bs, hd))
    kd, vd = dev_tensor(k, device), dev_tensor(v, device)
    q = bf16(torch.randn(1, users, nh, hd))
    qd = dev_tensor(q, device)
    pt, pos = random_page_table(users, width, num_blocks), torch.tensor([5, -1, 70, 127])
    pt_d, pos_d = pt_tensor(pt, device), pos_tensor(pos, device)

    def attend():
        return host(ttnn.transformer.paged_scaled_dot_product_attention_decode(
            qd, kd, vd, cur_pos_tensor=pos_d, page_table_tensor=pt_d, scale=hd**-0.5))

    for _ in range(2):  # the second call reuses the plan
        check_decode(attend(), q, k, v, pt, pos)
    pt2, pos2 = random_page_table(users, width, num_blocks), torch.tensor([-1, 33, 0, 64])
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(pt2, ttnn.int32), pt_d)
    check_decode(attend(), q, k, v, pt2, pos)
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(pos2.to(torch.int32), ttnn.int32), pos_d)
    check_decode(attend(), q, k, v, pt2, pos2)

    new = bf16(torch.randn(1, users, nkv, hd))
    new_d = dev_tensor(new, device, memory_config=per_user(users, nkv, hd))
    ttnn.experimental.paged_update_cache(kd, new_d, update_idxs_tensor=pos_d, page_table=pt_d)
    assert torch.equal(host(kd)[pt2[1, 33 // bs], :, 33 % bs], new[0, 1])
    bad = pt2.clone()
    bad[3, 2] = num_blocks  # user 3 at position 64 needs logical block 2
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(bad, ttnn.int32), pt_d)
    with pytest.raises(ttnn.TTError, match="page table points at block"):
        ttnn.experimental.paged_update_cache(kd, new_d, update_idxs_tensor=pos_d, page_table=pt_d)
    with pytest.raises(ttnn.TTError, match="page table points at block"):
        attend()


def test_chunked_sdpa_matches_full_causal(device):
    """A second chunk attending over the paged cache equals the tail of one causal pass over the whole prompt."""
    nqh, nkv, hd, bs, seq, chunk = 4, 2, 64, 32, 128, 64
    pt = random_page_table(1, seq // bs, 16)
    q = bf16(torch.randn(1, nqh, seq, hd))
    k, v = bf16(torch.randn(1, nkv, seq, hd)), bf16(torch.randn(1, nkv, seq, hd))
    kc = ttnn.from_torch(torch.zeros(16, nkv, bs, hd), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    vc = ttnn.from_torch(torch.zeros(16, nkv, bs, hd), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    ptt = pt_tensor(pt, device)
    ttnn.experimental.paged_fill_cache(kc, dev_tensor(k, device), ptt)
    ttnn.experimental.paged_fill_cache(vc, dev_tensor(v, device), ptt)
    out = ttnn.transformer.chunked_scaled_dot_product_attention(dev_tensor(q[:, :, chunk:], device), kc, vc, ptt,
                                                                chunk)
    g = nqh // nkv
    ref = torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                                           is_causal=True)[:, :, chunk:]
    assert (host(out) - ref).abs().max() <= 2**-7 * ref.abs().max()


def test_seed_worked_example_slot_mapping(device):
    """Seed 000's example (block size 2; requests of 3, 2 and 8 tokens, the third chunked) scaled x32 because the
    TT ops work on 32-row tiles: block size 64 = 2 tiles and every position p becomes tile p (rows 32p..32p+31).
    The slots the ops write must follow block_table[pos // block_size] * block_size + pos % block_size, i.e. the
    seed's slot mapping [2, 3, 4, 6, 7, 8, 9, 10, 11, 12], then [5, 14, 13, 16, 17] for step 2."""
    scale, bs_seed, nkv, hd, num_blocks = 32, 2, 1, 32, 10
    bs = bs_seed * scale
    block_table = torch.tensor([[1, 2, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0], [4, 5, 6, 0, 0, 0]], dtype=torch.int32)
    cache = ttnn.from_torch(torch.zeros(num_blocks, nkv, bs, hd), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                            device=device)

    def written_slots() -> list[int]:
        """Seed-scale slots that hold data: slot s is cache row 32*s (block s // 2, tile s % 2)."""
        flat = host(cache)[:, 0].reshape(num_blocks * bs, hd)
        return [s for s in range(num_blocks * bs_seed) if flat[s * scale].abs().sum() > 0]

    # Step 1: prefill of 3, 2 and the first 5 of 8 tokens; each token is a 32-row tile tagged with its slot order.
    token = iter(range(1, 100))
    for req, n in enumerate([3, 2, 5]):
        kv = torch.zeros(1, nkv, n * scale, hd)
        for p in range(n):
            kv[0, :, p * scale : (p + 1) * scale] = next(token)
        ttnn.experimental.paged_fill_cache(cache, dev_tensor(kv, device), ttnn.from_torch(block_table, ttnn.int32,
                                           device=device), batch_idx=req)
    assert written_slots() == [2, 3, 4, 6, 7, 8, 9, 10, 11, 12]
    flat = host(cache)[:, 0].reshape(num_blocks * bs, hd)
    assert [int(flat[s * scale, 0]) for s in [2, 3, 4, 6, 7, 8, 9, 10, 11, 12]] == list(range(1, 11))

    # Step 2: blocks 7 and 8 are appended; request 0 and 1 decode one token (positions 3 and 2), request 2 prefills
    # its remaining 3 tokens (positions 5, 6, 7).
    block_table[1, 1], block_table[2, 3] = 7, 8
    before = set(written_slots())
    upd = torch.zeros(1, 3, nkv, hd)
    upd[0, 0], upd[0, 1] = 101, 102
    pos = torch.tensor([3 * scale, 2 * scale, -1], dtype=torch.int32)  # request 2 is not decoding: -1 skips it
    ttnn.experimental.paged_update_cache(cache, dev_tensor(upd, device, memory_config=per_user(3, nkv, hd)),
                                         update_idxs_tensor=pos_tensor(pos, device),
                                         page_table=ttnn.from_torch(block_table, ttnn.int32, device=device))
    for p in (5, 6, 7):
        one = torch.full((1, nkv, scale, hd), 200.0 + p)
        # The chunk's tile at position p is written through the page-table row shifted to that position's block.
        shifted = block_table[2:3, p // bs_seed :]
        pad = torch.zeros(1, block_table.shape[1] - shifted.shape[1], dtype=torch.int32)
        row = torch.cat([shifted, pad], dim=1)
        blk_off = (p % bs_seed) * scale
        kv = torch.zeros(1, nkv, blk_off + scale, hd)
        kv[:, :, blk_off:] = one
        if blk_off:  # keep the earlier tile of that block as it is
            kv[:, :, :blk_off] = host(cache)[int(row[0, 0]), :, :blk_off]
        ttnn.experimental.paged_fill_cache(cache, dev_tensor(kv, device), ttnn.from_torch(row, ttnn.int32,
                                           device=device))
    new = [s for s in written_slots() if s not in before]
    assert sorted(new) == sorted([5, 14, 13, 16, 17])
    flat = host(cache)[:, 0].reshape(num_blocks * bs, hd)
    assert [int(flat[s * scale, 0]) for s in [5, 14, 13, 16, 17]] == [101, 102, 205, 206, 207]
