"""The checkpoint matrix on the simulator, a representative slice (the whole matrix: scripts/checkpoint_matrix.py):
real checkpoints' widths, heads and options with random weights, against HF at each cell's stated PCC threshold
(tests/models/checkpoint_matrix.py), prefill whole and chunked, traced decode at 32 users. The slice covers the widths
that failed before configs were derived from the shapes (Qwen2.5-0.5B's 896 / 4864, SmolLM2-360M's 960 / 2560 and 15
heads), QKV bias, tied and untied heads, q/k norm, and two-way tensor parallel on a 2x4 mesh with 7 heads and 7 tiles
of residual per chip."""

import pytest

from tests.models.checkpoint_matrix import PCC_MIN, run
from tt_checks.matrix import Target, targets
from tt_models.config.checkpoints import find_checkpoint, load_checkpoints

SLICE = [
    ("Qwen2.5-0.5B-Instruct", "performance", Target("N150", (1, 1))),
    ("Qwen2.5-0.5B-Instruct", "accuracy", Target("T3K", (2, 4))),
    ("SmolLM2-360M-Instruct", "accuracy", Target("N150", (1, 1))),
    ("SmolLM2-360M-Instruct", "performance_bfp4", Target("P150", (1, 1))),
    ("Qwen3-0.6B", "bf16", Target("N150", (1, 1))),
    ("Qwen2.5-1.5B-Instruct", "performance", Target("N300", (1, 2))),
]


@pytest.fixture
def matrix_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TT_VLLM_CACHE", str(tmp_path / "tt_cache"))
    return tmp_path


@pytest.mark.parametrize("name,profile,target", SLICE, ids=lambda v: getattr(v, "name", v))
def test_checkpoint_follows_hf(name, profile, target, matrix_root):
    r = run(find_checkpoint(name), profile, target, matrix_root, layers=2)
    assert r["trace_captures"] == 1
    low = {k: round(v, 4) for k, v in r["pcc"].items() if v < PCC_MIN[r["runs_profile"]]}
    assert not low, f"{name}/{profile} on {target.name}: PCC below {PCC_MIN[r['runs_profile']]}: {low}"
    assert len(r["pcc"]) == 2 + 3 * 2  # both prefills, 3 decode steps x 2 users


# Checkpoints no checked mesh holds in `performance` but a T3K holds in `performance_bfp4` (its model file maps no
# profile: the bfloat4_b experts cost accuracy, so the refusal names the numbers and the user chooses).
BFP4_ONLY = {"zai-org/GLM-4.5-Air": "13.4 GiB of weights per chip of a T3K in performance, 9.5 in performance_bfp4"}


def test_every_checkpoint_has_a_target_for_its_best_profile():
    """Every matrix entry runs somewhere the matrix checks it (a checkpoint nothing can hold would be a gap): in
    `performance`, or for the few listed, in `performance_bfp4` only."""
    for ckpt in load_checkpoints().values():
        cfg = ckpt.hf_config()
        if ckpt.hub_id in BFP4_ONLY:
            assert not targets(cfg, "performance") and targets(cfg, "performance_bfp4"), ckpt.hub_id
        else:
            assert targets(cfg, "performance"), ckpt.hub_id


def test_planner_agrees_with_the_model_at_load(mesh_device):
    """tt_checks.matrix says a 70B checkpoint does not fit one N150 and fits a T3K; the model refuses it at load on
    one chip with the numbers (before placing a weight), as the planner predicts."""
    from generator_vllm import TT_CLASSES
    from tt_models.model_args import UnsupportedModelError

    cfg = find_checkpoint("Llama-3.3-70B-Instruct").hf_config()
    planned = targets(cfg, "performance")
    assert Target("N150", (1, 1)) not in planned and Target("T3K", (1, 8)) in planned
    with pytest.raises(UnsupportedModelError, match=r"does not fit a \(1, 1\) mesh: its weights take [\d.]+ GiB per "
                                                    r"chip on one chip, a chip has [\d.]+ GiB of DRAM free .* needs "
                                                    r"about \d+ chips"):
        TT_CLASSES["LlamaForCausalLM"].initialize_vllm_model(cfg, mesh_device, max_batch_size=32, max_seq_len=4096,
                                                             optimizations="performance", load_format="dummy")


# Gemma 3 checkpoints: (head_dim, query_pre_attn_scalar, window, vocabulary, global layers, global RoPE linear factor)
GEMMA3 = {
    "gemma-3-270m": (256, 256, 512, 262144, (5, 11, 17), None),
    "gemma-3-1b-it": (256, 256, 512, 262144, (5, 11, 17, 23), None),
    "gemma-3-4b-it": (256, 256, 1024, 262208, (5, 11, 17, 23, 29), 8.0),
    "gemma-3-12b-it": (256, 256, 1024, 262208, tuple(range(5, 48, 6)), 8.0),
    "gemma-3-27b-it": (128, 168, 1024, 262208, tuple(range(5, 62, 6)), 8.0),
}


@pytest.mark.parametrize("name", GEMMA3)
def test_gemma3_checkpoint_config(name):
    """The matrix's Gemma 3 entries (text configs; 4B/12B/27B publish only their text_config's non-default keys) build,
    under the installed transformers, the model the checkpoint is: 5 sliding : 1 global layers, the window on the
    sliding ones, RoPE 10k on sliding layers and 1M on global ones (linear x8 on 4B and larger), query_pre_attn_scalar
    as the softmax scale, head_dim; and a two-layer cell runs one layer of each kind."""
    import torch

    from tt_models.model_args import FULL, SLIDING, ModelArgs
    from tt_models.rope import inverse_frequencies

    head_dim, scalar, window, vocab, full, factor = GEMMA3[name]
    ckpt = find_checkpoint(name)
    cfg = ckpt.hf_config()
    a = ModelArgs.from_hf_config(cfg)
    assert a.family == "gemma3" and a.head_dim == head_dim and a.vocab_size == vocab
    assert a.attn_scale == scalar**-0.5 and a.sliding_window == window and a.tie_word_embeddings
    assert tuple(i for i, t in enumerate(a.layer_types) if t == FULL) == full
    assert a.window(0) == window and a.window(full[0]) is None
    assert a.rope_kind(0) == SLIDING and a.rope_kind(full[0]) == FULL
    base = torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim
    local, scale = inverse_frequencies(cfg, head_dim, SLIDING)
    torch.testing.assert_close(local, 1.0 / 10000.0**base)
    glob, gscale = inverse_frequencies(cfg, head_dim, FULL)
    torch.testing.assert_close(glob, 1.0 / 1000000.0**base / (factor or 1.0))
    assert scale == gscale == 1.0
    two = ModelArgs.from_hf_config(ckpt.hf_config(n_layers=2, vocab_size=2048))
    assert two.layer_types == (SLIDING, FULL) and two.n_layers == 2 and two.attn_scale == a.attn_scale
