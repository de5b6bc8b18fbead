"""Simulated paged_update_cache + paged_scaled_dot_product_attention_decode vs the same math in plain PyTorch.

Batch 32, 32 query heads, 8 KV heads, head_dim 64, every user at a 2048-token context, block size 64, pages
scattered at random. Both sides hold the cache in bfloat16 and compute attention in fp32. Prints JSON; the target
is simulator time / plain torch time <= 1.3.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import ttnn_sim as ttnn


def torch_step(k_cache, v_cache, q, k_new, v_new, pos, page_table, bs, scale):
    """Reference: write each user's new K/V row at its slot, then attend over positions 0..pos."""
    users, nh, hd = q.shape
    blocks = page_table[torch.arange(users), pos // bs].long()
    k_cache[blocks, :, pos % bs] = k_new.to(k_cache.dtype)
    v_cache[blocks, :, pos % bs] = v_new.to(v_cache.dtype)
    n = int(pos.max()) // bs + 1
    nkv = k_cache.shape[1]
    rows = page_table[:, :n].reshape(-1).long()
    keys = k_cache[rows].reshape(users, n, nkv, bs, hd).permute(0, 2, 1, 3, 4).reshape(users, nkv, n * bs, hd)
    vals = v_cache[rows].reshape(users, n, nkv, bs, hd).permute(0, 2, 1, 3, 4).reshape(users, nkv, n * bs, hd)
    scores = torch.matmul(q.float().reshape(users, nkv, nh // nkv, hd), keys.float().transpose(-1, -2)) * scale
    scores = scores.masked_fill(torch.arange(n * bs) > pos[:, None, None, None], float("-inf"))
    return torch.matmul(torch.softmax(scores, -1), vals.float()).reshape(users, nh, hd).to(torch.bfloat16)


def timed(fn, iters: int) -> float:
    fn()
    best = float("inf")
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=32)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    users, nh, nkv, hd, bs = args.users, args.heads, args.kv_heads, args.head_dim, args.block_size
    per_user = args.context // bs
    num_blocks = users * per_user + 1
    torch.manual_seed(0)
    page_table = (torch.randperm(num_blocks - 1)[: users * per_user] + 1).reshape(users, per_user).to(torch.int32)
    pos = torch.full((users,), args.context - 1, dtype=torch.int32)
    k0 = torch.randn(num_blocks, nkv, bs, hd).to(torch.bfloat16)
    v0 = torch.randn(num_blocks, nkv, bs, hd).to(torch.bfloat16)
    q = torch.randn(users, nh, hd).to(torch.bfloat16)
    k_new = torch.randn(users, nkv, hd).to(torch.bfloat16)
    v_new = torch.randn(users, nkv, hd).to(torch.bfloat16)
    scale = hd**-0.5

    tk, tv = k0.clone(), v0.clone()
    t_torch = timed(lambda: torch_step(tk, tv, q, k_new, v_new, pos.long(), page_table, bs, scale), args.iters)

    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1))
    kc = ttnn.from_torch(k0, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=dev)
    vc = ttnn.from_torch(v0, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=dev)
    tq = ttnn.from_torch(q[None], ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=dev)
    # New K/V rows arrive as the device takes them: height-sharded, one user per core.
    grid = ttnn.num_cores_to_corerangeset(users, dev.compute_with_storage_grid_size(), True)
    per_user = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                                 ttnn.ShardSpec(grid, [-(-nkv // 32) * 32, hd], ttnn.ShardOrientation.ROW_MAJOR))
    tkn = ttnn.from_torch(k_new[None], ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=dev, memory_config=per_user)
    tvn = ttnn.from_torch(v_new[None], ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=dev, memory_config=per_user)
    tpos = ttnn.from_torch(pos, ttnn.int32, device=dev)
    tpt = ttnn.from_torch(page_table, ttnn.int32, device=dev)

    def sim_step():
        ttnn.experimental.paged_update_cache(kc, tkn, update_idxs_tensor=tpos, page_table=tpt)
        ttnn.experimental.paged_update_cache(vc, tvn, update_idxs_tensor=tpos, page_table=tpt)
        return ttnn.transformer.paged_scaled_dot_product_attention_decode(
            tq, kc, vc, tpt, cur_pos_tensor=tpos, scale=scale)

    t_sim = timed(sim_step, args.iters)
    # Same numbers from both sides, so the timing compares equal work.
    ref = torch_step(k0.clone(), v0.clone(), q, k_new, v_new, pos.long(), page_table, bs, scale).float()
    err = (ttnn.to_torch(sim_step()).float()[0] - ref).abs().max().item()
    ttnn.close_mesh_device(dev)
    print(json.dumps({
        "benchmark": "sim_paged_decode",
        "users": users, "heads": nh, "kv_heads": nkv, "head_dim": hd, "context": args.context, "block_size": bs,
        "torch_threads": torch.get_num_threads(),
        "plain_torch_ms": round(t_torch * 1e3, 3),
        "simulator_ms": round(t_sim * 1e3, 3),
        "ratio_sim_over_torch": round(t_sim / t_torch, 3),
        "target_ratio": 1.3,
        "max_abs_diff": err,
    }))


if __name__ == "__main__":
    main()
