"""A traced decode replay computes the row-by-row ops for live users only (ttnn_sim.trace.live_rows): the rows up to
the last user with a position, rounded up to 4. The numbers must not change: for every family and profile, each
live user's logits are bit for bit those of a replay that computes all 32 rows, at the batches that leave rows out
(1 user, users spread over the first slots, one past a multiple of 4) and at a full batch; on one chip and tensor
parallel over two; on the tiny configs and at the widths of real checkpoints."""

import pytest
import torch

import ttnn_sim.trace as sim_trace
from generator_vllm import TT_CLASSES
from tests.models.test_tensor_parallel import open_mesh
from tests.models.tiny import FAMILIES, hf_config, make_tiny_model, make_wide_model
from tt_models.config.schema import CONFIG_ROOT
from ttnn_sim.compute import replay_stats

PROFILES = sorted(p.stem for p in (CONFIG_ROOT / "optimizations").glob("*.yaml"))
USERS, BLOCK, MAX_SEQ = 32, 32, 128
# Live slots per case; the last live slot decides the rows computed.
CASES = {"one user": [0], "slots 0, 2, 5": [0, 2, 5], "slots 0-8": list(range(9)), "full": list(range(USERS))}


def _replay(tt, kv, tokens, pos, table, live_rows: bool) -> torch.Tensor:
    sim_trace.LIVE_ROWS = live_rows
    try:
        return tt.decode_forward(tokens, pos, table, kv, enable_trace=True).clone()
    finally:
        sim_trace.LIVE_ROWS = True


def _check(path, mesh_device, profile):
    cfg = hf_config(path)
    tt = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh_device, max_batch_size=USERS,
                                                                max_seq_len=MAX_SEQ, optimizations=profile)
    a = tt.model.args
    width = MAX_SEQ // BLOCK
    kv = tt.allocate_kv_cache((USERS * width + 1, tt.kv_cache_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    table = (torch.arange(USERS * width, dtype=torch.int32) + 1).reshape(USERS, width)
    g = torch.Generator().manual_seed(0)
    prompt_len = 40
    prompts = torch.randint(0, cfg.vocab_size, (USERS, prompt_len), generator=g, dtype=torch.int32)
    tt.prefill_forward(prompts, table, kv, [prompt_len] * USERS)
    for name, live in CASES.items():
        tokens = torch.zeros(USERS, 1, dtype=torch.int32)
        pos = torch.full((USERS,), -1, dtype=torch.int32)
        for step in range(3):
            tokens[live, 0] = torch.randint(0, cfg.vocab_size, (len(live),), generator=g, dtype=torch.int32)
            pos[live] = prompt_len + step
            # Rewriting a position with the same token is idempotent: both replays see the same cache.
            before = replay_stats["rows_left_out"]
            every_row = _replay(tt, kv, tokens, pos, table, live_rows=False)
            assert replay_stats["rows_left_out"] == before
            live_only = _replay(tt, kv, tokens, pos, table, live_rows=True)
            assert torch.equal(live_only[live], every_row[live]), f"{profile} {name} step {step}"
            # The rows past the live ones were left out, not computed (and come back undefined, as before).
            rows = -(-(live[-1] + 1) // 4) * 4
            assert (replay_stats["rows_left_out"] > before) == (rows < USERS), f"{profile} {name}"
            dead = [i for i in range(USERS) if i not in live]
            assert torch.isnan(live_only[dead]).all() and torch.isnan(every_row[dead]).all()
    assert tt.trace_captures == 1


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_live_rows_are_bit_identical(family, profile, mesh_device, tiny_root):
    _check(make_tiny_model(family, tiny_root), mesh_device, profile)


@pytest.mark.parametrize("profile", ["performance", "accuracy"])
def test_live_rows_are_bit_identical_tensor_parallel(profile, tiny_root):
    with open_mesh((1, 2)) as mesh:
        _check(make_wide_model("llama_gqa", tiny_root), mesh, profile)


@pytest.mark.parametrize("hub_id", ["Qwen/Qwen2.5-0.5B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"])
def test_live_rows_are_bit_identical_at_real_widths(hub_id, mesh_device, tmp_path):
    """Published widths (Qwen2.5-0.5B's 896 / 4864 tile unevenly; Llama-3.2-1B's 2048 / 8192 take bfloat4_b MLP
    weights under `performance`), one layer of random weights, the default profile."""
    from tests.models.checkpoint_matrix import make_checkpoint
    from tt_models.config.checkpoints import find_checkpoint

    _check(make_checkpoint(find_checkpoint(hub_id), tmp_path, layers=1), mesh_device, "performance")
