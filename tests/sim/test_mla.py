"""Multi-latent attention ops against plain PyTorch: one latent cache row per position, the values its first
head_dim_v columns. Decode over a paged cache (random non-contiguous page tables, an empty slot) and over per-user
unpaged caches, prefill (causal, and non-causal with a mask added before the scale), chunked prefill over the paged
cache."""

import pytest
import torch

import ttnn_sim as ttnn
from tests.sim.helpers import bf16, dev_tensor, host
from tests.sim.test_paged import paged_view, pos_tensor, pt_tensor, random_page_table
from ttnn_sim.errors import TTError

DH, DV = 576, 512  # DeepSeek-V3's latent row (kv_lora_rank 512 + rope 64) and its value width


def reference(q: torch.Tensor, keys: torch.Tensor, hv: int, scale: float, causal_from: int | None = None,
              mask: torch.Tensor | None = None) -> torch.Tensor:
    """q [nh, s, dh] over keys [t, dh] (one latent head): softmax(scale * (q.k + mask)) @ keys[:, :hv]. causal_from:
    the position of q's first row (row i sees keys 0..causal_from + i)."""
    scores = q @ keys.T
    if mask is not None:
        scores = scores + mask
    if causal_from is not None:
        s, t = q.shape[-2], keys.shape[0]
        scores = scores.masked_fill(torch.arange(t)[None] > torch.arange(s)[:, None] + causal_from, float("-inf"))
    return torch.softmax(scores * scale, -1) @ keys[:, :hv]


def close(got: torch.Tensor, ref: torch.Tensor) -> None:
    assert (got - ref).abs().max() <= 2**-7 * ref.abs().max()


# (a bf16 cache of 576-wide rows is refused by the device: its program's circular buffers outgrow L1, see below)
@pytest.mark.parametrize("cache_dtype", [ttnn.bfloat8_b, ttnn.bfloat4_b])
def test_decode_matches_latent_attention(device, cache_dtype):
    users, nh, bs, num_blocks, width = 8, 16, 32, 48, 4
    pt = random_page_table(users, width, num_blocks)
    pos = torch.randint(0, width * bs, (users,))
    pos[3], pos[6] = -1, 0
    cache = dev_tensor(torch.randn(num_blocks, 1, bs, DH), device, cache_dtype)
    k = host(cache)  # the rounded rows the device holds
    q = bf16(torch.randn(1, users, nh, DH))
    scale = 192**-0.5
    out = host(ttnn.transformer.paged_flash_multi_latent_attention_decode(
        dev_tensor(q, device), cache, None, DV, pt_tensor(pt, device), cur_pos_tensor=pos_tensor(pos, device),
        scale=scale))
    assert out.shape == (1, users, nh, DV)
    for b in range(users):
        if pos[b] < 0:  # a skipped user's rows are never written
            assert torch.isnan(out[0, b]).all()
            continue
        keys = paged_view(k, pt[b])[0, : pos[b] + 1]
        close(out[0, b], reference(q[0, b], keys, DV, scale))
    # An explicit V holding the same columns gives the same bits; the default scale is 1 / sqrt(Q's head dim).
    v = dev_tensor(k[..., :DV], device, cache_dtype)
    explicit = host(ttnn.transformer.paged_flash_multi_latent_attention_decode(
        dev_tensor(q, device), cache, v, DV, pt_tensor(pt, device), cur_pos_tensor=pos_tensor(pos, device),
        scale=scale))
    assert torch.equal(explicit.nan_to_num(7.0), out.nan_to_num(7.0))
    default = host(ttnn.transformer.paged_flash_multi_latent_attention_decode(
        dev_tensor(q, device), cache, None, DV, pt_tensor(pt, device), cur_pos_tensor=pos_tensor(pos, device)))
    close(default[0, 0], reference(q[0, 0], paged_view(k, pt[0])[0, : pos[0] + 1], DV, DH**-0.5))


