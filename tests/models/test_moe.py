"""Mixture-of-experts families (Qwen3-MoE, Mixtral) on the simulator against HF on the same bf16 weights: last-token
prefill logits, then 32 traced greedy decode steps (routing chosen on the device at every step, the trace never
recaptured), the KV blocks scattered over the cache.

Reference profile (fp32 activations): PCC >= 0.999 at every step and HF's greedy tokens (token near-ties excused as
in test_families). Other profiles: PCC >= 0.99 at every step until one whose position HF's own router holds at a
near-tie (in some layer, its k-th and (k+1)-th expert logits closer than ROUTER_NEAR_TIE for the profile): the
profile's rounding may pick the other expert there, which replaces a whole expert MLP in that token's sum and,
through its K/V, moves every later step. As with a greedy near-tie (tests/vllm/conftest.check_against_hf), the rest
of the sequence is then not compared (it still decodes, traced); the tie is logged, and at least MIN_COMPARED steps
(the prefill and 3 decode steps) must have been compared.

The routing test shows the comparison catches a wrong router: the same checkpoint with one layer's router rows
permuted (experts mislabelled) or with one expert fewer per token falls below the reference threshold."""

import json
import logging
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.conftest import pcc
from tests.models.test_families import BATCH, BLOCK, MAX_SEQ, PCC_MIN, build, follow_hf
from tests.models.test_tensor_parallel import (
    PROMPTS,
    SLOTS,
    check_against_hf,
    check_reference_and_performance,
    generate,
    open_mesh,
)
from tests.models.test_tensor_parallel import build as tp_build
from tests.models.tiny import (
    MOE_FAMILIES,
    hf_config,
    hf_last_logits,
    load_hf,
    make_odd_experts_model,
    make_padded_model,
    make_tiny_model,
    make_wide_model,
)
from tt_models.backend import ttnn
from tt_models.model_args import ModelArgs, UnsupportedModelError

logger = logging.getLogger(__name__)
# k-th vs (k+1)-th router logit. HF's router logits here are O(1): bf16 activations move them by ~0.4%, bfloat8_b
# weights (performance) by more, as every projection before the router rounds its weights to 7-bit mantissas.
ROUTER_NEAR_TIE = {"reference": 0.0, "accuracy": 0.02, "bf16": 0.02, "performance": 0.05}
MIN_COMPARED = 4  # of the prefill and 32 decode steps


def _sigmoid_gaps(gate, choice: torch.Tensor, k: int) -> list[float]:
    """A sigmoid router's choice (score + bias) gaps in logit units: the k-th vs (k+1)-th expert's over the
    sigmoid's largest slope (1/4: both logits moving by e close it by at most e / 2, as a logit gap of 4x), and
    with DeepSeek-V3's group limit the topk_group-th vs next group's (a group scores its two best choices: both
    groups' four logits moving by e close it by at most e, as a logit gap of 2x)."""
    gaps = []
    groups, kept = getattr(gate, "num_group", 1), getattr(gate, "topk_group", 1)
    if kept < groups:
        score = torch.topk(choice.reshape(groups, -1), 2, dim=-1).values.sum(-1)
        v = torch.sort(score, descending=True).values
        gaps.append(2 * float(v[kept - 1] - v[kept]))
        order = torch.topk(score, kept).indices
        keep = torch.zeros(groups, dtype=torch.bool)
        keep[order] = True
        choice = choice.reshape(groups, -1)[keep].reshape(-1)  # the expert gap among the chosen groups
    v = torch.sort(choice, descending=True).values
    gaps.append(4 * float(v[k - 1] - v[k]))
    return gaps


@torch.no_grad()
def router_gap(hf, ids: list[int]) -> float:
    """The smallest gap, over HF's MoE layers, between the k-th and (k+1)-th router logit of the last position
    (sigmoid routers, GLM-4.5 / DeepSeek-V3: _sigmoid_gaps, in the same units)."""
    k = hf.config.num_experts_per_tok
    gates = [m for m in hf.modules() if hasattr(m, "e_score_correction_bias")]
    if gates:
        gaps: list[float] = []
        hooks = [g.register_forward_hook(lambda m, inp, out: gaps.extend(_sigmoid_gaps(
            m, torch.sigmoid(out[0].reshape(len(ids), -1)[-1].float()) + m.e_score_correction_bias, k)))
            for g in gates]
        try:
            hf(torch.tensor([ids]))
        finally:
            for h in hooks:
                h.remove()
        return min(gaps)
    out = hf(torch.tensor([ids]), output_router_logits=True)
    gaps = []
    for logits in out.router_logits:
        if logits is not None:
            v = torch.sort(logits.reshape(len(ids), -1)[-1].float(), descending=True).values
            gaps.append(float(v[k - 1] - v[k]))
    return min(gaps)


def compare_step(tt_logits, ref, hf, ids, profile, where) -> bool:
    """Whether the sequence can still be compared after this step (False: an excused router near-tie)."""
    got = pcc(tt_logits, ref)
    if got >= PCC_MIN[profile]:
        return True
    gap = router_gap(hf, ids)
    assert gap < ROUTER_NEAR_TIE[profile], f"{where}: PCC {got:.5f} (router gap {gap:.4g})"
    logger.warning("%s: PCC %.4f at a router near-tie (gap %.3g): the rest is not compared", where, got, gap)
    return False


