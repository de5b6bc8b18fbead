"""What the models cannot compute exactly is refused at load, by name, never served with wrong output: quantized
checkpoints, o_proj biases, config fields that change the math, and checkpoints whose tensors are not the ones the
model reads (missing, unused, misshapen). And what they can compute exactly after padding is padded: an MLP whose
hidden size does not split into whole tiles per chip."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from generator_vllm import TT_CLASSES
from tests.conftest import pcc
from tests.models.tiny import GPT_OSS_MXFP4, hf_config, hf_last_logits, load_hf, make_tiny_model
from tt_models.backend import ttnn
from tt_models.model_args import ModelArgs, UnsupportedModelError


def _init(path, mesh, **kw):
    cfg = hf_config(path)
    return TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh, max_batch_size=4, max_seq_len=256,
                                                                  optimizations="reference", model_path=path, **kw)


def _variant(tiny_root, tmp_path, family, edit_config=None, edit_state=None):
    """A copy of a tiny model's directory with its config.json and/or tensors edited."""
    src = make_tiny_model(family, tiny_root)
    out = tmp_path / f"{family}-edited"
    out.mkdir()
    cfg = json.loads((src / "config.json").read_text())
    if edit_config:
        edit_config(cfg)
    (out / "config.json").write_text(json.dumps(cfg))
    state = load_file(src / "model.safetensors")
    if edit_state:
        edit_state(state)
    save_file(state, out / "model.safetensors")
    return out


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.update(quantization_config={"quant_method": "awq", "bits": 4}),
     r"quantized \(quantization_config quant_method='awq'\)"),
    # MXFP4 is read for GPT-OSS's experts only.
    (lambda c: c.update(quantization_config=GPT_OSS_MXFP4), r"quantized \(quantization_config quant_method='mxfp4'\)"),
    (lambda c: c.update(attention_bias=True), r"attention_bias=True \(llama: biases on q/k/v and o_proj\): the "
                                              r"o_proj bias is not implemented"),
    (lambda c: c.update(partial_rotary_factor=0.5), r"config field partial_rotary_factor=0.5 changes the model's "
                                                    r"math and is not implemented"),
    (lambda c: c.update(final_logit_softcapping=30.0), r"config field final_logit_softcapping=30.0"),
    (lambda c: c.update(rope_parameters={"rope_type": "dynamic", "factor": 4.0, "rope_theta": 10000.0}),
     r"rope type 'dynamic'"),
    (lambda c: c.update(hidden_act="gelu"), r"activation 'gelu'"),
])
def test_config_that_changes_the_math_is_refused(edit, message, tiny_root, tmp_path, mesh_device):
    path = _variant(tiny_root, tmp_path, "llama_gqa", edit_config=edit)
    with pytest.raises(UnsupportedModelError, match=message):
        _init(path, mesh_device)


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.update(final_logit_softcapping=30.0), r"config field final_logit_softcapping=30.0"),
    (lambda c: c.update(use_bidirectional_attention=True), r"config field use_bidirectional_attention=True"),
    (lambda c: c["rope_parameters"]["full_attention"].update(rope_type="dynamic"), r"rope type 'dynamic'"),
    (lambda c: c.update(hidden_activation="gelu"), r"activation 'gelu' is not supported for gemma3"),
    (lambda c: c.update(layer_types=["chunked_attention"] * c["num_hidden_layers"]), r"layer_types"),
])
def test_gemma_config_that_changes_the_math_is_refused(edit, message, tiny_root, tmp_path, mesh_device):
    path = _variant(tiny_root, tmp_path, "gemma3", edit_config=edit)
    with pytest.raises(UnsupportedModelError, match=message):
        _init(path, mesh_device)


@pytest.mark.parametrize("arch,reason", [("Gemma2ForCausalLM", "soft-caps the attention logits"),
                                         ("Gemma3ForConditionalGeneration", "vision tower is not implemented")])
def test_gemma_architectures_not_served_are_refused_with_the_reason(arch, reason):
    from transformers import Gemma3TextConfig

    from vllm_patches.registry import tt_architecture

    cfg = Gemma3TextConfig(architectures=[arch])
    with pytest.raises(UnsupportedModelError, match=f"{arch}: .*{reason}"):
        ModelArgs.from_hf_config(cfg)
    with pytest.raises(ValueError, match=f"{arch}: .*{reason}"):  # what vLLM's engine start says
        tt_architecture([arch])