def test_decode_value_width_counts_whole_tiles(device):
    """head_dim_v 500: the kernel reads 15 whole tiles of V; the last 20 columns are never written."""
    users, nh, bs, num_blocks = 4, 8, 32, 16
    pt = random_page_table(users, 2, num_blocks)
    pos = torch.tensor([5, 40, 63, 0])
    cache = dev_tensor(torch.randn(num_blocks, 1, bs, DH), device, ttnn.bfloat8_b)
    k = host(cache)
    q = bf16(torch.randn(1, users, nh, DH))
    out = host(ttnn.transformer.paged_flash_multi_latent_attention_decode(
        dev_tensor(q, device), cache, None, 500, pt_tensor(pt, device),
        cur_pos_tensor=pos_tensor(pos, device), scale=0.05))
    assert out.shape == (1, users, nh, 500)
    assert torch.isnan(out[..., 480:]).all() and not torch.isnan(out[..., :480]).any()
    close(out[0, 1, :, :480], reference(q[0, 1], paged_view(k, pt[1])[0, :41], 480, 0.05))


def test_decode_refuses_what_the_device_refuses(device):
    users, bs, num_blocks = 4, 32, 16
    pt, pos = pt_tensor(random_page_table(users, 2, num_blocks), device), pos_tensor(torch.zeros(users), device)
    q = dev_tensor(torch.randn(1, users, 8, DH), device)
    k = dev_tensor(torch.randn(num_blocks, 1, bs, DH), device)
    mla = ttnn.transformer.paged_flash_multi_latent_attention_decode
    with pytest.raises(TTError, match="less than or equal to head dim of Q"):
        mla(q, k, None, 640, pt, cur_pos_tensor=pos)
    with pytest.raises(TTError, match="only tested for causal"):
        mla(q, k, None, DV, pt, is_causal=False)
    with pytest.raises(TTError, match="SIGFPE"):  # the real 0.81.1 process dies
        mla(q, k, None, 0, pt, cur_pos_tensor=pos)
    with pytest.raises(TTError, match="Head dimension of Q must be equal to head dim of K"):
        mla(dev_tensor(torch.randn(1, users, 8, DV), device), k, None, DV, pt, cur_pos_tensor=pos)
    # bf16 K/V chunks of 576-wide rows: the program's circular buffers outgrow a core's L1 (bfloat8_b fits)
    with pytest.raises(TTError, match=r"circular buffers on core range \[0-0 - 7-7\] grow to \d+ B which is beyond"):
        mla(q, k, None, DV, pt, cur_pos_tensor=pos)
    mla(q, dev_tensor(torch.randn(num_blocks, 1, bs, DH), device, ttnn.bfloat8_b), None, DV, pt, cur_pos_tensor=pos)


@pytest.mark.parametrize("positions", ["tensor", "list"])
def test_unpaged_decode_matches_latent_attention(device, positions):
    """flash_multi_latent_attention_decode: each user's own [S, 576] latent rows, positions from a tensor (-1 skips a
    user) or a list; 128-row K chunks (the host's default for S 1024 is 512 rows, which outgrow L1 at this width)."""
    users, nh, s = 4, 16, 1024
    pos = torch.tensor([700, 0, -1, 33]) if positions == "tensor" else torch.tensor([700, 0, 5, 33])
    cache = dev_tensor(torch.randn(users, 1, s, DH), device, ttnn.bfloat8_b)
    k = host(cache)
    q = bf16(torch.randn(1, users, nh, DH))
    pc = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), q_chunk_size=0,
                                k_chunk_size=128, exp_approx_mode=False)
    where = ({"cur_pos_tensor": pos_tensor(pos, device)} if positions == "tensor"
             else {"cur_pos": [int(p) for p in pos]})
    mla = ttnn.transformer.flash_multi_latent_attention_decode
    out = host(mla(dev_tensor(q, device), cache, head_dim_v=DV, scale=0.05, program_config=pc, **where))
    assert out.shape == (1, users, nh, DV)
    for b in range(users):
        if pos[b] < 0:
            assert torch.isnan(out[0, b]).all()
            continue
        close(out[0, b], reference(q[0, b], k[b, 0, : pos[b] + 1], DV, 0.05))
    with pytest.raises(TTError, match=r"circular buffers on core range \[0-0 - 7-7\] grow to \d+ B"):
        mla(dev_tensor(q, device), cache, head_dim_v=DV, **where)  # the host's 512-row chunks
    with pytest.raises(TTError, match="K tensor batch size \\(2\\) must equal B \\(4\\)"):
        mla(dev_tensor(q, device), dev_tensor(k[:2], device, ttnn.bfloat8_b), head_dim_v=DV, program_config=pc,
            **where)
    with pytest.raises(TTError, match="only tested for causal"):
        mla(dev_tensor(q, device), cache, head_dim_v=DV, is_causal=False, program_config=pc)

