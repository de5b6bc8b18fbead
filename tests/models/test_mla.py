"""DeepSeek-V3's multi-latent attention (tt_models/layers/mla.py) beyond the per-family comparisons with HF
(test_moe.py: the tiny DeepSeek-V3 in every profile; test_families.py: its attention in dense layers with the
query from one projection, as Moonlight's): prompts through the chunked MLA prefill over the paged latent cache and
prefix-cache hits, the parts of the attention the comparison sees, the config fields read and refused."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import DeepseekV3Config

from tests.models.test_families import build
from tests.models.test_moe import _check_chunked_paths, assert_each_alteration_is_seen
from tests.models.test_tensor_parallel import open_mesh
from tests.models.tiny import load_hf, make_tiny_model
from tt_models.model_args import ModelArgs, UnsupportedModelError


@pytest.mark.parametrize(("family", "profile"), [("deepseek_v3", "reference"), ("deepseek_v3_dense", "reference"),
                                                 ("deepseek_v3_dense", "performance")])
def test_chunked_prefill_and_prefix_hits_match_hf(family, profile, mesh_device, tiny_root):
    """A 150-token prompt prefilled whole, as prefix-cache hits (chunked_flash_mla_prefill over the cached latent
    rows) and in 64-token chunks, each against HF, then decode steps from the chunked prefill's cache."""
    path = make_tiny_model(family, tiny_root)
    tt, kv = build(path, mesh_device, profile)
    assert len(kv[0][0]) == 1 and tuple(kv[0][0][0].shape)[1:] == (1, 32, 96)  # one latent cache: 64 + 32 a row
    prompt = torch.randint(0, 512, (150,), generator=torch.Generator().manual_seed(5)).tolist()
    _check_chunked_paths(tt, kv, load_hf(path), prompt, profile)


def _mla_altered(src, dst, how: str):
    """The tiny DeepSeek-V3 with its YaRN mscale_all_dim 0 (no mscale^2 on the softmax scale: "mscale"), its latent
    norm's weights all 1 ("latent_norm"), or one head's value up-projection zeroed ("values")."""
    shutil.copytree(src, dst)
    f, cfg_file = dst / "model.safetensors", dst / "config.json"
    sd, cfg = load_file(f), json.loads(cfg_file.read_text())
    for n in sd:
        if how == "latent_norm" and n.endswith("kv_a_layernorm.weight"):
            sd[n] = torch.ones_like(sd[n])
        if how == "values" and n.endswith("kv_b_proj.weight"):
            per_head = sd[n].reshape(cfg["num_attention_heads"], -1, sd[n].shape[-1]).clone()
            per_head[1, cfg["qk_nope_head_dim"]:] = 0.0
            sd[n] = per_head.reshape(sd[n].shape)
    if how == "mscale":
        cfg["rope_parameters"] = dict(cfg["rope_parameters"], mscale_all_dim=0.0)
    save_file(sd, f, metadata={"format": "pt"})
    cfg_file.write_text(json.dumps(cfg))
    return dst


def test_mla_parts_are_used(mesh_device, tiny_root, tmp_path):
    """The comparison with HF sees the softmax scale's YaRN factor, the latent's norm and each head's value
    up-projection: each altered checkpoint matches its own HF and misses the real model's."""
    assert_each_alteration_is_seen("deepseek_v3", mesh_device, tiny_root, tmp_path, _mla_altered,
                                   ("mscale", "latent_norm", "values"))


def test_config_fields_read_and_refused():
    """DeepSeek-V3's published attention sizes give the cache row and softmax scale HF computes; what the TT layer
    does not implement is refused by name."""
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention

    yarn = dict(rope_type="yarn", rope_theta=10000.0, factor=40.0, beta_fast=32.0, beta_slow=1.0, mscale=1.0,
                mscale_all_dim=1.0, original_max_position_embeddings=4096)
    cfg = DeepseekV3Config(rope_parameters=yarn, architectures=["DeepseekV3ForCausalLM"])
    a = ModelArgs.from_hf_config(cfg)
    assert (a.n_kv_heads, a.head_dim, a.rope_dim, a.kv_caches_per_layer) == (1, 576, 64, 1)
    assert a.mla.q_lora_rank == 1536 and a.expert_groups == (8, 4) and a.moe_layers[:4] == (False,) * 3 + (True,)
    assert a.attn_scale == pytest.approx(DeepseekV3Attention(cfg, 0).scaling, rel=1e-12)
    assert a.attn_scale > 192**-0.5  # mscale^2 > 1 at factor 40
    with pytest.raises(UnsupportedModelError, match="rope_interleave"):
        ModelArgs.from_hf_config(DeepseekV3Config(rope_interleave=False, architectures=["DeepseekV3ForCausalLM"]))
    with pytest.raises(UnsupportedModelError, match="kv_lora_rank=500"):
        ModelArgs.from_hf_config(DeepseekV3Config(kv_lora_rank=500, architectures=["DeepseekV3ForCausalLM"]))


def test_tensor_parallel_is_refused_at_load(tiny_root):
    """Heads split over chips are not implemented for multi-latent attention yet: refused when the model loads."""
    path = make_tiny_model("deepseek_v3", tiny_root)
    with open_mesh((1, 2)) as mesh, pytest.raises(UnsupportedModelError, match="runs on one chip so far"):
        build(path, mesh, "reference")