def test_gemma_without_its_output_norms_is_refused(tiny_root, tmp_path, mesh_device):
    """A Gemma checkpoint lacking a norm of the attention output would otherwise run as a Llama-style layer."""
    path = _variant(tiny_root, tmp_path, "gemma3",
                    edit_state=lambda s: s.pop("model.layers.0.post_attention_layernorm.weight"))
    with pytest.raises(UnsupportedModelError, match=r"missing layers\.0\.post_attention_norm\.weight"):
        _init(path, mesh_device)


def _drop(name):
    return lambda s: s.pop(name)


def _add(name, shape):
    return lambda s: s.__setitem__(name, torch.zeros(shape, dtype=torch.bfloat16))


def _reshape(name):
    return lambda s: s.__setitem__(name, s[name][:, :-32].contiguous())


@pytest.mark.parametrize("edit,message", [
    (_drop("model.layers.1.mlp.down_proj.weight"), r"missing layers\.1\.feed_forward\.w2\.weight"),
    (_add("model.layers.0.self_attn.o_proj.bias", (128,)), r"unused layers\.0\.attention\.wo\.bias"),
    (_add("model.layers.0.post_feedforward_layernorm.weight", (128,)),
     r"unused layers\.0\.post_feedforward_layernorm\.weight"),
    (_reshape("model.layers.0.mlp.up_proj.weight"), r"wrong shape layers\.0\.feed_forward\.w3\.weight \(256, 96\) "
                                                    r"\(expected \(256, 128\)\)"),
])
def test_checkpoint_tensors_must_be_the_ones_read(edit, message, tiny_root, tmp_path, mesh_device):
    path = _variant(tiny_root, tmp_path, "llama_gqa", edit_state=edit)
    with pytest.raises(UnsupportedModelError, match="the checkpoint's tensors are not the ones this model reads.*"
                                                    + message):
        _init(path, mesh_device)


def test_untouched_checkpoint_loads(tiny_root, tmp_path, mesh_device):
    """The edits above are the only reason for the refusals: the same directory copied unedited loads."""
    _init(_variant(tiny_root, tmp_path, "qwen2_bias"), mesh_device)


def test_mlp_padded_to_whole_tiles_per_chip_matches_hf(tiny_root, tmp_path):
    """An MLP of 224 units (7 tiles) over a 1x2 mesh would leave each chip 3.5 tiles: it is padded to 256 with zero
    units, which change nothing (the model still equals HF), and the padding is visible in the model's args."""
    path = _variant(tiny_root, tmp_path, "qwen2_bias", edit_config=lambda c: c.update(intermediate_size=224),
                    edit_state=lambda s: [s.__setitem__(k, v[:224].contiguous() if "gate" in k or "up" in k
                                                        else v[:, :224].contiguous())
                                          for k, v in list(s.items()) if "mlp" in k])
    hf = load_hf(path)
    ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2), trace_region_size=1 << 24)
    try:
        model = _init(path, mesh)
        a = model.model.args
        assert (a.hidden_dim, a.mlp_padded_from, model.model.plan.hidden_dim) == (256, 224, 128)
        kv = model.allocate_kv_cache((32, model.kv_cache_heads, 32, a.head_dim), torch.bfloat16, a.n_layers)
        prompt = torch.randint(0, 512, (40,), generator=torch.Generator().manual_seed(2)).tolist()
        table = (torch.arange(8) + 1).to(torch.int32)[None]
        logits = model.prefill_forward(torch.tensor([prompt], dtype=torch.int32), table, kv, [len(prompt)])
        assert pcc(logits[0, 0], hf_last_logits(hf, prompt)) >= 0.999
    finally:
        ttnn.close_mesh_device(mesh)
        ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


@pytest.mark.parametrize("edit_config,edit_state,message", [
    (None, _drop("model.layers.1.self_attn.sinks"), r"missing layers\.1\.attention\.sinks"),
    (None, _drop("model.layers.0.mlp.router.bias"), r"missing layers\.0\.feed_forward\.gate\.bias"),
])
def test_gpt_oss_checkpoints_it_cannot_read_are_refused(edit_config, edit_state, message, tiny_root, tmp_path,
                                                         mesh_device):
    """A GPT-OSS checkpoint without a layer's sinks or router bias is refused by name instead of running without
    them. (Its released MXFP4 checkpoints are read: tests/models/test_moe.py.)"""
    path = _variant(tiny_root, tmp_path, "gpt_oss", edit_config=edit_config, edit_state=edit_state)
    with pytest.raises(UnsupportedModelError, match=message):
        _init(path, mesh_device)
