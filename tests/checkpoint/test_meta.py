"""HF -> Meta conversion: complete renames, and the per-head q/k permutation turns HF's rotate-half RoPE into TT's
interleaved RoPE without changing any attention score (checked in plain torch), with V/WO untouched."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

from tt_models.checkpoint import hf_to_meta, load_state_dict

NH, NKV, HD, DIM = 4, 2, 32, 128


def rope_half(x, theta):
    """HF: rotate channel j with j + hd/2."""
    x1, x2 = x[..., : HD // 2], x[..., HD // 2 :]
    c, s = torch.cos(theta), torch.sin(theta)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def rope_interleaved(x, theta):
    """TT/Meta: rotate adjacent pairs (2j, 2j+1)."""
    xr = x.reshape(*x.shape[:-1], HD // 2, 2)
    c, s = torch.cos(theta), torch.sin(theta)
    out = torch.stack([xr[..., 0] * c - xr[..., 1] * s, xr[..., 1] * c + xr[..., 0] * s], -1)
    return out.reshape(x.shape)


def scores(wq, wk, x, pos, rope, qn=None, kn=None):
    q = (x @ wq.t()).reshape(len(pos), NH, HD)
    k = (x @ wk.t()).reshape(len(pos), NKV, HD)
    if qn is not None:
        q, k = q * qn, k * kn
    theta = pos[:, None, None] * (10000 ** (-torch.arange(HD // 2) / (HD // 2)))
    q, k = rope(q, theta), rope(k, theta)
    return torch.einsum("shd,thd->hst", q, k.repeat_interleave(NH // NKV, 1))


def build(cls, config_cls, tmp_path, shard=None, **kw):
    torch.manual_seed(0)
    cfg = config_cls(hidden_size=DIM, intermediate_size=256, num_hidden_layers=2, num_attention_heads=NH,
                     num_key_value_heads=NKV, vocab_size=300, head_dim=HD, **kw)
    model = cls(cfg)
    model.save_pretrained(tmp_path, safe_serialization=True, **({"max_shard_size": shard} if shard else {}))
    return model


def test_llama_renames_permutation_and_sharded_load(tmp_path):
    model = build(LlamaForCausalLM, LlamaConfig, tmp_path, shard="100KB", tie_word_embeddings=False)
    assert (tmp_path / "model.safetensors.index.json").exists()  # really sharded
    sd = load_state_dict(tmp_path)
    assert set(sd) == set(model.state_dict())
    meta = hf_to_meta(sd, NH, NKV, HD)
    expected = {"tok_embeddings.weight", "norm.weight", "output.weight"} | {
        f"layers.{i}.{n}.weight" for i in range(2) for n in (
            "attention.wq", "attention.wk", "attention.wv", "attention.wo", "feed_forward.w1", "feed_forward.w2",
            "feed_forward.w3", "attention_norm", "ffn_norm")}
    assert set(meta) == expected
    p = "model.layers.1.self_attn."
    assert torch.equal(meta["layers.1.attention.wv.weight"], sd[p + "v_proj.weight"])
    assert torch.equal(meta["layers.1.attention.wo.weight"], sd[p + "o_proj.weight"])
    assert torch.equal(meta["layers.1.feed_forward.w1.weight"], sd["model.layers.1.mlp.gate_proj.weight"])
    x, pos = torch.randn(7, DIM), torch.arange(7).float() * 3
    hf = scores(sd[p + "q_proj.weight"], sd[p + "k_proj.weight"], x, pos, rope_half)
    tt = scores(meta["layers.1.attention.wq.weight"], meta["layers.1.attention.wk.weight"], x, pos, rope_interleaved)
    assert torch.allclose(hf, tt, atol=1e-4)
    assert not torch.allclose(hf, scores(sd[p + "q_proj.weight"], sd[p + "k_proj.weight"], x, pos,
                                         rope_interleaved), atol=1e-2)  # the permutation is what makes them agree


def test_qwen2_biases_are_permuted_like_their_weights(tmp_path):
    build(Qwen2ForCausalLM, Qwen2Config, tmp_path, tie_word_embeddings=True)
    sd = load_state_dict(tmp_path)
    assert "lm_head.weight" not in sd  # a tied checkpoint stores the embedding once
    meta = hf_to_meta(sd, NH, NKV, HD)
    p = "model.layers.0.self_attn."
    for w, b in (("q_proj", "wq"), ("k_proj", "wk")):
        fused = torch.cat([sd[p + f"{w}.weight"], sd[p + f"{w}.bias"][:, None]], 1)
        n = NH if w == "q_proj" else NKV
        idx = torch.stack([torch.arange(HD // 2), torch.arange(HD // 2) + HD // 2], 1).reshape(-1)
        ref = fused.reshape(n, HD, -1)[:, idx].reshape(n * HD, -1)
        got = torch.cat([meta[f"layers.0.attention.{b}.weight"], meta[f"layers.0.attention.{b}.bias"][:, None]], 1)
        assert torch.equal(got, ref)
    assert torch.equal(meta["layers.0.attention.wv.bias"], sd[p + "v_proj.bias"])
    assert torch.equal(meta["output.weight"], meta["tok_embeddings.weight"])  # tied: the head reuses the embedding


def test_qwen3_qk_norm_is_permuted(tmp_path):
    model = build(Qwen3ForCausalLM, Qwen3Config, tmp_path, tie_word_embeddings=False)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_norm.weight.copy_(torch.rand(HD) + 0.5)
            layer.self_attn.k_norm.weight.copy_(torch.rand(HD) + 0.5)
    model.save_pretrained(tmp_path, safe_serialization=True)
    sd = load_state_dict(tmp_path)
    meta = hf_to_meta(sd, NH, NKV, HD)
    assert {"layers.1.attention.q_norm.weight", "layers.1.attention.k_norm.weight"} <= set(meta)
    p = "model.layers.0.self_attn."
    x, pos = torch.randn(5, DIM), torch.arange(5).float()
    hf = scores(sd[p + "q_proj.weight"], sd[p + "k_proj.weight"], x, pos, rope_half,
                sd[p + "q_norm.weight"], sd[p + "k_norm.weight"])
    tt = scores(meta["layers.0.attention.wq.weight"], meta["layers.0.attention.wk.weight"], x, pos, rope_interleaved,
                meta["layers.0.attention.q_norm.weight"], meta["layers.0.attention.k_norm.weight"])
    assert torch.allclose(hf, tt, atol=1e-4)


def test_head_count_mismatch_names_the_tensor():
    sd = {"model.layers.0.self_attn.q_proj.weight": torch.zeros(NH * HD, DIM)}
    with pytest.raises(ValueError, match=r"q_proj.weight: cannot split 128 rows into 2 heads of head_dim 32"):
        hf_to_meta(sd, 2, NKV, HD)


def test_partial_rope_interleaves_only_the_rotated_channels():
    """GLM-4.5's RoPE turns the first half of each head (rotate-half within it) and passes the rest: with only those
    rows interleaved and cos/sin 1/0 past them (tt_models.rope), TT's pairwise rotation by the 32x32 matrix gives
    HF's own attention scores (transformers' Glm4Moe rotary embedding and apply_rotary_pos_emb)."""
    from transformers import Glm4MoeConfig
    from transformers.models.glm4_moe.modeling_glm4_moe import Glm4MoeRotaryEmbedding, apply_rotary_pos_emb

    from tt_models.rope import cos_sin_tables, transformation_matrix

    hd, nh, seq = 64, 2, 7
    cfg = Glm4MoeConfig(hidden_size=DIM, num_attention_heads=nh, num_key_value_heads=1, head_dim=hd,
                        partial_rotary_factor=0.5, max_position_embeddings=64)
    torch.manual_seed(0)
    wq, wk, x = torch.randn(nh * hd, DIM), torch.randn(hd, DIM), torch.randn(seq, DIM)
    pos = torch.arange(seq) * 5
    cos, sin = Glm4MoeRotaryEmbedding(cfg)(x[None], pos[None])
    assert cos.shape[-1] == 32  # HF rotates 32 of the 64 channels
    q, k = (x @ wq.t()).view(1, seq, nh, hd).transpose(1, 2), (x @ wk.t()).view(1, seq, 1, hd).transpose(1, 2)
    qh, kh = apply_rotary_pos_emb(q, k, cos, sin)
    hf = torch.einsum("hsd,td->hst", qh[0], kh[0, 0])

    p = "model.layers.0.self_attn."
    meta = hf_to_meta({p + "q_proj.weight": wq, p + "k_proj.weight": wk}, nh, 1, hd, rotary_dim=32)
    mq, mk = meta["layers.0.attention.wq.weight"], meta["layers.0.attention.wk.weight"]
    assert torch.equal(mq.view(nh, hd, DIM)[:, 32:], wq.view(nh, hd, DIM)[:, 32:])  # the passed rows stay
    c, s = cos_sin_tables(cfg, hd, 64, rotary_dim=32)
    assert torch.equal(c[0, 0, :, 32:], torch.ones(64, 32)) and torch.equal(s[0, 0, :, 32:], torch.zeros(64, 32))
    t = torch.block_diag(*[transformation_matrix()[0, 0]] * (hd // 32))

    def rope_tt(v):
        return v * c[0, 0, pos] + (v @ t) * s[0, 0, pos]

    tq, tk = rope_tt((x @ mq.t()).view(seq, nh, hd).transpose(0, 1)), rope_tt(x @ mk.t())
    assert torch.allclose(torch.einsum("hsd,td->hst", tq, tk), hf, atol=1e-3)
    whole = hf_to_meta({p + "q_proj.weight": wq, p + "k_proj.weight": wk}, nh, 1, hd)  # every channel interleaved
    wq_, wk_ = whole["layers.0.attention.wq.weight"], whole["layers.0.attention.wk.weight"]
    wrong = torch.einsum("hsd,td->hst", rope_tt((x @ wq_.t()).view(seq, nh, hd).transpose(0, 1)), rope_tt(x @ wk_.t()))
    assert not torch.allclose(wrong, hf, atol=1e-1)
