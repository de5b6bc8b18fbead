"""Each simulated op against plain PyTorch math on random inputs (tile-padded sizes included).

Inputs are bfloat16-rounded before the reference sees them, so the reference computes on exactly the values the
device holds; the remaining difference is the op's own output rounding to bfloat16 (relative 2^-8)."""

import math

import pytest
import torch

import ttnn_sim as ttnn
from tests.conftest import pcc
from tests.sim.helpers import bf16, dev_tensor, host, per_user

BF16_REL = 2**-8


def close(actual: torch.Tensor, expected: torch.Tensor, rel: float = BF16_REL, pcc_min: float = 0.9999) -> None:
    scale = expected.abs().max().clamp(min=1e-6)
    assert (actual - expected).abs().max() <= 2 * rel * scale, (actual - expected).abs().max()
    assert pcc(actual, expected) >= pcc_min


@pytest.mark.parametrize("m,k,n", [(32, 64, 96), (7, 50, 33), (1, 576, 1536)])
def test_linear_matches_torch(device, m, k, n):
    x, w, b = bf16(torch.randn(1, 1, m, k)), bf16(torch.randn(1, 1, k, n)), bf16(torch.randn(n))
    out = ttnn.linear(dev_tensor(x, device), dev_tensor(w, device), bias=dev_tensor(b.reshape(1, 1, 1, n), device))
    assert out.shape == (1, 1, m, n) and out.padded_shape[-2] % 32 == 0
    close(host(out), x @ w + b)


@pytest.mark.parametrize("gemm", ["native", "fp32"])
@pytest.mark.parametrize("m", [1, 2, 3, 32])
def test_bf16_gemm_formulations_agree(device, monkeypatch, gemm, m):
    """bf16 GEMMs run as torch bf16 GEMMs or as fp32 GEMMs on the same values depending on the CPU and row count
    (compute.bf16_gemm_is_native); every formulation must round the fp32-accumulated product once, as the device
    does, and reuse no weight form across a write to the weight."""
    from ttnn_sim import compute

    monkeypatch.setenv("TT_SIM_BF16_GEMM", gemm)
    compute._cpu_has_bf16_gemm.cache_clear()
    try:
        x, w = bf16(torch.randn(1, 1, m, 576)), bf16(torch.randn(1, 1, 576, 320))
        wt = dev_tensor(w, device)
        ref = x @ w
        close(host(ttnn.linear(dev_tensor(x, device), wt)), ref)
        w2 = bf16(torch.randn(1, 1, 576, 320))
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(w2, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT), wt)
        close(host(ttnn.linear(dev_tensor(x, device), wt)), x @ w2)
    finally:
        compute._cpu_has_bf16_gemm.cache_clear()


def test_matmul_transpose_activation_and_dtype(device):
    a, b = bf16(torch.randn(1, 2, 40, 64)), bf16(torch.randn(1, 2, 96, 64))
    out = ttnn.matmul(dev_tensor(a, device), dev_tensor(b, device), transpose_b=True, activation="silu",
                      dtype=ttnn.float32)
    assert out.dtype == ttnn.float32
    ref = torch.nn.functional.silu(a @ b.transpose(-1, -2))
    assert (host(out) - ref).abs().max() < 1e-4


def test_matmul_rejects_row_major_and_bad_inner_dims(device):
    a = dev_tensor(torch.randn(1, 1, 32, 64), device)
    with pytest.raises(ttnn.TTError, match="matmul: Inputs to matmul must be tilized"):
        ttnn.matmul(dev_tensor(torch.randn(1, 1, 32, 64), device, layout=ttnn.ROW_MAJOR_LAYOUT), a)
    with pytest.raises(ttnn.TTError, match="The width of the first tensor must be equal to the height"):
        ttnn.matmul(a, a)


def test_linear_output_in_block_float(device):
    x, w = bf16(torch.randn(1, 1, 32, 64)), bf16(torch.randn(1, 1, 64, 64))
    out = ttnn.linear(dev_tensor(x, device), dev_tensor(w, device), dtype=ttnn.bfloat8_b)
    assert out.dtype == ttnn.bfloat8_b
    # bfp8 keeps 7 magnitude bits per block-shared exponent: error <= half a step of the block's largest value
    # (the result is packed from the bf16 destination, so the block maximum is taken after bf16 rounding).
    ref = x @ w
    blocks = bf16(ref).reshape(1, 1, 32, 4, 16).abs().amax(-1, keepdim=True)
    step = 2.0 ** (torch.floor(torch.log2(blocks)) - 6)
    err = (host(out) - ref).abs().reshape(1, 1, 32, 4, 16)
    assert bool((err <= step * 0.5 + blocks * 2**-8).all())


