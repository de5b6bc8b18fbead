"""GPT-OSS as its checkpoints are released: the experts in MXFP4 (X_blocks: two 4-bit e2m1 codes per byte,
X_scales: a power of two per 32 values), everything else bf16, with the published quantization_config. The TT models
read them dequantized to bf16 (exact: every MXFP4 value is a bf16 number) and round them to the profile's expert
dtype like bf16 weights. The reference is HF's from_pretrained of the same directory, which dequantizes on a CPU."""

import pytest
import torch

from tests.models.test_families import build, follow_hf
from tests.models.test_moe import MIN_COMPARED, compare_step
from tests.models.tiny import load_hf, make_mxfp4_gpt_oss


def test_an_mxfp4_checkpoint_reads_as_hfs_dequantized_weights(tiny_root):
    """The packed experts are read as the bf16 tensors HF's from_pretrained dequantizes them to, and no packed
    tensor is left."""
    from tt_models.checkpoint import load_state_dict

    path = make_mxfp4_gpt_oss(tiny_root)
    state = load_state_dict(path)
    hf = load_hf(path)
    assert not [n for n in state if n.endswith(("_blocks", "_scales"))]
    for i, layer in enumerate(hf.model.layers):
        for which in ("gate_up_proj", "down_proj"):
            got = state[f"model.layers.{i}.mlp.experts.{which}"]
            assert got.dtype == torch.bfloat16
            assert torch.equal(got.float(), getattr(layer.mlp.experts, which).float())


@pytest.mark.parametrize("profile", ["reference", "performance"])
def test_an_mxfp4_checkpoint_matches_hf(profile, mesh_device, tiny_root):
    """Prefill and 32 traced decode steps against HF, as every MoE family is compared (tests/models/test_moe.py)."""
    path = make_mxfp4_gpt_oss(tiny_root)
    hf = load_hf(path).float()  # HF keeps the dequantized experts in bf16: compute in fp32 as for the others
    tt, kv = build(path, mesh_device, profile)
    compared, comparing = 0, True
    for where, logits, ref, ids in follow_hf(tt, kv, hf, profile, "gpt_oss_mxfp4"):
        if comparing:
            comparing = compare_step(logits, ref, hf, ids, profile, where)
            compared += comparing
    assert compared >= MIN_COMPARED, f"only {compared} steps compared"
    assert tt.trace_captures == 1