@pytest.mark.parametrize("profile", ["reference", "accuracy", "performance", "bf16"])
@pytest.mark.parametrize("family", list(MOE_FAMILIES))
def test_prefill_and_decode_match_hf(family, profile, mesh_device, tiny_root):
    path = make_tiny_model(family, tiny_root)
    hf = load_hf(path)
    tt, kv = build(path, mesh_device, profile)
    compared, comparing = 0, True
    for where, logits, ref, ids in follow_hf(tt, kv, hf, profile, family):
        if comparing:
            comparing = compare_step(logits, ref, hf, ids, profile, where)
            compared += comparing
    assert compared >= MIN_COMPARED, f"only {compared} steps compared"
    assert tt.trace_captures == 1


@pytest.mark.parametrize("family", list(MOE_FAMILIES))
def test_moe_layers_free_what_they_allocate(family, mesh_device, tiny_root):
    """An eager prefill and decode step of every MoE family leave the device's DRAM and L1 as they found them (after
    a first call of each, which keeps its constants): an intermediate the layer forgets to free (a reshape that
    copies, e.g.) would pile up on a device step after step."""
    tt, kv = build(make_tiny_model(family, tiny_root), mesh_device, "performance")
    prompt = torch.arange(1, 46, dtype=torch.int32)[None]
    blocks = torch.arange(1, MAX_SEQ // BLOCK + 1, dtype=torch.int32)[None]
    tokens, pos = torch.zeros(BATCH, 1, dtype=torch.int32), torch.full((BATCH,), -1, dtype=torch.int32)
    pos[0] = 45
    table = torch.zeros(BATCH, MAX_SEQ // BLOCK, dtype=torch.int32)
    table[0] = blocks[0]

    def used() -> tuple[int, int]:
        return tuple(ttnn.get_memory_view(mesh_device, b).total_bytes_allocated_per_bank
                     for b in (ttnn.BufferType.DRAM, ttnn.BufferType.L1))

    def step() -> None:
        tt.prefill_forward(prompt, blocks, kv, [45])
        tt.decode_forward(tokens, pos, table, kv, enable_trace=False)

    step()
    before = used()
    step()
    assert used() == before


def _altered(src, dst, layer: int, permute: bool = False, k: int | None = None):
    """A copy of the checkpoint with layer `layer`'s router rows rolled by one expert (GPT-OSS: its router bias with
    them, GLM-4.5: its score correction, so that each expert's whole choice moves to its neighbour), or another
    top-k."""
    shutil.copytree(src, dst)
    if permute:
        f = dst / "model.safetensors"
        sd = load_file(f)
        name = next(n for n in sd if n.endswith((f"layers.{layer}.mlp.gate.weight",
                                                 f"layers.{layer}.block_sparse_moe.gate.weight",
                                                 f"layers.{layer}.mlp.router.weight")))
        bias = {"router.weight": ".bias", "gate.weight": ".e_score_correction_bias"}  # (GPT-OSS's, GLM-4.5's)
        names = [name] + [name.replace(".weight", b) for w, b in bias.items()
                          if name.endswith(w) and name.replace(".weight", b) in sd]
        for n in names:
            sd[n] = sd[n].roll(1, dims=0).contiguous()
        save_file(sd, f, metadata={"format": "pt"})
    if k is not None:
        cfg = json.loads((dst / "config.json").read_text())
        cfg["num_experts_per_tok"] = k
        (dst / "config.json").write_text(json.dumps(cfg))
    return dst


@pytest.mark.parametrize("family", ["qwen3_moe", "qwen2_moe", "mixtral", "gpt_oss", "glm4_moe"])
def test_a_wrong_router_fails_the_comparison(family, mesh_device, tiny_root, tmp_path):
    path = make_tiny_model(family, tiny_root)
    layer = 1 if family == "glm4_moe" else 0  # (GLM-4.5's first layer is dense)
    hf = load_hf(path)
    prompt = torch.randint(0, 512, (45,), generator=torch.Generator().manual_seed(1)).tolist()
    ref = hf_last_logits(hf, prompt)
    blocks = torch.arange(1, MAX_SEQ // BLOCK + 1, dtype=torch.int32)[None]
    k = hf.config.num_experts_per_tok

    def prefill_pcc(model_dir) -> float:
        tt, kv = build(model_dir, mesh_device, "reference")
        out = tt.prefill_forward(torch.tensor([prompt], dtype=torch.int32), blocks, kv, [len(prompt)])
        return pcc(out[0, 0], ref)

    assert prefill_pcc(path) >= PCC_MIN["reference"]
    assert prefill_pcc(_altered(path, tmp_path / "permuted", layer=layer, permute=True)) < PCC_MIN["reference"]
    assert prefill_pcc(_altered(path, tmp_path / "top-k", layer=layer, k=k - 1)) < PCC_MIN["reference"]


@pytest.mark.parametrize(("family", "shape"), [("qwen3_moe", (1, 2)), ("qwen3_moe", (1, 8)), ("mixtral", (1, 8)),
                                               ("qwen3_moe", (2, 4)), ("mixtral", (2, 4)), ("gpt_oss", (1, 8)),
                                               ("gpt_oss", (2, 4)), ("qwen2_moe", (1, 8)), ("qwen2_moe", (2, 4)),
                                               ("glm4_moe", (1, 8)), ("glm4_moe", (2, 4))])
def test_experts_split_over_a_mesh_match_hf(family, shape, tiny_root):
    """Expert parallel (attention tensor parallel): each chip holds its share of the experts (8 experts: 4 per chip
    on 1x2, one per chip on 1x8, Mixtral-8x7B's layout on a T3K; Qwen2-MoE's shared expert 24 units per chip, padded
    to a tile), greedy tokens equal HF's (reference, traced decode of two prompts together) and the performance
    profile's logits PCC >= 0.99."""
    path = make_wide_model(family, tiny_root)
    hf = load_hf(path)
    chips = shape[0] * shape[1]

    def split(a, plan, kv) -> None:
        assert plan.devices == chips and kv[0][0][0].device().get_num_devices() == chips

    with open_mesh(shape) as mesh:
        check_reference_and_performance(path, hf, mesh, f"{family} {shape}", split)


@pytest.mark.parametrize(("family", "experts", "shape", "dispatch"), [("qwen2_moe", 12, (1, 8), "reduce"),
                                                                      ("qwen2_moe", 12, (2, 4), "reduce"),
                                                                      ("gpt_oss", 10, (1, 8), "reduce"),
                                                                      ("qwen2_moe", 12, (1, 8), "all_to_all"),
                                                                      ("glm4_moe", 12, (1, 8), "reduce")])
def test_experts_the_chips_do_not_divide_are_padded(family, experts, shape, dispatch, tiny_root):
    """12 (GPT-OSS: 10) experts over 8 chips (Qwen1.5-MoE-A2.7B's 60 over a T3K, in miniature): padded to 16, two
    per chip, the extra ones with zero weights and a router logit of -1e30 (GPT-OSS: beside its own router bias; its
    last three chips hold only padding), so no token selects one; greedy tokens equal HF's (reference) and the
    performance profile's logits PCC >= 0.99, in both dispatch modes. (The 12-expert GPT-OSS misses 0.99 at one
    performance step on 1x2 and 1x4 as well, unpadded: a routing flip of that random model, not the padding.)"""
    path = make_odd_experts_model(family, tiny_root, experts)
    hf = load_hf(path)

    def split(a, plan, kv) -> None:
        assert (a.n_experts, a.experts_padded_from, plan.devices) == (16, experts, 8)

    with open_mesh(shape) as mesh:
        check_reference_and_performance(path, hf, mesh, f"{family} {shape} {experts} experts {dispatch}", split,
                                        expert_dispatch=dispatch)


def test_moe_layers_follow_the_config(tiny_root):
    args = ModelArgs.from_hf_config(hf_config(make_tiny_model("qwen3_moe", tiny_root)))
    # mlp_only_layers=[1]: layer 1 keeps the dense MLP of intermediate_size units.
    assert args.moe_layers == (True, False, True)
    assert (args.n_experts, args.experts_per_tok, args.moe_hidden_dim, args.norm_topk_prob) == (8, 2, 64, True)
    mixtral = ModelArgs.from_hf_config(hf_config(make_tiny_model("mixtral", tiny_root)))
    assert mixtral.moe_layers == (True, True) and mixtral.norm_topk_prob and mixtral.sliding_window == 48
    cfg = hf_config(make_tiny_model("qwen3_moe", tiny_root))
    cfg.shared_expert_intermediate_size = 128
    with pytest.raises(UnsupportedModelError, match="shared experts"):
        ModelArgs.from_hf_config(cfg)
    qwen2 = ModelArgs.from_hf_config(hf_config(make_tiny_model("qwen2_moe", tiny_root)))
    assert (qwen2.shared_expert_dim, qwen2.qkv_bias, qwen2.norm_topk_prob, qwen2.experts_per_tok) == (192, True,
                                                                                                      False, 2)
    glm = ModelArgs.from_hf_config(hf_config(make_tiny_model("glm4_moe", tiny_root)))
    assert glm.moe_layers == (False, True, True)  # first_k_dense_replace=1
    assert (glm.router_scoring, glm.routed_scaling, glm.shared_expert_dim, glm.shared_expert_gated, glm.rotary_dim,
            glm.qk_norm, glm.qkv_bias, glm.o_bias) == ("sigmoid", 2.5, 64, False, 32, True, True, False)
    cfg = hf_config(make_tiny_model("glm4_moe", tiny_root))
    cfg.n_group, cfg.topk_group = 4, 2  # DeepSeek-V3's group-limited routing
    assert ModelArgs.from_hf_config(cfg).expert_groups == (4, 2)
    cfg.topk_group = 4  # every group kept: no limit
    assert ModelArgs.from_hf_config(cfg).expert_groups is None
    cfg.n_group = 3
    with pytest.raises(UnsupportedModelError, match="n_group=3, topk_group=4 with 8 experts"):
        ModelArgs.from_hf_config(cfg)


def _shared_altered(src, dst, layer: int, how: str):
    """A copy of the Qwen2-MoE checkpoint with layer `layer`'s shared expert gate negated (sigmoid(z) -> 1 -
    sigmoid(z)) or its down projection zeroed (no shared expert)."""
    shutil.copytree(src, dst)
    f = dst / "model.safetensors"
    sd = load_file(f)
    p = f"model.layers.{layer}.mlp."
    if how == "gate":
        sd[p + "shared_expert_gate.weight"] = (-sd[p + "shared_expert_gate.weight"]).contiguous()
    else:
        sd[p + "shared_expert.down_proj.weight"] = torch.zeros_like(sd[p + "shared_expert.down_proj.weight"])
    save_file(sd, f, metadata={"format": "pt"})
    return dst


def assert_each_alteration_is_seen(family, mesh_device, tiny_root, tmp_path, alter, hows) -> None:
    """The real tiny checkpoint's reference prefill matches HF's last-token logits; each altered copy
    (alter(src, dst, how)) matches its own HF but misses the real model's by more than the reference threshold."""
    path = make_tiny_model(family, tiny_root)
    prompt = torch.randint(0, 512, (45,), generator=torch.Generator().manual_seed(1)).tolist()
    ref = hf_last_logits(load_hf(path), prompt)
    blocks = torch.arange(1, MAX_SEQ // BLOCK + 1, dtype=torch.int32)[None]

    def prefill(model_dir) -> torch.Tensor:
        tt, kv = build(model_dir, mesh_device, "reference")
        return tt.prefill_forward(torch.tensor([prompt], dtype=torch.int32), blocks, kv, [len(prompt)])[0, 0]

    assert pcc(prefill(path), ref) >= PCC_MIN["reference"]
    for how in hows:
        altered = alter(path, tmp_path / how, how)
        got = prefill(altered)
        assert pcc(got, hf_last_logits(load_hf(altered), prompt)) >= PCC_MIN["reference"], how
        assert pcc(got, ref) < PCC_MIN["reference"], how


def test_qwen2_moe_shared_expert_and_its_gate_are_used(mesh_device, tiny_root, tmp_path):
    """The comparison with HF sees Qwen2-MoE's shared expert: the checkpoint with one layer's shared expert removed,
    or its gate negated, misses the real model's HF prefill logits by more than the reference threshold, while the
    real one matches (and each altered one matches its own HF)."""
    assert_each_alteration_is_seen("qwen2_moe", mesh_device, tiny_root, tmp_path,
                                   lambda src, dst, how: _shared_altered(src, dst, layer=0, how=how),
                                   ("gate", "removed"))


def _glm_altered(src, dst, how: str):
    """A copy of the GLM-4.5 checkpoint with every router's score correction zeroed ("bias"), its
    routed_scaling_factor 1 instead of 2.5 ("scaling"), its shared experts' down projections zeroed ("shared"), or
    RoPE on whole heads instead of half of each ("rope")."""
    shutil.copytree(src, dst)
    f, cfg_file = dst / "model.safetensors", dst / "config.json"
    sd, cfg = load_file(f), json.loads(cfg_file.read_text())
    for n in sd:
        if (how == "bias" and n.endswith("e_score_correction_bias")) or (
                how == "shared" and n.endswith("shared_experts.down_proj.weight")):
            sd[n] = torch.zeros_like(sd[n])
    if how == "scaling":
        cfg["routed_scaling_factor"] = 1.0
    if how == "rope":
        cfg["partial_rotary_factor"] = 1.0
        cfg["rope_parameters"] = dict(cfg["rope_parameters"], partial_rotary_factor=1.0)
    save_file(sd, f, metadata={"format": "pt"})
    cfg_file.write_text(json.dumps(cfg))
    return dst


def test_glm4_moe_routing_shared_experts_and_partial_rope_are_used(mesh_device, tiny_root, tmp_path):
    """The comparison with HF sees each of GLM-4.5's own parts: the checkpoint without its routers' score
    corrections, with another routed_scaling_factor, without its shared experts, or with RoPE on whole heads misses
    the real model's HF prefill logits by more than the reference threshold, while the real one matches (and each
    altered one matches its own HF)."""
    assert_each_alteration_is_seen("glm4_moe", mesh_device, tiny_root, tmp_path, _glm_altered,
                                   ("bias", "scaling", "shared", "rope"))


def test_deepseek_v3_group_limits_are_used(mesh_device, tiny_root, tmp_path):
    """The tiny GLM-4.5 with DeepSeek-V3's group limit (glm4_moe_grouped, held against HF's router, which implements
    it, in every profile above and on meshes below): the same checkpoint without the limit, followed along HF's
    greedy tokens of the limited model (prefill and 32 decode steps), misses HF's logits at some step."""
    path = make_tiny_model("glm4_moe_grouped", tiny_root)
    unlimited = tmp_path / "unlimited"
    shutil.copytree(path, unlimited)
    cfg = json.loads((unlimited / "config.json").read_text())
    (unlimited / "config.json").write_text(json.dumps({**cfg, "n_group": 1, "topk_group": 1}))
    hf = load_hf(path)

    def worst_pcc(model_dir) -> float:
        """The lowest PCC against HF along its greedy tokens; -1 where the model picks a greedy token HF does not
        (follow_hf's assertion, short of a near-tie)."""
        tt, kv = build(model_dir, mesh_device, "reference")
        worst = 1.0
        try:
            for _, logits, ref, _ in follow_hf(tt, kv, hf, "reference", model_dir.name):
                worst = min(worst, pcc(logits, ref))
        except AssertionError as e:
            if "TT token" not in str(e):
                raise
            return -1.0
        return worst

    assert worst_pcc(path) >= PCC_MIN["reference"]
    assert worst_pcc(unlimited) < PCC_MIN["reference"]


def test_group_limited_experts_split_over_a_mesh_in_whole_groups(tiny_root, tmp_path):
    """Over 8 chips each chip holds 2 experts, one whole group (DeepSeek-V3's layout on a T3K): greedy tokens equal
    HF's (reference) and performance PCC >= 0.99, on 1x8 and 2x4. With 4 groups of 4 experts (4 per chip on 1x4,
    so whole groups) the same holds; over 8 chips a chip would hold half a group: refused."""
    path = make_wide_model("glm4_moe_grouped", tiny_root)
    hf = load_hf(path)
    for shape in ((1, 8), (2, 4)):
        with open_mesh(shape) as mesh:
            check_reference_and_performance(path, hf, mesh, f"grouped {shape}", lambda a, plan, kv: None)
    coarse = tmp_path / "coarse"
    shutil.copytree(path, coarse)
    cfg = json.loads((coarse / "config.json").read_text())
    (coarse / "config.json").write_text(json.dumps({**cfg, "n_group": 4, "topk_group": 2}))
    with open_mesh((1, 8)) as mesh, pytest.raises(UnsupportedModelError, match="do not hold whole groups of 4"):
        tp_build(coarse, mesh, "reference")


def test_glm4_moe_leaves_its_multi_token_prediction_layer_unread(mesh_device, tiny_root, tmp_path):
    """GLM-4.5 checkpoints store a multi-token-prediction layer after the model's own (num_nextn_predict_layers: 1,
    GLM-4.5-Air's layer 46): like HF, the model loads without it, its output the checkpoint's without that layer."""
    src = make_tiny_model("glm4_moe", tiny_root)
    dst = tmp_path / "with_mtp"
    shutil.copytree(src, dst)
    sd = load_file(dst / "model.safetensors")
    n = hf_config(src).num_hidden_layers
    mtp = {k.replace(f"layers.{n - 1}.", f"layers.{n}."): v.clone() for k, v in sd.items() if f"layers.{n - 1}." in k}
    mtp[f"model.layers.{n}.eh_proj.weight"] = torch.randn(128, 256)
    save_file({**sd, **mtp}, dst / "model.safetensors", metadata={"format": "pt"})
    cfg = json.loads((dst / "config.json").read_text())
    (dst / "config.json").write_text(json.dumps({**cfg, "num_nextn_predict_layers": 1}))
    prompt = torch.randint(0, 512, (45,), generator=torch.Generator().manual_seed(1)).tolist()
    blocks = torch.arange(1, MAX_SEQ // BLOCK + 1, dtype=torch.int32)[None]
    tt, kv = build(dst, mesh_device, "reference")
    got = tt.prefill_forward(torch.tensor([prompt], dtype=torch.int32), blocks, kv, [len(prompt)])[0, 0]
    assert pcc(got, hf_last_logits(load_hf(src), prompt)) >= PCC_MIN["reference"]


# GPT-OSS's tiny model draws its sinks near 1.0 (as every 1-D parameter), where HF's logits with and without them
# agree to PCC 0.99999: its q/k biases put the attention logits near 8, so a sink of 1 takes almost no probability.
# These per-head sinks (bf16-exact, and exact divided by the softmax scale 1/8) sit among the logits: HF's last-token
# logits with them vs without any sink: PCC 0.95 on the 150-token prompt below.
LARGE_SINKS = ([10.0, 12.0, 9.0, 11.0], [11.0, 9.0, 12.0, 10.0])


def _with_sinks(src, dst, per_layer):
    """A copy of the GPT-OSS checkpoint with each layer's sinks (one logit per head) replaced."""
    shutil.copytree(src, dst)
    f = dst / "model.safetensors"
    sd = load_file(f)
    for layer, values in enumerate(per_layer):
        name = f"model.layers.{layer}.self_attn.sinks"
        sd[name] = torch.tensor(values, dtype=sd[name].dtype)
    save_file(sd, f, metadata={"format": "pt"})
    return dst


def _sink_prompt() -> list[int]:
    # Longer than the sliding window (48) plus a chunk: the later chunks' windows start inside the cached prefix.
    return torch.randint(0, 512, (150,), generator=torch.Generator().manual_seed(5)).tolist()


def _hf_without_sinks(hf, ids: list[int]) -> torch.Tensor:
    """HF's last-token logits with every sink at -inf (exp(-inf) = 0: the softmax of the Q.K logits alone)."""
    with torch.no_grad():
        saved = [layer.self_attn.sinks.clone() for layer in hf.model.layers]
        for layer in hf.model.layers:
            layer.self_attn.sinks.fill_(float("-inf"))
        out = hf_last_logits(hf, ids)
        for layer, s in zip(hf.model.layers, saved, strict=True):
            layer.self_attn.sinks.copy_(s)
    return out


def _check_chunked_paths(tt, kv, hf, p: list[int], profile: str = "reference") -> None:
    """The prompt prefilled whole, as prefix-cache hits of 2 and 4 cached blocks, and in 64-token chunks: each
    matches HF (PCC_MIN[profile]) and the whole prefill (>= 0.9999: the whole prefill attends to K/V as the cache
    rounds them, as the chunks do); then 3 traced decode steps from the chunked prefill's cache match HF (as
    compare_step: a router near-tie excused outside `reference`)."""
    ref = hf_last_logits(hf, p)
    floor = PCC_MIN[profile]
    width = MAX_SEQ // BLOCK
    whole_table = (torch.arange(width) + 1).to(torch.int32)[None]
    whole = tt.prefill_forward(torch.tensor([p], dtype=torch.int32), whole_table, kv, [len(p)])[0, 0]
    assert pcc(whole, ref) >= floor, "whole prompt"

    for start in (64, 128):  # prefix-cache hits: the first start / 32 blocks are the whole prefill's
        table = whole_table.clone()
        table[0, start // BLOCK:] = torch.arange(width - start // BLOCK) + 40
        hit = tt.prefill_forward(torch.tensor([p], dtype=torch.int32), table, kv, [len(p)], start_pos=[start])[0, 0]
        assert pcc(hit, ref) >= floor, f"prefix hit at {start}"
        assert pcc(hit, whole) >= 0.9999, f"prefix hit at {start} vs whole prefill"

    tt.max_prefill_chunk = 64  # 64 + 64 + 22: the last two through chunked SDPA
    chunk_table = (torch.arange(width) + 20).to(torch.int32)[None]  # blocks 20..27, apart from the others
    chunked = tt.prefill_forward(torch.tensor([p], dtype=torch.int32), chunk_table, kv, [len(p)])[0, 0]
    assert pcc(chunked, ref) >= floor, "chunked prefill"
    assert pcc(chunked, whole) >= 0.9999, "chunked vs whole prefill"

    ids, slot = p + [int(ref.argmax())], 1
    page_table = torch.zeros(BATCH, width, dtype=torch.int32)
    page_table[slot] = chunk_table[0]
    for step in range(3):
        tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
        tokens[slot] = ids[-1]
        pos = torch.full((BATCH,), -1, dtype=torch.int32)
        pos[slot] = len(ids) - 1
        out = tt.decode_forward(tokens, pos, page_table, kv, enable_trace=True)[slot, 0]
        step_ref = hf_last_logits(hf, ids)
        if not compare_step(out, step_ref, hf, ids, profile, f"decode step {step}"):
            break
        ids.append(int(step_ref.argmax()))


@pytest.mark.parametrize("profile", ["reference", "performance"])
@pytest.mark.parametrize("sinks", ["initialized", "large"])
def test_gpt_oss_chunked_prefill_and_prefix_hits_match_hf(sinks, profile, mesh_device, tiny_root, tmp_path):
    """GPT-OSS prompts through chunked SDPA over the paged cache (each chunk's attention_sink joins its softmax as
    in the unchunked op), checked by _check_chunked_paths. With `large` sinks (HF without them is more than the
    threshold away, asserted here), a path that dropped or misplaced them would miss HF."""
    path = make_tiny_model("gpt_oss", tiny_root)
    if sinks == "large":
        path = _with_sinks(path, tmp_path / "large_sinks", LARGE_SINKS)
    hf = load_hf(path)
    p = _sink_prompt()
    if sinks == "large":
        assert pcc(_hf_without_sinks(hf, p), hf_last_logits(hf, p)) < PCC_MIN["performance"]
    tt, kv = build(path, mesh_device, profile)
    _check_chunked_paths(tt, kv, hf, p, profile)


# The widened tiny GPT-OSS (8 heads, one per chip of a T3K): with HF's q/k biases its attention logits sit higher
# than the 4-head model's, so its sinks that matter are higher too (HF with vs without them: PCC 0.94).
WIDE_SINKS = ([12.0, 14.0, 11.0, 13.0, 13.0, 11.0, 14.0, 12.0], [13.0, 11.0, 14.0, 12.0, 12.0, 14.0, 11.0, 13.0])


@pytest.mark.parametrize("shape", [(1, 8), (2, 4)])
def test_gpt_oss_chunked_prefill_with_sinks_split_over_a_mesh_matches_hf(shape, tiny_root, tmp_path):
    """Expert parallel with attention tensor parallel: each chip's chunked SDPA takes the sinks of its own Q heads
    (one head per chip on 1x8, heads split over the 2 rows of 2x4). Chunked prefill, prefix hits and decode match HF
    as on one chip (_check_chunked_paths), with per-head sinks that matter."""
    path = _with_sinks(make_wide_model("gpt_oss", tiny_root), tmp_path / "wide_large_sinks", WIDE_SINKS)
    hf = load_hf(path)
    p = _sink_prompt()
    assert pcc(_hf_without_sinks(hf, p), hf_last_logits(hf, p)) < PCC_MIN["performance"]
    with open_mesh(shape) as mesh:
        tt, kv = tp_build(path, mesh, "reference")  # each chip's cache its own KV heads
        assert tt.model.plan.devices == shape[0] * shape[1]
        _check_chunked_paths(tt, kv, hf, p)
        tt.release()


def test_gpt_oss_sinks_are_used(mesh_device, tiny_root, tmp_path):
    """The comparison above sees the sinks: with the large sinks, HF's logits without any sink, and the simulator's
    from the same checkpoint with its sinks zeroed, both miss HF's by more than the reference threshold (and the
    performance one), while the simulator with the sinks matches it."""
    path = _with_sinks(make_tiny_model("gpt_oss", tiny_root), tmp_path / "large_sinks", LARGE_SINKS)
    hf = load_hf(path)
    p = _sink_prompt()
    ref = hf_last_logits(hf, p)
    assert pcc(_hf_without_sinks(hf, p), ref) < PCC_MIN["performance"]

    blocks = (torch.arange(MAX_SEQ // BLOCK) + 1).to(torch.int32)[None]

    def prefill(model_dir) -> torch.Tensor:
        tt, kv = build(model_dir, mesh_device, "reference")
        return tt.prefill_forward(torch.tensor([p], dtype=torch.int32), blocks, kv, [len(p)])[0, 0]

    assert pcc(prefill(path), ref) >= PCC_MIN["reference"]
    zeroed = _with_sinks(path, tmp_path / "zero_sinks", [[0.0] * 4] * len(LARGE_SINKS))
    assert pcc(prefill(zeroed), ref) < PCC_MIN["performance"]


@pytest.mark.parametrize("profile", ["reference", "performance"])
def test_gpt_oss_clamped_swiglu_beyond_its_limit_matches_hf(profile, mesh_device, tiny_root, tmp_path):
    """GPT-OSS clamps the expert gate at swiglu_limit (7.0) from above and up to [-7, 7]. The tiny model's gate/up
    activations stay within +-3, so there the clamp never acts; with the experts' gate_up_proj scaled by 8
    (bf16-exact) a sixth of the selected experts' gate and up values lie beyond the limit on either side. HF
    without the clamp then misses HF with it (PCC ~0.6), and the simulator still matches HF with it: prefill and
    32 traced decode steps (reference PCC >= 0.999 and HF's greedy tokens; performance >= 0.99 up to a router
    near-tie, as test_prefill_and_decode_match_hf)."""
    path = tmp_path / "gpt_oss_gate_up_x8"
    shutil.copytree(make_tiny_model("gpt_oss", tiny_root), path)
    sd = load_file(path / "model.safetensors")
    for name in [n for n in sd if n.endswith("experts.gate_up_proj")]:
        sd[name] = (sd[name] * 8).contiguous()
    save_file(sd, path / "model.safetensors", metadata={"format": "pt"})
    hf = load_hf(path)
    limit = hf.config.swiglu_limit
    assert limit == 7.0

    seen = []
    for layer in hf.model.layers:  # the experts' pre-clamp [tokens, 2 * intermediate] (gate, up interleaved)
        apply_gate = layer.mlp.experts._apply_gate
        layer.mlp.experts._apply_gate = lambda gu, f=apply_gate: (seen.append(gu.detach().clone()), f(gu))[1]
    prompt = torch.randint(0, 512, (45,), generator=torch.Generator().manual_seed(1)).tolist()  # follow_hf's
    ref = hf_last_logits(hf, prompt)
    gate = torch.cat([s[..., ::2].reshape(-1) for s in seen])
    up = torch.cat([s[..., 1::2].reshape(-1) for s in seen])
    assert (gate > limit).float().mean() > 0.1 and (up > limit).float().mean() > 0.1
    assert (up < -limit).float().mean() > 0.1
    for layer in hf.model.layers:
        del layer.mlp.experts._apply_gate  # back to the class's method
        layer.mlp.experts.limit = float("inf")
    assert pcc(hf_last_logits(hf, prompt), ref) < PCC_MIN["performance"]
    for layer in hf.model.layers:
        layer.mlp.experts.limit = limit

    tt, kv = build(path, mesh_device, profile)
    compared, comparing = 0, True
    for where, logits, step_ref, ids in follow_hf(tt, kv, hf, profile, "gpt_oss gate_up x8"):
        if comparing:
            comparing = compare_step(logits, step_ref, hf, ids, profile, where)
            compared += comparing
    assert compared >= MIN_COMPARED, f"only {compared} steps compared"


def _count_all_to_all(monkeypatch) -> dict[str, int]:
    """Counts the model's all_to_all_dispatch / all_to_all_combine calls."""
    calls = {"all_to_all_dispatch": 0, "all_to_all_combine": 0}
    for name in calls:
        real = getattr(ttnn, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(ttnn, name, counted)
    return calls


@pytest.mark.parametrize(("family", "shape"), [("qwen3_moe", (1, 2)), ("qwen3_moe_unnormed", (1, 2)),
                                               ("qwen3_moe", (1, 8)), ("mixtral", (1, 8)), ("gpt_oss", (1, 8)),
                                               ("qwen3_moe", (2, 4)), ("mixtral", (2, 4)), ("gpt_oss", (2, 4)),
                                               ("gpt_oss_padded", (1, 8)), ("gpt_oss_padded", (2, 4)),
                                               ("qwen2_moe", (1, 8)), ("glm4_moe", (1, 8)),
                                               ("glm4_moe_grouped", (1, 8))])
def test_experts_dispatched_all_to_all_match_hf(family, shape, tiny_root, monkeypatch):
    """expert_dispatch "all_to_all": each chip routes its share of the tokens, all_to_all_dispatch sends them to
    their experts' chips (along its row of chips; 2x4: each row's experts, the rows' shares summed down the
    columns), all_to_all_combine brings the k expert outputs home to be weighted and summed. Held as the default
    expert parallel path is (check_reference_and_performance: reference greedy tokens equal HF's at PCC >= 0.999
    every step, performance PCC >= 0.99), with the dispatched activations and expert outputs rounded to bf16;
    every MoE layer of every step calls both ops. _padded: hidden 480, which the chips do not split into whole tiles
    (the residual padded to 512: the dispatched rows carry the model's 480 columns, the experts' outputs and the
    combined rows the padded 512)."""
    padded = family.endswith("_padded")
    path = (make_padded_model if padded else make_wide_model)(family.removesuffix("_padded"), tiny_root)
    hf = load_hf(path)
    calls = _count_all_to_all(monkeypatch)
    chips = shape[0] * shape[1]

    def split(a, plan, kv) -> None:
        assert plan.devices == chips and kv[0][0][0].device().get_num_devices() == chips
        assert bool(plan.dim_pad) == padded

    with open_mesh(shape) as mesh:
        check_reference_and_performance(path, hf, mesh, f"{family} {shape} all_to_all", split,
                                        expert_dispatch="all_to_all")
    moe_layers = sum(ModelArgs.from_hf_config(hf_config(path)).moe_layers)
    # reference: 2 prefills + 3 traced decode steps (the trace replays its captured calls); performance: 1 + 2
    assert calls["all_to_all_dispatch"] == calls["all_to_all_combine"] >= moe_layers * 4


@pytest.mark.parametrize("profile", ["accuracy", "bf16"])
@pytest.mark.parametrize(("family", "shape"), [("qwen3_moe", (1, 8)), ("gpt_oss", (2, 4))])
def test_experts_dispatched_all_to_all_in_the_rounding_profiles_match_hf(profile, family, shape, tiny_root):
    """expert_dispatch "all_to_all" in the accuracy and bf16 profiles (the others: the test above): the prefill and
    two traced decode steps on HF's history, each step's logits at PCC >= 0.99 with HF's and its argmax HF's
    (near-ties excused, check_greedy_step). One prompt, small: the path (dispatch, remap's sparsity, experts,
    combine) with these profiles' weights and activations."""
    path = make_wide_model(family, tiny_root)
    hf = load_hf(path)
    prompt = PROMPTS[0]
    with open_mesh(shape) as mesh:
        tt, kv = tp_build(path, mesh, profile, expert_dispatch="all_to_all")
        ids = list(prompt)
        for _ in range(2):  # HF's greedy continuation, fed to TT (each step then compares on the same history)
            ids.append(int(hf_last_logits(hf, ids).argmax()))
        got = generate(tt, kv, [prompt], SLOTS[:1], steps=2, follow=[ids[len(prompt):]])
        check_against_hf(hf, [prompt], got, PCC_MIN[profile], True, f"{family} {shape} all_to_all {profile}")
        assert tt.trace_captures == 1
        tt.release()


@pytest.mark.parametrize("shape", [(1, 8), (2, 4)])
def test_all_to_all_dispatch_errors_fail_the_comparison(shape, tiny_root, monkeypatch):
    """The comparison sees the dispatch path: with one expert per chip, the same model with its expert mapping
    shifted by one chip (tokens run through their experts' neighbours), with the sparse_matmul sparsity that
    moe_expert_token_remap gives for that shifted mapping (each chip skips the blocks its own expert needs), or
    with the combined expert outputs summed unweighted misses HF's prefill logits by more than the reference
    threshold (NaN counts as a miss), while the right path matches."""
    from tt_models.layers.moe import MoE

    path = make_wide_model("qwen3_moe", tiny_root)
    hf = load_hf(path)
    prompt = torch.randint(0, 512, (45,), generator=torch.Generator().manual_seed(1)).tolist()
    ref = hf_last_logits(hf, prompt)
    blocks = torch.arange(1, MAX_SEQ // BLOCK + 1, dtype=torch.int32)[None]

    with open_mesh(shape) as mesh:
        def prefill_pcc(label: str, alter=None) -> float:
            tt, kv = tp_build(path, mesh, "reference", expert_dispatch="all_to_all")
            if alter is not None:
                alter(tt)
            out = tt.prefill_forward(torch.tensor([prompt], dtype=torch.int32), blocks, kv, [len(prompt)])
            tt.release()
            got = pcc(out[0, 0], ref)
            logger.info("all_to_all %s, %s: prefill PCC %.5f", shape, label, got)
            return got

        def shift_mapping(tt) -> None:
            for layer in tt.model.layers:
                if isinstance(layer.mlp, MoE):
                    m = layer.mlp
                    wrong = torch.eye(m.chips, dtype=torch.int32).roll(1, dims=1).repeat_interleave(m.local, dim=0)
                    m.expert_mapping = ttnn.from_torch(wrong.reshape(1, 1, m.n_experts, m.chips), ttnn.uint16,
                                                       layout=ttnn.ROW_MAJOR_LAYOUT, device=mesh,
                                                       mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))

        assert prefill_pcc("as built") >= PCC_MIN["reference"]
        assert not prefill_pcc("mapping shifted", shift_mapping) >= PCC_MIN["reference"]
        real_remap = ttnn.moe_expert_token_remap

        def sparsity_of_the_neighbour(topk, mapping, meta, **kwargs):
            # the sparsity of the expert mapping shifted by one chip (dispatch and combine keep the right one)
            experts, chips = mapping.shape[-2], mapping.shape[-1]
            wrong = torch.eye(chips, dtype=torch.int32).roll(1, dims=1).repeat_interleave(experts // chips, dim=0)
            shifted = ttnn.from_torch(wrong.reshape(1, 1, experts, chips), ttnn.uint16, layout=ttnn.ROW_MAJOR_LAYOUT,
                                      device=mesh, mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
            return real_remap(topk, shifted, meta, **kwargs)

        monkeypatch.setattr(ttnn, "moe_expert_token_remap", sparsity_of_the_neighbour)
        assert not prefill_pcc("sparsity shifted", None) >= PCC_MIN["reference"]
        monkeypatch.setattr(ttnn, "moe_expert_token_remap", real_remap)
        real_top_k = MoE._top_k

        def unweighted(self, x):
            indices, weights = real_top_k(self, x)
            return indices, ttnn.add(ttnn.mul(weights, 0.0), 1.0)

        monkeypatch.setattr(MoE, "_top_k", unweighted)
        assert not prefill_pcc("unweighted") >= PCC_MIN["reference"]


def test_expert_dispatch_is_an_option(tiny_root):
    """additional_config["tt"]["expert_dispatch"] takes "reduce" (the default) or "all_to_all"; the model refuses
    anything else at load."""
    from generator_vllm import TT_CLASSES
    from vllm_patches.tt_config import TTConfig

    assert TTConfig.from_additional_config({}).expert_dispatch == "reduce"
    assert TTConfig.from_additional_config({"tt": {"expert_dispatch": "all_to_all"}}).expert_dispatch == "all_to_all"
    with pytest.raises(ValueError, match="expert_dispatch"):
        TTConfig.from_additional_config({"tt": {"expert_dispatch": "alltoall"}})
    cfg = hf_config(make_wide_model("qwen3_moe", tiny_root))
    with open_mesh((1, 2)) as mesh, pytest.raises(UnsupportedModelError, match="expert_dispatch"):
        TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh, max_batch_size=4, max_seq_len=MAX_SEQ,
                                                               expert_dispatch="alltoall")