def test_add_mul_broadcast_and_fused_silu(device):
    a, b = bf16(torch.randn(1, 1, 37, 64)), bf16(torch.randn(1, 1, 37, 64))
    close(host(ttnn.add(dev_tensor(a, device), dev_tensor(b, device))), a + b)
    row = bf16(torch.randn(1, 1, 1, 64))
    close(host(ttnn.mul(dev_tensor(a, device), dev_tensor(row, device))), a * row)
    fused = ttnn.mul(dev_tensor(a, device), dev_tensor(b, device),
                     input_tensor_a_activations=[ttnn.UnaryOpType.SILU], dtype=ttnn.bfloat8_b)
    assert fused.dtype == ttnn.bfloat8_b
    assert pcc(host(fused), torch.nn.functional.silu(a) * b) > 0.999
    close(host(ttnn.add(dev_tensor(a, device), 2.5)), a + 2.5)
    with pytest.raises(ttnn.TTError, match="broadcast"):
        ttnn.add(dev_tensor(a, device), dev_tensor(torch.randn(1, 1, 5, 64), device))


def test_fused_gelu_tanh_is_the_tanh_form(device):
    """GELU_TANH (Gemma's GeGLU gate, HF's gelu_pytorch_tanh) fused into mul: the tanh form, not GELU's erf form."""
    a, b = bf16(torch.randn(1, 1, 32, 64) * 3), bf16(torch.randn(1, 1, 32, 64))
    out = host(ttnn.mul(dev_tensor(a, device), dev_tensor(b, device),
                        input_tensor_a_activations=[ttnn.UnaryOpType.GELU_TANH], dtype=ttnn.float32))
    tanh_form = torch.nn.functional.gelu(a, approximate="tanh") * b
    assert torch.equal(out, tanh_form)
    assert not torch.equal(out, torch.nn.functional.gelu(a) * b)


def test_fused_sigmoid_and_recip_route_as_glm_4_5(device):
    """GLM-4.5's router on fp32 logits: sigmoid fused on the logits before a broadcast bias is added, and RECIP fused
    on a broadcast column (the selected scores' sum) in a multiply: plain fp32 PyTorch of the same values."""
    logits = torch.randn(1, 1, 32, 64) * 2
    bias, total = torch.randn(1, 1, 1, 64) * 0.1, torch.rand(1, 1, 32, 1) + 0.5
    f32 = {"dtype": ttnn.float32}
    choice = host(ttnn.add(dev_tensor(logits, device, **f32), dev_tensor(bias, device, **f32),
                           input_tensor_a_activations=[ttnn.UnaryOpType.SIGMOID]))
    assert torch.equal(choice, torch.sigmoid(logits) + bias)
    normed = host(ttnn.mul(dev_tensor(logits, device, **f32), dev_tensor(total, device, **f32),
                           input_tensor_b_activations=[ttnn.UnaryOpType.RECIP]))
    assert torch.equal(normed, logits * (1 / total))
    assert torch.allclose(normed, logits / total, rtol=2e-7, atol=0)


def test_silu_softmax(device):
    x = bf16(torch.randn(1, 4, 50, 70) * 3)
    close(host(ttnn.silu(dev_tensor(x, device))), torch.nn.functional.silu(x))
    close(host(ttnn.softmax(dev_tensor(x, device), dim=-1)), torch.softmax(x, -1))