@pytest.mark.parametrize("nkv", [1, 2])
def test_prefill_matches_latent_attention(device, nkv):
    nh, s = 8, 96
    q, k = bf16(torch.randn(1, nh, s, DH)), bf16(torch.randn(1, nkv, s, DH))
    scale = 0.07
    out = host(ttnn.transformer.flash_mla_prefill(dev_tensor(q, device), dev_tensor(k, device), DV, scale=scale))
    assert out.shape == (1, nh, s, DV)
    for h in range(nh):
        close(out[0, h], reference(q[0, h], k[0, h // (nh // nkv)], DV, scale, causal_from=0))


def test_prefill_mask_joins_the_scores_before_the_scale(device):
    """flash_mla_prefill passes the mask to the kernel unscaled (the non-MLA op pre-divides it by the scale): a
    finite mask value m moves a logit by scale * m."""
    nh, s = 4, 64
    q, k = bf16(torch.randn(1, nh, s, DH)), bf16(torch.randn(1, 1, s, DH))
    mask = bf16(torch.randn(1, 1, s, s) * 20)
    scale = 0.05
    out = host(ttnn.transformer.flash_mla_prefill(dev_tensor(q, device), dev_tensor(k, device), DV, is_causal=False,
                                                  attn_mask=dev_tensor(mask, device), scale=scale))
    for h in range(nh):
        close(out[0, h], reference(q[0, h], k[0, 0], DV, scale, mask=mask[0, 0]))


def test_prefill_narrower_key_is_undefined(device):
    """0.81.1 accepts a K narrower than Q when head_dim_v fits it, and reads K at Q's row stride: no value of the
    output can be relied on."""
    q, k = dev_tensor(torch.randn(1, 4, 64, DH), device), dev_tensor(torch.randn(1, 1, 64, DV), device)
    assert torch.isnan(host(ttnn.transformer.flash_mla_prefill(q, k, DV))).all()


def test_chunked_prefill_continues_a_cached_prefix(device):
    """A chunk at positions 64..127 over the paged latent cache equals those rows of one causal prefill over all
    128 positions."""
    nh, bs, num_blocks, total, start = 8, 32, 24, 128, 64
    pt = random_page_table(1, 4, num_blocks)
    rows = bf16(torch.randn(1, 1, total, DH))
    cache = ttnn.from_torch(torch.zeros(num_blocks, 1, bs, DH), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                            device=device)
    ttnn.experimental.paged_fill_cache(cache, dev_tensor(rows, device), pt_tensor(pt, device), batch_idx=0)
    q = bf16(torch.randn(1, nh, total, DH))
    scale = 192**-0.5
    chunk = host(ttnn.transformer.chunked_flash_mla_prefill(
        dev_tensor(q[:, :, start:], device), cache, DV, pt_tensor(pt, device), start, scale=scale))
    assert chunk.shape == (1, nh, total - start, DV)
    for h in range(nh):
        close(chunk[0, h], reference(q[0, h, start:], rows[0, 0], DV, scale, causal_from=start))
    # A head_dim_v wider than the cache row is accepted by 0.81.1 and read at the wrong stride.
    wide = host(ttnn.transformer.chunked_flash_mla_prefill(
        dev_tensor(q[:, :, start:], device), cache, 640, pt_tensor(pt, device), start))
    assert wide.shape[-1] == 640 and torch.isnan(wide).all()
