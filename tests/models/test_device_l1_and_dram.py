"""Where the models put what the real ttnn 0.81.1 refused at Gemma 3's widths (issue 23), on the simulator, against
the verdicts the real-ttnn checker recorded (scripts/check_real_ttnn.sh --checkpoints gemma-3-12b-it / -27b-it):

- the decode logits of a 262k vocabulary in L1 beside the LM head's DRAM-sharded matmuls: the real ttnn refused
  the 12th split's program on a P150 ("Statically allocated dataflow buffers in program 46 clash with L1 buffers
  on core range [0-0 - 9-9]. L1 buffer allocated at 1261568 and static dataflow buffer region ends at 1271168"),
  and on an N300 (buffer at 1174272, region ends at 1240416); the layouts now place them from the matmuls' buffers;
- the vocabulary slices all-gathered from L1 on a T3K (32,776 columns per chip: the composite path): refused with
  "... core range [0-0 - 3-7]. L1 buffer allocated at 625280 and static dataflow buffer region ends at 630240";
  gather_vocab now gathers such slices from DRAM;
- Gemma-3-12B in bf16 on an N300: the real ttnn ran out of DRAM placing its weights ("Not enough space to allocate
  123863040 B DRAM buffer across 12 banks ... free: 10102208 B") after the whole-tile estimate let it load; the
  estimate is now the per-bank placement, and the model is refused before any weight moves.

The model-level runs take the checkpoints' real widths with placed-only weights (load_format "dummy")."""

import pytest
import torch

from generator_vllm import TT_CLASSES
from tt_checks.matrix import Target
from tt_models.backend import ttnn
from tt_models.config import load_model_overrides, load_optimizations
from tt_models.config.checkpoints import find_checkpoint
from tt_models.model_args import ModelArgs, UnsupportedModelError
from tt_models.parallel import pad_mlp, plan_tensor_parallel, weight_bank_bytes
from tt_models.precision import dtype_of, layer_precision
from ttnn_sim import TTError


@pytest.fixture
def target(request, monkeypatch):
    """A simulated mesh of the target's chips (Blackhole for P150), with the fabric a mesh's collectives need."""
    from tests.models.checkpoint_matrix import close_target, open_target

    t = Target(*request.param)
    mesh = open_target(t)
    yield mesh
    close_target(mesh)


def _layouts(name, profile, mesh):
    from tt_models.layouts import build_layouts

    cfg = find_checkpoint(name).hf_config()
    args = pad_mlp(ModelArgs.from_hf_config(cfg), tuple(mesh.shape))
    plan = plan_tensor_parallel(args, tuple(mesh.shape))
    prof = load_optimizations(load_model_overrides(cfg._name_or_path).profile_for(profile))
    precisions = [layer_precision(prof, i) for i in range(args.n_layers)]
    return build_layouts(plan.local_args(args), mesh, 32, residual_dim=plan.dim, precisions=precisions,
                         head_dtype=dtype_of(prof.precision("LM_HEAD")))


@pytest.mark.parametrize("target,name,profile,where", [
    (("P150", (1, 1)), "gemma-3-12b-it", "performance", "DRAM"),
    (("P150", (1, 1)), "gemma-3-12b-it", "performance_bfp4", "DRAM"),
    (("N300", (1, 2)), "gemma-3-12b-it", "accuracy", "DRAM"),
    (("N150", (1, 1)), "gemma-3-4b-it", "accuracy", "DRAM"),
    # the real ttnn accepts these in L1 (checked at every layer)
    (("N150", (1, 1)), "gemma-3-4b-it", "performance", "L1"),
    (("P150", (1, 1)), "Llama-3.1-8B-Instruct", "performance", "L1"),
    (("T3K", (1, 8)), "gemma-3-27b-it", "performance", "L1"),
], indirect=["target"])
def test_logits_go_where_the_lm_head_buffers_leave_room(target, name, profile, where):
    d = _layouts(name, profile, target).decode
    assert d.logits.buffer_type == getattr(ttnn.BufferType, where)