@pytest.mark.parametrize("residual", [False, True])
def test_rms_norm(device, residual):
    dim = 576
    x, w, r = bf16(torch.randn(1, 1, 45, dim)), bf16(torch.rand(dim) + 0.5), bf16(torch.randn(1, 1, 45, dim))
    wt = ttnn.from_torch(w.reshape(1, 1, dim // 32, 32), ttnn.bfloat16, device=device)
    out = ttnn.rms_norm(dev_tensor(x, device), epsilon=1e-5, weight=wt,
                        residual_input_tensor=dev_tensor(r, device) if residual else None)
    xr = x + r if residual else x
    close(host(out), xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-5) * w)


def test_embedding(device):
    vocab, dim = 1000, 96
    table = bf16(torch.randn(vocab, dim))
    ids = torch.randint(0, vocab, (1, 1, 1, 45), dtype=torch.int32)
    out = ttnn.embedding(ttnn.from_torch(ids, ttnn.uint32, device=device),
                         ttnn.from_torch(table.reshape(1, 1, vocab, dim), ttnn.bfloat16, device=device),
                         layout=ttnn.TILE_LAYOUT)
    assert out.shape == (1, 45, dim) and out.layout == ttnn.TILE_LAYOUT
    assert torch.equal(host(out)[0], table[ids.reshape(-1).long()])
    with pytest.raises(ttnn.TTError, match="ids must lie"):
        ttnn.embedding(ttnn.from_torch(ids + vocab, ttnn.uint32, device=device),
                       ttnn.from_torch(table, ttnn.bfloat16, device=device))


def test_argmax_topk_plus_one(device):
    x = bf16(torch.randn(1, 1, 32, 1000))
    am = ttnn.argmax(dev_tensor(x, device, layout=ttnn.ROW_MAJOR_LAYOUT), dim=3, keepdim=True)
    assert am.dtype == ttnn.uint32 and am.shape == (1, 1, 32, 1)
    assert torch.equal(ttnn.to_torch(am).long(), x.argmax(-1, keepdim=True))
    vals, idx = ttnn.topk(dev_tensor(x, device), 32, dim=-1)
    # bf16 values tie: equal values come lowest position first (0.81.1's stable engines; docs/tie-order.md).
    ref = torch.sort(x, dim=-1, descending=True, stable=True)
    assert torch.equal(host(vals), ref.values[..., :32])
    assert torch.equal(ttnn.to_torch(idx).long(), ref.indices[..., :32])
    # The device returns its k best in order whatever `sorted` asks (tt-metal's test_topk holds sorted=False
    # output to a sorted torch.topk at PCC 1.0): descending for largest, ascending for smallest.
    for largest in (True, False):
        vals, idx = ttnn.topk(dev_tensor(x, device), 64, dim=-1, largest=largest, sorted=False)
        ref = torch.topk(x, 64, dim=-1, largest=largest, sorted=True)
        assert torch.equal(host(vals), ref.values)
        assert torch.equal(torch.gather(x, -1, ttnn.to_torch(idx).long()), ref.values)
    pos = ttnn.from_torch(torch.tensor([3, -1, 0, 7], dtype=torch.int32), ttnn.int32, device=device)
    ttnn.plus_one(pos, skip_negative_entries=True)
    assert ttnn.to_torch(pos).tolist() == [4, -1, 1, 8]


@pytest.mark.parametrize("nh,nkv,seq", [(4, 2, 64), (3, 3, 40)])
def test_create_and_concat_heads_prefill(device, nh, nkv, seq):
    hd = 64
    x = bf16(torch.randn(1, 1, seq, (nh + 2 * nkv) * hd))
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(dev_tensor(x, device), num_heads=nh, num_kv_heads=nkv,
                                                     transpose_k_heads=False)
    split = x[0, 0].reshape(seq, nh + 2 * nkv, hd).transpose(0, 1)
    assert torch.equal(host(q)[0], split[:nh]) and torch.equal(host(k)[0], split[nh : nh + nkv])
    assert torch.equal(host(v)[0], split[nh + nkv :])
    back = ttnn.experimental.nlp_concat_heads(q)
    assert torch.equal(host(back)[0, 0], x[0, 0, :, : nh * hd])


def test_create_and_concat_heads_decode(device):
    nh, nkv, hd, users = 9, 3, 64, 32
    x = bf16(torch.randn(1, 1, users, (nh + 2 * nkv) * hd))
    q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(dev_tensor(x, device), num_heads=nh, num_kv_heads=nkv)
    assert q.shape == (1, users, nh, hd) and q.padded_shape == (1, users, 32, hd)
    split = x[0, 0].reshape(users, nh + 2 * nkv, hd)
    assert torch.equal(host(k)[0], split[:, nh : nh + nkv]) and torch.equal(host(v)[0], split[:, nh + nkv :])
    back = ttnn.experimental.nlp_concat_heads_decode(q, num_heads=nh)
    assert back.shape == (1, 1, users, nh * hd) and torch.equal(host(back)[0, 0], x[0, 0, :, : nh * hd])


def _trans_mat() -> torch.Tensor:
    t = torch.zeros(1, 1, 32, 32)
    t[..., torch.arange(0, 32, 2), torch.arange(1, 32, 2)] = 1
    t[..., torch.arange(1, 32, 2), torch.arange(0, 32, 2)] = -1
    return t


def _interleaved_rope(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Reference: rotate pairs (2k, 2k+1) by angle theta[..., k], written as complex multiplication."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(xc * torch.polar(torch.ones_like(theta), theta)).reshape(x.shape)


def test_rotary_embedding_llama_prefill_and_decode(device):
    hd, seq, nh = 64, 40, 3
    theta = torch.arange(seq)[:, None] * (10000 ** (-torch.arange(hd // 2) / (hd // 2)))[None]
    cos = bf16(torch.cos(theta).repeat_interleave(2, -1))
    sin = bf16(torch.sin(theta).repeat_interleave(2, -1))
    x = bf16(torch.randn(1, nh, seq, hd))
    tm = dev_tensor(_trans_mat(), device)
    out = ttnn.experimental.rotary_embedding_llama(dev_tensor(x, device), dev_tensor(cos[None, None], device),
                                                   dev_tensor(sin[None, None], device), tm)
    ref = _interleaved_rope(x, torch.atan2(sin[:, ::2], cos[:, ::2]))
    close(host(out), ref, rel=2**-7)
    # decode: each user at its own position, everything height-sharded one user per core
    users, pos = 32, torch.randint(0, seq, (32,))
    xd = bf16(torch.randn(1, users, nh, hd))
    out = ttnn.experimental.rotary_embedding_llama(
        dev_tensor(xd, device, memory_config=per_user(users, nh, hd)),
        dev_tensor(cos[pos][None, :, None], device, memory_config=per_user(users, 1, hd)),
        dev_tensor(sin[pos][None, :, None], device, memory_config=per_user(users, 1, hd)),
        _decode_trans_mat(device, users), is_decode_mode=True)
    ref = _interleaved_rope(xd, torch.atan2(sin[pos, ::2], cos[pos, ::2])[None, :, None])
    close(host(out), ref, rel=2**-7)


def _decode_trans_mat(device, users: int, t: torch.Tensor | None = None) -> ttnn.Tensor:
    """The 32x32 matrix repeated once per user's core, as decode mode reads it."""
    t = _trans_mat() if t is None else t
    return dev_tensor(t.repeat(1, 1, users, 1), device, memory_config=per_user(users, 32, 32))


@pytest.mark.parametrize("matrix", ["rotation", "scaled_rotation", "random"])
def test_rotary_embedding_llama_applies_the_given_matrix(device, matrix):
    """The op multiplies by whatever transformation matrix it is given: x * cos + (x @ T) * sin per 32-wide tile,
    whether T is Llama's signed permutation (taken as a column gather) or any other matrix (a real product)."""
    t = {"rotation": _trans_mat(), "scaled_rotation": 2 * _trans_mat(),
         "random": bf16(torch.randn(1, 1, 32, 32))}[matrix]
    users, nh, hd = 32, 3, 64
    x = bf16(torch.randn(1, users, nh, hd))
    cos, sin = bf16(torch.randn(1, users, 1, hd)), bf16(torch.randn(1, users, 1, hd))
    out = ttnn.experimental.rotary_embedding_llama(
        dev_tensor(x, device, memory_config=per_user(users, nh, hd)),
        dev_tensor(cos, device, memory_config=per_user(users, 1, hd)),
        dev_tensor(sin, device, memory_config=per_user(users, 1, hd)), _decode_trans_mat(device, users, t),
        is_decode_mode=True)
    rotated = (x.reshape(1, users, nh, 2, 32) @ t[0, 0]).reshape(x.shape)
    ref = bf16(x * cos + rotated * sin)
    assert (host(out) - ref).abs().max() <= 2**-7 * ref.abs().max()
    if matrix == "rotation":  # exact: the gather and the product compute the same fp32 values
        assert torch.equal(host(out), ref)


def _ref_sdpa(q, k, v, causal=True, window=None, scale=None):
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s, t = q.shape[2], k.shape[2]
    mask = torch.ones(s, t, dtype=torch.bool)
    if causal:
        mask &= torch.ones(s, t, dtype=torch.bool).tril()
    if window:
        mask &= ~torch.ones(s, t, dtype=torch.bool).tril(-window)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)


@pytest.mark.parametrize("nqh,nkv,window", [(4, 4, None), (8, 2, None), (4, 1, 24)])
def test_sdpa_prefill(device, nqh, nkv, window):
    s, d = 96, 64
    q, k, v = (bf16(torch.randn(1, h, s, d)) for h in (nqh, nkv, nkv))
    out = ttnn.transformer.scaled_dot_product_attention(dev_tensor(q, device), dev_tensor(k, device),
                                                        dev_tensor(v, device), is_causal=True,
                                                        sliding_window_size=window, scale=0.1)
    close(host(out), _ref_sdpa(q, k, v, window=window, scale=0.1), rel=2**-7)


def test_sdpa_non_causal_and_bad_lengths(device):
    q, k = bf16(torch.randn(1, 2, 32, 64)), bf16(torch.randn(1, 2, 64, 64))
    out = ttnn.transformer.scaled_dot_product_attention(dev_tensor(q, device), dev_tensor(k, device),
                                                        dev_tensor(k, device), is_causal=False)
    close(host(out), _ref_sdpa(q, k, k, causal=False, scale=1 / math.sqrt(64)), rel=2**-7)
    with pytest.raises(ttnn.TTError, match="Causal SDPA requires Q and K to have the same sequence length"):
        ttnn.transformer.scaled_dot_product_attention(dev_tensor(q, device), dev_tensor(k, device),
                                                      dev_tensor(k, device))
