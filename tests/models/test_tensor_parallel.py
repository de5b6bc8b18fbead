"""Tensor parallelism on simulated meshes (tt_models/parallel.py): every family against HF on 1x2 and 1x8 meshes
and two ways (tt_transformers' Galaxy split) on 2x4 and 8x4, KV heads replicated when there are fewer than chips,
TP x DP on a 2x4 mesh, trace replay equal to eager, skipped reductions detected by the numbers, the weight cache
keyed by the split, and refusals of what does not divide or fit.

The tiny families have 4 heads; here each is widened to 8 heads (hidden 256, MLP 512) so that 8 chips get a head
each, keeping the family's KV heads (llama_gqa 2, mistral_window 1, qwen2_bias 2, qwen3_qknorm 2: fewer than 8
chips, so replicated; llama_mha_tied_llama3 8). Shapes stay tiny and runs short: each op runs once per chip."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from transformers import LlamaConfig

from generator_vllm import TT_CLASSES, TTLlamaForCausalLM
from tests.conftest import pcc
from tests.models.tiny import (
    FAMILIES,
    ONE_CHIP_FAMILIES,
    check_greedy_step,
    hf_config,
    hf_last_logits,
    load_hf,
    make_padded_model,
    make_tiny_model,
    make_wide_model,
)
from tt_models.backend import ttnn
from tt_models.data_parallel import DataParallel
from tt_models.model_args import ModelArgs, UnsupportedModelError
from tt_models.parallel import pad_mlp, plan_tensor_parallel

BATCH, BLOCK, NUM_BLOCKS, MAX_SEQ = 4, 32, 64, 256
WIDTH = MAX_SEQ // BLOCK
MESHES = {"1x2": (1, 2), "1x8": (1, 8)}
MESH_FAMILIES = [f for f in FAMILIES if f not in ONE_CHIP_FAMILIES]
PROMPTS = [list(range(7, 52)), list(range(300, 333))]
SLOTS = [1, 3]


@contextlib.contextmanager
def open_mesh(shape: tuple[int, int]):
    """A mesh opened as MESH_DEVICE opens one: the 1-D fabric the collectives need, chosen before it opens."""
    ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
    dev = ttnn.open_mesh_device(ttnn.MeshShape(*shape), trace_region_size=1 << 24)
    try:
        yield dev
    finally:
        ttnn.close_mesh_device(dev)
        ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


def build(path: Path, mesh, profile: str, batch: int = BATCH, dp: int = 1, expert_dispatch: str = "reduce"):
    cfg = hf_config(path)
    tt = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh, max_batch_size=batch, max_seq_len=MAX_SEQ,
                                                               tt_data_parallel=dp, optimizations=profile,
                                                               expert_dispatch=expert_dispatch)
    a = tt.model.args
    # NUM_BLOCKS on each data-parallel replica: the ids are split among them (tt_models/data_parallel.py).
    kv = tt.allocate_kv_cache((NUM_BLOCKS * dp, tt.kv_cache_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    return tt, kv


def page_table(batch: int, slots: list[int], dp: int = 1) -> torch.Tensor:
    """Each slot's blocks, from its replica's share of the ids when dp > 1."""
    table = torch.zeros(batch, WIDTH, dtype=torch.int32)
    for i, s in enumerate(slots):
        table[s] = torch.arange(WIDTH) + 1 + i * WIDTH + s // (batch // dp) * NUM_BLOCKS
    return table


def generate(tt, kv, prompts: list[list[int]], slots: list[int], steps: int, batch: int = BATCH,
             enable_trace: bool = True, follow: list[list[int]] | None = None) -> list[list[torch.Tensor]]:
    """Prefill each prompt into its slot, then decode them together. Each step feeds the token in `follow` (the
    reference's choice) when given, else TT's own argmax. Returns each prompt's logits per step."""
    table = page_table(batch, slots, len(tt.replicas) if isinstance(tt, DataParallel) else 1)
    width = max(len(p) for p in prompts)
    tokens = torch.zeros(len(prompts), width, dtype=torch.int32)
    for i, p in enumerate(prompts):
        tokens[i, : len(p)] = torch.tensor(p)
    logits = tt.prefill_forward(tokens, table[slots], kv, [len(p) for p in prompts], empty_slots=slots)
    out = [[logits[i, 0]] for i in range(len(prompts))]
    for step in range(steps):
        tok = torch.zeros(batch, 1, dtype=torch.int32)
        pos = torch.full((batch,), -1, dtype=torch.int32)
        for i, s in enumerate(slots):
            tok[s] = follow[i][step] if follow else int(out[i][-1].argmax())
            pos[s] = len(prompts[i]) + step
        res = tt.decode_forward(tok, pos, table, kv, enable_trace=enable_trace)
        for i, s in enumerate(slots):
            out[i].append(res[s, 0])
    return out


def check_against_hf(hf, prompts, got, pcc_min: float, greedy: bool, where: str) -> list[list[int]]:
    """Each step's logits against HF's on the same history; with greedy, TT's argmax must be HF's (near-ties
    excused). Returns the tokens fed (HF's choices)."""
    fed = []
    for i, prompt in enumerate(prompts):
        ids, toks = list(prompt), []
        for step, logits in enumerate(got[i]):
            ref = hf_last_logits(hf, ids)
            assert pcc(logits, ref) >= pcc_min, f"{where} prompt {i} step {step}: pcc {pcc(logits, ref):.5f}"
            nxt = check_greedy_step(logits, ref, f"{where} prompt {i} step {step}") if greedy else int(ref.argmax())
            ids.append(nxt)
            toks.append(nxt)
        fed.append(toks)
    return fed


@pytest.mark.parametrize("mesh_name", list(MESHES))
@pytest.mark.parametrize("family", MESH_FAMILIES)
def test_every_family_matches_hf_on_a_mesh(family, mesh_name, tiny_root):
    """Reference profile: greedy tokens equal HF's over two prompts decoded together (traced); performance profile
    (the default): logits PCC >= 0.99 on HF's history."""
    path = make_wide_model(family, tiny_root)
    hf = load_hf(path)
    shape = MESHES[mesh_name]
    n = shape[1]

    def split(a, plan, kv) -> None:
        assert plan.devices == n and plan.n_heads == a.n_heads // n
        assert plan.n_kv_heads == max(1, a.n_kv_heads // n)
        assert kv[0][0][0].device().get_num_devices() == n

    with open_mesh(shape) as mesh:
        check_reference_and_performance(path, hf, mesh, f"{family} {mesh_name}", split)


def check_reference_and_performance(path: Path, hf, mesh, where: str, check_split, batch: int = BATCH,
                                    slots: list[int] = SLOTS, expert_dispatch: str = "reduce") -> None:
    """Reference profile: greedy tokens equal HF's over two prompts decoded together (traced, captured once), after
    check_split(args, plan, kv) of the model's split; each chip's cache holds its own KV heads only. Performance
    profile: logits PCC >= 0.99 on HF's history. expert_dispatch: the MoE layers' (generator_vllm)."""
    tt, kv = build(path, mesh, "reference", batch=batch, expert_dispatch=expert_dispatch)
    a, plan = tt.model.args, tt.model.plan
    check_split(a, plan, kv)
    assert tuple(kv[0][0][0].shape) == (NUM_BLOCKS, plan.n_kv_heads, BLOCK, a.head_dim)
    got = generate(tt, kv, PROMPTS, slots, steps=3, batch=batch)
    follow = check_against_hf(hf, PROMPTS, got, 0.999, True, f"{where} reference")
    assert tt.trace_captures == 1
    tt.release()

    tt, kv = build(path, mesh, "performance", batch=batch, expert_dispatch=expert_dispatch)
    got = generate(tt, kv, PROMPTS[:1], slots[:1], steps=2, follow=follow[:1], batch=batch)
    check_against_hf(hf, PROMPTS[:1], [got[0]], 0.99, False, f"{where} performance")
    tt.release()


@pytest.mark.parametrize("make", [make_wide_model, make_padded_model], ids=["wide", "padded"])
@pytest.mark.parametrize("mesh_name", list(MESHES))
def test_distributed_norm_prefill_matches_hf(mesh_name, make, tiny_root, monkeypatch):
    """The distributed rms_norm (per-chip stats, all_gather of the stats, the norm with each chip's columns of the
    weight, all_gather of the normed columns), which tt_transformers runs for prefill above dim 4096, here forced on
    the tiny model: greedy tokens still equal HF's (reference profile, prefill and traced decode), and the model
    really ran it (each prefill norm, final norm excepted, calls rms_norm_pre_all_gather once)."""
    import tt_models.parallel as parallel_mod

    monkeypatch.setattr(parallel_mod, "DISTRIBUTED_NORM_ABOVE_DIM", 0)
    calls = []
    real_pre = ttnn.rms_norm_pre_all_gather

    def counted(*args, **kwargs):
        calls.append(1)
        return real_pre(*args, **kwargs)

    monkeypatch.setattr(ttnn, "rms_norm_pre_all_gather", counted)
    # padded: hidden 480 over the chips is not whole tiles: the stats of the zero-padded residual, epsilon and gamma
    # scaled (tt_models/parallel.py), and the gathered output's padding sliced off
    path = make("qwen3_qknorm", tiny_root)
    hf = load_hf(path)
    with open_mesh(MESHES[mesh_name]) as mesh:
        tt, kv = build(path, mesh, "reference")
        assert tt.model.plan.distributed_norm("prefill") and not tt.model.plan.distributed_norm("decode")
        assert bool(tt.model.plan.dim_pad) == (make is make_padded_model)
        got = generate(tt, kv, PROMPTS, SLOTS, steps=2)
        check_against_hf(hf, PROMPTS, got, 0.999, True, f"distributed norm {mesh_name}")
        assert len(calls) == 2 * tt.model.args.n_layers * len(PROMPTS)
        tt.release()


def test_residual_stream_is_fractured(tiny_root):
    """Each chip holds dim / N columns of the residual: its embedding table's columns, a decode residual sharded over
    the cores that divide dim / N (tt_transformers' DECODE_RESIDUAL_MEMCFG), while the norms' output is the whole
    width on the one-chip grid."""
    path = make_wide_model("llama_gqa", tiny_root)
    with open_mesh((1, 8)) as mesh:
        tt, _ = build(path, mesh, "performance")
        m, dim = tt.model, tt.model.args.dim
        assert m.plan.dim == dim // 8
        assert tuple(m.tok_embeddings.shape)[-1] == dim // 8
        d = m.layouts.decode
        for config, width in ((d.residual, dim // 8), (d.normed, dim)):
            spec = config.shard_spec
            assert spec.shape[1] * spec.grid.num_cores() == width
        tt.release()


def _per_chip(t) -> list[torch.Tensor]:
    n = t.device().get_num_devices()
    return list(ttnn.to_torch(t, mesh_composer=ttnn.ConcatMeshToTensor(t.device(), dim=0)).float().chunk(n, 0))


def test_fewer_kv_heads_than_chips_are_replicated(tiny_root):
    """llama_gqa's 2 KV heads on 8 chips: chips 0-3 read KV head 0 and 4-7 head 1 (their Q heads' group); each
    chip caches exactly its one head, so the caches agree within a group and differ across."""
    path = make_wide_model("llama_gqa", tiny_root)
    with open_mesh((1, 8)) as mesh:
        tt, kv = build(path, mesh, "reference")
        plan = tt.model.plan
        assert plan.kv_heads == ((0,),) * 4 + ((1,),) * 4 and tt.kv_cache_heads == 1
        tt.prefill_forward(torch.tensor([PROMPTS[0]], dtype=torch.int32), page_table(BATCH, [0])[:1], kv,
                           [len(PROMPTS[0])])
        for cache in kv[0][0]:  # layer 0's K and V
            chips = _per_chip(cache)
            assert all(torch.equal(chips[0], c) for c in chips[1:4])
            assert all(torch.equal(chips[4], c) for c in chips[5:])
            assert not torch.equal(chips[0], chips[4])
        tt.release()


def test_tensor_parallel_times_data_parallel_on_2x4(tiny_root):
    """A 2x4 mesh as 2 data-parallel replicas (one per row), each tensor parallel over its 4 chips: both replicas
    serve users at once and follow HF token for token."""
    path = make_wide_model("llama_gqa", tiny_root)
    hf = load_hf(path)
    with open_mesh((2, 4)) as mesh:
        dp, kv = build(path, mesh, "reference", batch=2 * BATCH, dp=2)
        assert isinstance(dp, DataParallel) and len(dp.replicas) == 2
        for r in dp.replicas:
            assert tuple(r.mesh_device.shape) == (1, 4) and r.model.plan.devices == 4
        assert dp.kv_cache_heads == 1  # 2 KV heads over 4 chips: replicated
        chips = [set(kv[r][0][0].device().get_device_ids()) for r in range(2)]
        assert not chips[0] & chips[1]
        slots = [1, 6]  # replica 0 and replica 1
        got = generate(dp, kv, PROMPTS, slots, steps=3, batch=2 * BATCH)
        check_against_hf(hf, PROMPTS, got, 0.999, True, "2x4")
        dp.release()


# --- 2-D tensor parallel (tt_transformers' Galaxy split) ---
MESHES_2D = {"2x4": (2, 4), "4x2": (4, 2)}
# 32 users, so that a row's chips each run attention for a share of them (8 each over 4 columns, 16 over 2); the two
# prompts in different shares (users 3 and 29: columns 0 and 3 of 4, 0 and 1 of 2).
BATCH_2D, SLOTS_2D = 32, [3, 29]


@contextlib.contextmanager
def galaxy_host(monkeypatch):
    """The simulated host with a Galaxy's 32 chips (it has 8 by default)."""
    import ttnn_sim.device as device_mod

    monkeypatch.setattr(device_mod, "SIM_NUM_DEVICES", 32)
    yield


@pytest.mark.parametrize("family", MESH_FAMILIES)
def test_every_family_matches_hf_two_ways_on_2x4(family, tiny_root):
    """2-D TP over all 8 chips of a 2x4 mesh (heads / MLP / vocabulary over the 2 rows, the residual over the 4
    columns): greedy tokens equal HF's (reference, traced) and logits PCC >= 0.99 (performance)."""
    path = make_wide_model(family, tiny_root)
    hf = load_hf(path)

    def split(a, plan, kv) -> None:
        assert plan.grid == (2, 4) and plan.devices == 8 and plan.n_heads == a.n_heads // 2
        assert plan.dim == a.dim // 4 and plan.hidden_dim == a.hidden_dim // 2 and plan.vocab == a.vocab_size // 2

    with open_mesh((2, 4)) as mesh:
        check_reference_and_performance(path, hf, mesh, f"{family} 2x4 two-way", split, BATCH_2D, SLOTS_2D)


def test_galaxy_8x4_matches_hf(tiny_root, monkeypatch):
    """A Galaxy's 8x4 mesh (32 chips): one Q head per row, llama_gqa's 2 KV heads each replicated over 4 rows, the
    residual over 4 columns; greedy tokens equal HF's, traced; eager equals traced."""
    path = make_wide_model("llama_gqa", tiny_root)
    hf = load_hf(path)
    with galaxy_host(monkeypatch), open_mesh((8, 4)) as mesh:
        tt, kv = build(path, mesh, "reference", batch=BATCH_2D)
        plan = tt.model.plan
        assert plan.grid == (8, 4) and plan.n_heads == 1 and tt.kv_cache_heads == 1
        assert plan.kv_heads == ((0,),) * 4 + ((1,),) * 4 and tt.model.attention_users == 8
        traced = generate(tt, kv, PROMPTS, SLOTS_2D, steps=2, batch=BATCH_2D)
        check_against_hf(hf, PROMPTS, traced, 0.999, True, "8x4 reference")
        tt.release()
        tt, kv = build(path, mesh, "reference", batch=BATCH_2D)
        eager = generate(tt, kv, PROMPTS, SLOTS_2D, steps=2, enable_trace=False, batch=BATCH_2D)
        for a, b in zip(eager, traced, strict=True):
            assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
        tt.release()


def test_data_parallel_replicas_split_two_ways(tiny_root):
    """A 4x2 mesh as 2 data-parallel replicas of 2x2 chips each (as a Galaxy serves an 8B model as replicas of 2-D
    submeshes): each replica splits its model two ways, both serve users at once and follow HF token for token."""
    path = make_wide_model("qwen2_bias", tiny_root)
    hf = load_hf(path)
    with open_mesh((4, 2)) as mesh:
        dp, kv = build(path, mesh, "reference", batch=2 * BATCH, dp=2)
        for r in dp.replicas:
            assert tuple(r.mesh_device.shape) == (2, 2) and r.model.plan.grid == (2, 2)
        got = generate(dp, kv, PROMPTS, [1, 6], steps=3, batch=2 * BATCH)
        check_against_hf(hf, PROMPTS, got, 0.999, True, "4x2 as 2 x (2x2)")
        dp.release()


@pytest.mark.parametrize("mesh_name", list(MESHES_2D))
def test_two_way_split_is_what_each_chip_holds(mesh_name, tiny_root):
    """Each chip of an R x C mesh holds: the embedding's dim / C columns (the same on every row), its row's heads'
    fused QKV over its dim / C input rows, WO over its row's heads into its dim / C columns, its row's MLP slice, its
    row's KV heads in the cache, and a fractured residual the norms never gather. Prefill writes a user's KV on every
    chip of a row; a decode step writes it only on the chip whose share of the users holds that user."""
    path = make_wide_model("llama_gqa", tiny_root)
    rows, cols = MESHES_2D[mesh_name]
    with open_mesh((rows, cols)) as mesh:
        tt, kv = build(path, mesh, "reference", batch=BATCH_2D)
        m, a = tt.model, tt.model.args
        hd, dim = a.head_dim, a.dim
        layer = m.layers[0]
        assert tuple(m.tok_embeddings.shape)[-1] == dim // cols
        q, k = a.n_heads // rows, max(1, a.n_kv_heads // rows)
        assert tuple(layer.attention.wqkv.shape)[-2:] == (dim // cols, (q + 2 * k) * hd)
        assert tuple(layer.attention.wo.shape)[-2:] == (q * hd, dim // cols)
        assert tuple(layer.mlp.w1.shape)[-2:] == (dim // cols, a.hidden_dim // rows)
        assert tuple(layer.mlp.w2.shape)[-2:] == (a.hidden_dim // rows, dim // cols)
        d = m.layouts.decode
        for config in (d.residual, d.normed):  # the norm's output stays as fractured as its input
            assert config.shard_spec.shape[1] * config.shard_spec.grid.num_cores() == dim // cols
        users = BATCH_2D // cols
        assert m.attention_users == users
        table = page_table(BATCH_2D, SLOTS_2D)
        tokens = torch.zeros(2, max(len(p) for p in PROMPTS), dtype=torch.int32)
        for i, p in enumerate(PROMPTS):
            tokens[i, : len(p)] = torch.tensor(p)
        tt.prefill_forward(tokens, table[SLOTS_2D], kv, [len(p) for p in PROMPTS], empty_slots=SLOTS_2D)
        embedding = _per_chip(m.tok_embeddings)
        assert all(torch.equal(embedding[c], embedding[r * cols + c]) for r in range(rows) for c in range(cols))
        for cache in kv[0][0]:  # layer 0's K and V
            chips = _per_chip(cache)
            for r in range(rows):
                row = chips[r * cols : (r + 1) * cols]
                assert all(torch.equal(row[0], c) for c in row[1:])
            # rows reading the same KV head (llama_gqa's 2 over 4 rows) cache the same values, other rows others
            groups = m.plan.kv_heads
            for r1 in range(rows):
                for r2 in range(rows):
                    same = torch.equal(chips[r1 * cols], chips[r2 * cols])
                    assert same == (groups[r1] == groups[r2]), (r1, r2)
        step = torch.zeros(BATCH_2D, 1, dtype=torch.int32)
        pos = torch.full((BATCH_2D,), -1, dtype=torch.int32)
        for slot, p in zip(SLOTS_2D, PROMPTS, strict=True):
            step[slot], pos[slot] = p[-1], len(p)
        tt.decode_forward(step, pos, table, kv, enable_trace=False)
        for cache in kv[0][0]:
            chips = _per_chip(cache)
            for slot, p in zip(SLOTS_2D, PROMPTS, strict=True):
                block, row = int(table[slot, len(p) // BLOCK]), len(p) % BLOCK
                owner = slot // users  # the column whose chips ran this user's attention
                for r in range(rows):
                    written = [chips[r * cols + c][block, :, row] for c in range(cols)]
                    others = [w for c, w in enumerate(written) if c != owner]
                    assert all(torch.equal(others[0], w) for w in others[1:])
                    assert not torch.equal(written[owner], others[0])
        tt.release()


def test_two_way_split_needs_the_row_reduction(tiny_root, monkeypatch):
    """QKV, w1, w3 and the LM head on a 2-D mesh multiply each chip's columns of the residual: their products are
    partial sums over a row. A model that skips that all_reduce along axis 1 is far from HF; the same model with it
    matches (so the family tests check that the sums happen)."""
    import tt_models.layers.attention as attention_mod
    import tt_models.layers.mlp as mlp_mod
    import tt_models.model as model_mod

    path = make_wide_model("llama_gqa", tiny_root)
    ref = hf_last_logits(load_hf(path), PROMPTS[0])
    tokens, lens = torch.tensor([PROMPTS[0]], dtype=torch.int32), [len(PROMPTS[0])]
    with open_mesh((2, 4)) as mesh:
        tt, kv = build(path, mesh, "reference")
        good = tt.prefill_forward(tokens, page_table(BATCH, [0])[:1], kv, lens)[0, 0]
        for mod in (attention_mod, mlp_mod, model_mod):
            monkeypatch.setattr(mod, "reduce_inputs", lambda x, plan, memory_config: x)
        bad = tt.prefill_forward(tokens, page_table(BATCH, [0])[:1], kv, lens)[0, 0]
        tt.release()
    assert pcc(good, ref) >= 0.999
    assert pcc(bad, ref) < 0.9


def test_trace_replay_equals_eager_on_a_mesh(tiny_root):
    path = make_wide_model("qwen2_bias", tiny_root)
    with open_mesh((1, 2)) as mesh:
        runs = []
        for trace in (False, True):
            tt, kv = build(path, mesh, "performance")
            runs.append(generate(tt, kv, PROMPTS, SLOTS, steps=4, enable_trace=trace))
            assert tt.trace_captures == int(trace)
            tt.release()
        for eager, traced in zip(*runs, strict=True):
            assert all(torch.equal(a, b) for a, b in zip(eager, traced, strict=True))


def test_skipping_the_reduction_gives_wrong_numbers(tiny_root, monkeypatch):
    """The row-parallel WO / w2 products are partial sums: a model that skips their reduce-scatter's sum (each chip
    keeps its own columns of its own partial, the scatter without the reduction) is far from HF, so the collectives'
    sums are what the family tests check."""
    import tt_models.layers.attention as attention_mod
    import tt_models.layers.mlp as mlp_mod

    path = make_wide_model("llama_gqa", tiny_root)
    hf = load_hf(path)
    ref = hf_last_logits(hf, PROMPTS[0])
    tokens, lens = torch.tensor([PROMPTS[0]], dtype=torch.int32), [len(PROMPTS[0])]

    def own_columns_unsummed(x, plan, memory_config):
        mesh, n = x.device(), plan.devices
        parts = ttnn.to_torch(x, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=0))  # chip d's partial at [d]
        w = parts.shape[-1] // n
        own = torch.cat([parts[d : d + 1, ..., d * w : (d + 1) * w] for d in range(n)])
        ttnn.deallocate(x)
        return ttnn.from_torch(own, x.dtype, layout=ttnn.TILE_LAYOUT, device=mesh, memory_config=memory_config,
                               mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=0))

    with open_mesh((1, 2)) as mesh:
        tt, kv = build(path, mesh, "reference")
        good = tt.prefill_forward(tokens, page_table(BATCH, [0])[:1], kv, lens)[0, 0]
        monkeypatch.setattr(attention_mod, "reduce_partials", own_columns_unsummed)
        monkeypatch.setattr(mlp_mod, "reduce_partials", own_columns_unsummed)
        bad = tt.prefill_forward(tokens, page_table(BATCH, [0])[:1], kv, lens)[0, 0]
    assert pcc(good, ref) >= 0.999
    assert pcc(bad, ref) < 0.9


def test_weight_cache_is_keyed_by_the_split(tiny_root, tmp_path, monkeypatch):
    """The same checkpoint converted for 1 and for 2 chips lands in different cache files, and the 2-chip model
    built after the 1-chip one (cache present) still computes the right numbers."""
    monkeypatch.setenv("TT_VLLM_CACHE", str(tmp_path))
    path = make_wide_model("llama_mha_tied_llama3", tiny_root)
    ref = hf_last_logits(load_hf(path), PROMPTS[0])
    tokens, lens = torch.tensor([PROMPTS[0]], dtype=torch.int32), [len(PROMPTS[0])]
    single = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 24)
    try:
        build(path, single, "reference")
    finally:
        ttnn.close_mesh_device(single)
    files = {p.name for p in tmp_path.rglob("*wqkv*")}
    assert files and not any("-tp2" in f for f in files)
    with open_mesh((1, 2)) as mesh:
        tt, kv = build(path, mesh, "reference")
        got = tt.prefill_forward(tokens, page_table(BATCH, [0])[:1], kv, lens)[0, 0]
    split = {p.name for p in tmp_path.rglob("*wqkv*")} - files
    assert split and all("-tp2d3" in f for f in split)
    assert pcc(got, ref) >= 0.999


# --- refusals ---
def _args(**kw) -> ModelArgs:
    cfg = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=1,
                      num_attention_heads=8, num_key_value_heads=2, **kw)
    cfg.architectures = ["LlamaForCausalLM"]
    return ModelArgs.from_hf_config(cfg)


def test_splits_that_do_not_divide_are_refused():
    plan = plan_tensor_parallel(_args(), (1, 8))
    assert plan.n_heads == 1 and plan.hidden_dim == 64 and plan.vocab == 64
    cases = [
        (replace(_args(), n_heads=12), (1, 8), "12 attention heads do not split evenly"),
        (replace(_args(), n_kv_heads=3, n_heads=12), (1, 2), "3 KV heads do not split evenly"),
        (replace(_args(), n_kv_heads=3, n_heads=24), (1, 8), "3 KV heads cannot be replicated evenly"),
        (replace(_args(), hidden_dim=480), (1, 8), "MLP size 480 does not split into whole tiles"),
        (replace(_args(), vocab_size=513), (1, 2), "vocabulary 513 does not split evenly"),
        (replace(_args(), n_heads=12, n_kv_heads=4), (8, 4), r"12 attention heads do not split evenly"),
        (replace(_args(), dim=200), (2, 4), r"hidden size 200 does not split into whole tiles \(32 columns\) per chip"),
        (replace(_args(), hidden_dim=480), (4, 2), "MLP size 480 does not split into whole tiles"),
        # Qwen1.5-MoE-A2.7B's 60 experts over a T3K's 8 chips, unpadded (pad_mlp pads them, below)
        (replace(_args(), n_experts=60, experts_per_tok=4), (1, 8), r"expert parallel over 8 chips .*: 60 experts do "
                                                                    r"not split evenly"),
        (replace(_args(), n_experts=60, experts_per_tok=4), (2, 4), "60 experts do not split evenly"),
    ]
    for args, shape, message in cases:
        with pytest.raises(UnsupportedModelError, match=message):
            plan_tensor_parallel(args, shape)
    moe = replace(_args(), n_experts=60, experts_per_tok=4)
    assert plan_tensor_parallel(moe, (1, 2)).devices == 2 and pad_mlp(moe, (1, 2)).n_experts == 60
    for shape in ((1, 8), (2, 4)):
        padded = pad_mlp(moe, shape)
        assert (padded.n_experts, padded.experts_padded_from) == (64, 60)
        assert plan_tensor_parallel(padded, shape).devices == 8


def test_a_residual_that_does_not_split_into_tiles_is_padded():
    """gpt-oss's hidden 2880 is 90 tiles: a 1x8 mesh pads the residual to 3072 (12 tiles a chip, 192 zero columns at
    the end), over a 2x4 mesh's 4 columns to 2944 (23 tiles each); a 1x2 mesh needs none (45 tiles each). The
    distributed norm's epsilon and gamma scale by 2880 / 3072. A width that is not whole tiles is refused."""
    plan = plan_tensor_parallel(replace(_args(), dim=2880), (1, 8))
    assert (plan.dim, plan.dim_pad, plan.written_dim, plan.padded_width) == (384, 192, 3072, 3072)
    assert plan.norm_scale == 2880 / 3072
    plan = plan_tensor_parallel(replace(_args(), dim=2880), (2, 4))
    assert (plan.dim, plan.dim_pad, plan.written_dim, plan.padded_width) == (736, 64, 736, 2944)
    plan = plan_tensor_parallel(replace(_args(), dim=2880), (1, 2))
    assert (plan.dim, plan.dim_pad, plan.written_dim) == (1440, 0, 2880) and plan.norm_scale == 1.0
    assert plan_tensor_parallel(replace(_args(), dim=896), (1, 8)).dim_pad == 128  # Qwen2.5-0.5B: 28 tiles
    with pytest.raises(UnsupportedModelError, match=r"hidden size 2890 does not split into whole tiles \(32 "
                                                    r"columns\) per chip \(the residual stream is split by columns\)"):
        plan_tensor_parallel(replace(_args(), dim=2890), (1, 2))


@pytest.mark.parametrize(("family", "shape"), [("llama_gqa", (1, 8)), ("gpt_oss", (1, 8)), ("qwen3_moe", (1, 2)),
                                               ("gpt_oss", (2, 4)), ("qwen3_moe", (2, 4)), ("gemma3", (1, 8))])
def test_a_padded_residual_matches_hf(family, shape, tiny_root):
    """Hidden 480 (15 tiles) over 8, 4 or 2 chips: the residual padded to 512 with zero columns (the embedding table,
    WO, w2 and the experts' down projection with their biases write them as zeros; 2-D: QKV, w1/w3 and the LM head
    read them with zero rows). The gathered norm slices them off; the distributed norms (2-D; Gemma's output norms)
    scale epsilon and gamma. Greedy tokens equal HF's (reference, traced decode of two prompts together),
    performance PCC >= 0.99, as on any mesh; gpt-oss-20b's split on a T3K and as a Galaxy splits, in miniature."""
    path = make_padded_model(family, tiny_root)
    hf = load_hf(path)
    chips = shape[0] * shape[1]

    def split(a, plan, kv) -> None:
        assert a.dim == 480 and plan.devices == chips
        assert plan.dim_pad == 32 and plan.padded_width == 512

    with open_mesh(shape) as mesh:
        check_reference_and_performance(path, hf, mesh, f"{family} padded {shape}", split)


def test_four_head_model_on_eight_chips_is_refused_at_load(tiny_root):
    path = make_tiny_model("llama_gqa", tiny_root)  # 4 heads
    with open_mesh((1, 8)) as mesh, pytest.raises(UnsupportedModelError, match="4 attention heads do not split"):
        TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh, BATCH, MAX_SEQ, optimizations="reference")


def test_model_that_does_not_fit_the_mesh_is_refused_with_the_numbers():
    """Llama-3.1-70B's shapes in bf16 need about 17.5 GiB of weights per chip over 8 chips as the allocator places
    them (16.4 GiB of whole tiles, the embedding split by hidden dim like everything else, and each DRAM-sharded
    weight's columns padded to whole tiles per bank); a Wormhole chip has 12 GiB: refused at load, before any weight
    is placed, with what it needs, what a chip has and how many chips it would take (140 / 12 -> 12). The same model
    with 2 layers loads (dummy weights)."""
    cfg = LlamaConfig(vocab_size=128256, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                      num_attention_heads=64, num_key_value_heads=8, max_position_embeddings=131072)
    cfg.architectures = ["LlamaForCausalLM"]
    with open_mesh((1, 8)) as mesh:
        with pytest.raises(UnsupportedModelError,
                           match=r"does not fit a \(1, 8\) mesh: its weights take 17\.\d+ GiB per chip with tensor "
                                 r"parallel over 8 chips, a chip has 1[12]\.\d+ GiB of DRAM free .* needs about 12 "
                                 r"chips"):
            TTLlamaForCausalLM.initialize_vllm_model(cfg, mesh, 32, 1024, optimizations="bf16", load_format="dummy")
        tt = TTLlamaForCausalLM.initialize_vllm_model(cfg, mesh, 32, 1024, n_layers=2, optimizations="bf16",
                                                      load_format="dummy")
        assert tt.model.plan.devices == 8 and tt.kv_cache_heads == 1