@pytest.mark.parametrize("target", [("P150", (1, 1))], indirect=True)
def test_the_placement_rule_uses_the_real_numbers(target):
    """Gemma-3-12B on a P150: each LM-head split's matmul takes 1,159,424 B of circular buffers per core and decode
    holds 143,360 B of L1 when the head starts, then the normed copy's 8,192 (as the real ttnn 0.81.1 reported them:
    its buffers end at 111,744 + 1,159,424 = 1,271,168, and its L1 view showed 143,360 B per bank allocated before
    the head)."""
    from tt_models.layouts import TILE, head_live_l1

    lay = _layouts("gemma-3-12b-it", "performance", target)
    assert max(m.cb_bytes for m in lay.decode.lm_head) == 1_159_424
    assert head_live_l1(4 * 2048, 4 * 2048, 2, 256, 2048) == 143_360 + 8192  # 3840 wide on 30 cores, 2 kinds of layer
    assert lay.lm_head_splits[0] % TILE == 0


def _decode(gen, sampling=None):
    a = gen.model.args
    kv = gen.allocate_kv_cache((33, gen.kv_cache_heads, 64, a.head_dim), torch.bfloat16, a.n_layers)
    tokens = torch.zeros(32, 1, dtype=torch.int32)
    pos = torch.full((32,), 63, dtype=torch.int32)
    table = (torch.arange(32, dtype=torch.int32) % 32 + 1)[:, None]
    return gen.decode_forward(tokens, pos, table, kv, enable_trace=False, sampling_params=sampling)


def _gemma(name, mesh, profile="performance", layers=2):
    cfg = find_checkpoint(name).hf_config(n_layers=layers)  # two layers: a sliding-window and a global one
    return TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh, max_batch_size=32, max_seq_len=1024,
                                                                  optimizations=profile, load_format="dummy")


@pytest.mark.slow
@pytest.mark.parametrize("target", [("P150", (1, 1))], indirect=True)
@pytest.mark.parametrize("old", [True, False], ids=["logits-in-L1", "as-placed"])
def test_gemma3_12b_lm_head_on_p150(target, old, monkeypatch):
    import tt_models.layouts as layouts

    if old:  # the earlier placement: the logits of every split in L1
        monkeypatch.setattr(layouts, "logits_memory", lambda *a, **k: ttnn.L1_MEMORY_CONFIG)
    gen = _gemma("gemma-3-12b-it", target)
    if old:
        with pytest.raises(TTError, match=r"linear: Statically allocated dataflow buffers in program \d+ clash with L1 "
                                          r"buffers on core range \[0-0 - 12-9\]\. L1 buffer allocated at 1261568 and "
                                          r"static dataflow buffer region ends at 1271168"):
            _decode(gen)
    else:
        assert _decode(gen).shape[0] == 32


@pytest.mark.slow
@pytest.mark.parametrize("target", [("T3K", (1, 8))], indirect=True)
@pytest.mark.parametrize("old", [True, False], ids=["gather-from-L1", "as-placed"])
def test_gemma3_27b_vocabulary_gather_on_t3k(target, old, monkeypatch):
    """The head's arithmetic is skipped (8 chips x 5376 x 32,776 on the CPU): its output lands where the head puts
    it, [1, 1, 32, 32,776] per chip in L1, with the head's own buffers released, as on the device."""
    import tt_models.model as model
    from tt_models.sampling import TTSamplingParams

    def head(self, x):
        ttnn.deallocate(x)
        return ttnn.empty((1, 1, 32, self.local_args.vocab_size), ttnn.bfloat16, ttnn.TILE_LAYOUT, self.device,
                          self.layouts.decode.logits)

    monkeypatch.setattr(model.Transformer, "_head", head)
    if old:  # the earlier gather: straight from the head's L1 output
        monkeypatch.setattr(model, "gather_vocab", lambda logits, plan: ttnn.all_gather(
            logits, 3, cluster_axis=plan.cluster_axis, topology=ttnn.Topology.Linear))
    gen = _gemma("gemma-3-27b-it", target)
    greedy = TTSamplingParams(temperature=[0.0] * 32, top_k=[1] * 32, top_p=[1.0] * 32)
    if old:
        with pytest.raises(TTError, match=r"all_gather: Statically allocated dataflow buffers in program \d+ clash "
                                          r"with L1 buffers on core range \[0-0 - 3-7\]\. L1 buffer allocated at \d+ "
                                          r"and static dataflow buffer region ends at 630240"):
            _decode(gen, greedy)
    else:
        assert _decode(gen, greedy).shape[0] == 32


@pytest.mark.parametrize("target,name,profile", [
    (("N300", (1, 2)), "gemma-3-12b-it", "accuracy"),
    (("P150", (1, 1)), "gemma-3-270m", "performance"),
    (("N150", (1, 1)), "Llama-3.1-8B-Instruct", "performance"),
    (("T3K", (2, 4)), "Qwen2.5-0.5B-Instruct", "bf16"),
    (("N300", (1, 2)), "Qwen3-30B-A3B", "performance_bfp4"),  # MoE: each chip its 64 of the 128 experts
    (("T3K", (2, 4)), "Mixtral-8x7B-v0.1", "performance"),  # one expert per chip, over both mesh axes
    # 2880 = 90 tiles: the residual padded to 3072 (WO, the experts' down projection and their biases 3072 wide);
    # biases on o_proj, the router and the experts, and the sinks
    (("T3K", (1, 8)), "gpt-oss-20b", "bf16"),
    # over 2x4's 4 columns: padded to 2944, QKV / LM head with zero rows, the distributed norms' gamma in fp32
    (("T3K", (2, 4)), "gpt-oss-20b", "bf16"),
    # Qwen2-MoE: each chip its experts and its share of the shared expert (5632 / 2 units; 20480 / 8), the gate
    (("N300", (1, 2)), "Qwen1.5-MoE-A2.7B-Chat", "performance"),
    (("T3K", (2, 4)), "Qwen2-57B-A14B", "performance_bfp4"),
    # 60 experts padded to 64 over 8 chips (zero experts, and a router bias that keeps them unselected)
    (("T3K", (1, 8)), "Qwen1.5-MoE-A2.7B-Chat", "bf16"),
    # multi-latent attention: its interleaved projections, each head's W_k / W_v as batched weights, two norms
    (("P150", (1, 1)), "Moonlight-16B-A3B-Instruct", "performance"),
], indirect=["target"])
def test_weight_estimate_is_what_the_allocator_places(target, name, profile, monkeypatch):
    """weight_bank_bytes against the DRAM every bank holds once the weights are placed (the RoPE tables, built
    next, are not weights)."""
    import tt_models.model as model

    seen = {}
    build = model.Transformer._rope_tables

    def rope_tables(self, kind):
        seen.setdefault("at", ttnn.get_memory_view(self.device, ttnn.BufferType.DRAM).total_bytes_allocated_per_bank)
        return build(self, kind)

    monkeypatch.setattr(model.Transformer, "_rope_tables", rope_tables)
    before = ttnn.get_memory_view(target, ttnn.BufferType.DRAM).total_bytes_allocated_per_bank
    cfg = find_checkpoint(name).hf_config()
    TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, target, max_batch_size=32, max_seq_len=256,
                                                           optimizations=profile, load_format="dummy")
    args = pad_mlp(ModelArgs.from_hf_config(cfg), tuple(target.shape))
    plan = plan_tensor_parallel(args, tuple(target.shape))
    prof = load_optimizations(load_model_overrides(cfg._name_or_path).profile_for(profile))
    dram = ttnn.get_memory_view(target, ttnn.BufferType.DRAM)
    g = target.compute_with_storage_grid_size()
    l1 = ttnn.get_memory_view(target, ttnn.BufferType.L1).total_bytes_per_bank
    need = weight_bank_bytes(args, plan, [layer_precision(prof, i) for i in range(args.n_layers)],
                             dtype_of(prof.precision("LM_HEAD")), dram.num_banks, (g.x, g.y), l1)
    assert need == seen["at"] - before


@pytest.mark.parametrize("target", [("N300", (1, 2))], indirect=True)
def test_gemma3_12b_bf16_is_refused_on_n300_before_any_weight_moves(target):
    """Its weights take 1,068,743,168 B of each DRAM bank of a chip (as placed), 219,712 B more than a bank's
    1,068,523,456 (the real ttnn ran out 219,712 B short: free 10,102,208 B for a 10,321,920 B strip)."""
    before = ttnn.get_memory_view(target, ttnn.BufferType.DRAM).total_bytes_allocated_per_bank
    with pytest.raises(UnsupportedModelError, match=r"the model does not fit a \(1, 2\) mesh: its weights take "
                                                    r"11\.944 GiB per chip with tensor parallel over 2 chips, a chip "
                                                    r"has 11\.942 GiB of DRAM free"):
        _gemma("gemma-3-12b-it", target, "bf16", layers=None)
    assert ttnn.get_memory_view(target, ttnn.BufferType.DRAM).total_bytes_allocated_per_bank == before
