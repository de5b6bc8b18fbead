"""all_to_all_dispatch / all_to_all_combine / moe_expert_token_remap (ttnn_sim/all_to_all.py).

The verdicts: every call of tt_checks/cases_all_to_all.py recorded from the real ttnn 0.81.1 on mock N300, T3K (1x8)
and T3K as 2x4 meshes (tests/fixtures/all_to_all_0.81.1.json) is replayed on the simulator's mesh of the same shape:
same verdict, same output specs, same DRAM per bank. L1 per bank may differ by the 64 bytes of a global semaphore
the real op allocates on some calls and not others (by num_links / topology and what it cached), which the simulator
does not model.

The semantics, against plain PyTorch: dispatch sends each token to the chips holding one of its experts and
all-gathers the indices; experts computed on the dispatched rows and combined back give, per token and slot, the
output of that slot's expert on that token: the expert-parallel MoE sum of tt-metal's models."""

import json
from pathlib import Path

import pytest
import torch

import ttnn_sim as ttnn
from tests.sim.helpers import open_mesh
from tt_checks.cases_all_to_all import CRASHES
from tt_checks.corpus import run_call
from ttnn_sim.rules import all_rules

FIXTURE = Path(__file__).parents[1] / "fixtures" / "all_to_all_0.81.1.json"
MESHES = json.loads(FIXTURE.read_text())["meshes"]


def _outcome(v: dict) -> tuple:
    if not v["ok"]:
        return (False,)
    return True, v["out"], v["alloc"]["DRAM"]


@pytest.mark.parametrize("name", sorted(MESHES))
def test_verdicts_agree_with_the_real_ttnn(name, fabric):
    m = MESHES[name]
    mesh = open_mesh(*m["shape"])
    try:
        bad = []
        for case in m["cases"]:
            real, sim = case["verdict"], run_call(ttnn, mesh, case["call"])
            if _outcome(real) != _outcome(sim) or (real["ok"] and real["alloc"]["L1"] - sim["alloc"]["L1"] not in
                                                   (0, 64)):
                bad.append(f"{case['name']}: real {real.get('out', real.get('error'))} {real.get('alloc')} | sim "
                           f"{sim.get('out', sim.get('error'))} {sim.get('alloc')}")
        assert not bad, f"{name}: {len(bad)} of {len(m['cases'])} disagree:\n" + "\n".join(bad)
    finally:
        ttnn.close_mesh_device(mesh)


MESH_RULES = [r for r in all_rules()
              if r.op in ("all_to_all_dispatch", "all_to_all_combine", "moe_expert_token_remap")]
MESH_CASES = {f"{m}/{c['name']}": (v["shape"], c) for m, v in MESHES.items() for c in v["cases"]}


@pytest.mark.parametrize("rule", MESH_RULES, ids=[f"{r.op}:{r.message[:60]}" for r in MESH_RULES])
def test_rule_both_ways(rule, fabric):
    """As tests/sim/test_rules.py for the other ops: each breaking case is rejected by the real ttnn and the
    simulator with the rule's message, the last (valid) case accepted by both, on the mesh it was recorded on."""
    if rule.unreachable:
        assert not rule.cases
        return
    assert len(rule.cases) >= 2
    pattern = rule.pattern()
    *breaking, valid = rule.cases
    for name in rule.cases:
        shape, case = MESH_CASES[name]
        mesh = open_mesh(*shape)
        try:
            real, sim = case["verdict"], run_call(ttnn, mesh, case["call"])
        finally:
            ttnn.close_mesh_device(mesh)
        if name == valid:
            assert real["ok"] and sim["ok"], f"{name}: real {real.get('error')} sim {sim.get('error')}"
            continue
        assert not real["ok"] and pattern.fullmatch(real["error"]), f"{name}: the real ttnn says {real}"
        assert not sim["ok"], f"{name}: the simulator accepts it"
        assert sim["error"] == f"ttnn.{rule.op}: " + real["error"] or pattern.fullmatch(
            sim["error"].split(": ", 1)[1]), f"{name}: simulator says {sim['error']!r}"


def test_crashing_calls_are_refused(fabric):
    """num_links=0 kills the real dispatch, fewer experts than chips the real remap (SIGFPE); the simulator refuses
    both."""
    assert set(CRASHES) == {"a2a-dispatch/links-0", "remap/experts-fewer-than-chips"}
    mesh = open_mesh(1, 2)
    try:
        x, i, m = _inputs(mesh, torch.zeros(2, 1, 32, 64), torch.zeros(2, 1, 32, 2, dtype=torch.int32),
                          _mapping(8, 2))
        with pytest.raises(ttnn.TTError, match="all_to_all_dispatch.*num_links"):
            ttnn.all_to_all_dispatch(x, i, m, cluster_axis=1, num_links=0)
        one = _replicated(mesh, torch.ones(1, 1, 32, 1), ttnn.bfloat16)
        with pytest.raises(ttnn.TTError, match="moe_expert_token_remap.*no local experts"):
            ttnn.moe_expert_token_remap(one, _replicated(mesh, torch.ones(1, 1, 1, 2, dtype=torch.int32)),
                                        _replicated(mesh, torch.zeros(1, 1, 32, 2, dtype=torch.int32)),
                                        reduction_size=32)
    finally:
        ttnn.close_mesh_device(mesh)


def _replicated(mesh, t, dtype=ttnn.uint16):
    return ttnn.from_torch(t, dtype, layout=ttnn.ROW_MAJOR_LAYOUT, device=mesh,
                           mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))


def test_one_chip_has_no_fabric():
    dev = ttnn.open_device(device_id=0)
    try:
        x = ttnn.from_torch(torch.zeros(1, 1, 32, 64), ttnn.bfloat16, device=dev)
        i = ttnn.from_torch(torch.zeros(1, 1, 32, 2, dtype=torch.int32), ttnn.uint16, device=dev)
        with pytest.raises(ttnn.TTError, match="all_to_all_dispatch.*fabric"):
            ttnn.all_to_all_dispatch(x, i, i, cluster_axis=1)
    finally:
        ttnn.close_device(dev)


# --- semantics ---
def _mapping(experts: int, chips: int) -> torch.Tensor:
    """tt-metal's expert mapping: chip d holds experts [d * E / D, (d + 1) * E / D)."""
    return torch.eye(chips, dtype=torch.int32).repeat_interleave(experts // chips, dim=0).reshape(1, 1, experts, chips)


def _inputs(mesh, tokens, indices, mapping):
    """Per-chip tokens [D, B, S, H] -> [B, 1, S, H] on each chip (chip-major), same for indices; mapping replicated."""
    n = mesh.get_num_devices()
    x = ttnn.from_torch(tokens.reshape(n, -1, *tokens.shape[-2:]).unsqueeze(2).reshape(-1, 1, *tokens.shape[-2:]),
                        ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=mesh,
                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=0))
    i = ttnn.from_torch(indices.reshape(n, -1, *indices.shape[-2:]).unsqueeze(2).reshape(-1, 1, *indices.shape[-2:]),
                        ttnn.uint16, layout=ttnn.ROW_MAJOR_LAYOUT, device=mesh,
                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=0))
    m = ttnn.from_torch(mapping, ttnn.uint16, layout=ttnn.ROW_MAJOR_LAYOUT, device=mesh,
                        mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
    return x, i, m


def _shards(t):
    return [s.float() if s.is_floating_point() else s for s in t._shards]


@pytest.mark.parametrize("shape,axis", [((1, 2), 1), ((1, 8), 1), ((2, 4), 1), ((2, 4), 0)])
@pytest.mark.parametrize("concat", [1, 2])
def test_dispatch_sends_tokens_to_their_experts_chips(shape, axis, concat, fabric):
    rows, cols = shape
    n, e, k, s, h = rows * cols, 4 * rows * cols, 2, 4, 64
    mesh = open_mesh(rows, cols)
    try:
        g = torch.Generator().manual_seed(0)
        tokens = torch.randn(n, s, h, generator=g).to(torch.bfloat16).float()
        idx = torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(n * s)]).reshape(n, s, k).to(torch.int32)
        x, i, m = _inputs(mesh, tokens.reshape(n, 1, s, h), idx.reshape(n, 1, s, k), _mapping(e, n))
        # tokens along the dispatch dim: [B=1, 1, S, H] per chip, concat over the line
        x = ttnn.reshape(x, (1, 1, s, h)) if False else x
        out, meta = ttnn.all_to_all_dispatch(x, i, m, cluster_axis=axis, output_concat_dim=concat)
        holder = _mapping(e, n)[0, 0].argmax(dim=1)
        for c in range(n):
            r, col = divmod(c, cols)
            line = [r * cols + j for j in range(cols)] if axis == 1 else [j * cols + col for j in range(rows)]
            got = _shards(out)[c]
            got = got[0] if concat == 1 else got[0, 0].reshape(len(line), s, h)
            gm = _shards(meta)[c]
            gm = gm[0] if concat == 1 else gm[0, 0].reshape(len(line), s, k)
            for q, src in enumerate(line):
                assert torch.equal(gm[q].reshape(s, k), idx[src])
                for t in range(s):
                    row = got[q].reshape(s, h)[t]
                    if (holder[idx[src, t].long()] == c).any():
                        assert torch.equal(row, tokens[src, t])
                    else:
                        assert row.isnan().all()
    finally:
        ttnn.close_mesh_device(mesh)


@pytest.mark.parametrize("shape,axis", [((1, 2), 1), ((1, 8), 1), ((2, 4), 1)])
@pytest.mark.parametrize("local_reduce", [False, True])
def test_dispatch_experts_combine_is_the_moe_sum(shape, axis, local_reduce, fabric):
    """Each chip runs its experts (here: expert e multiplies by e + 1) on every dispatched row; combine returns one
    row per top-k slot; the routing-weighted sum over the slots equals the MoE computed directly."""
    rows, cols = shape
    n, k, s, h = rows * cols, 2, 8, 32
    e = 2 * n
    el = e // n
    mesh = open_mesh(rows, cols)
    try:
        g = torch.Generator().manual_seed(1)
        tokens = torch.randn(n, s, h, generator=g).to(torch.bfloat16).float()
        # the chips of one line along the axis hold distinct tokens; experts on other lines: not reachable, so pick
        # only experts of the token's own line
        idx = torch.zeros(n, s, k, dtype=torch.int32)
        for c in range(n):
            r, col = divmod(c, cols)
            line = [r * cols + j for j in range(cols)] if axis == 1 else [j * cols + col for j in range(rows)]
            reach = torch.tensor([x for d in line for x in range(d * el, (d + 1) * el)])
            for t in range(s):
                idx[c, t] = reach[torch.randperm(len(reach), generator=g)[:k]].to(torch.int32)
        weights = torch.softmax(torch.randn(n, s, k, generator=g), dim=-1)
        x, i, m = _inputs(mesh, tokens.reshape(n, 1, s, h), idx.reshape(n, 1, s, k), _mapping(e, n))
        out, meta = ttnn.all_to_all_dispatch(x, i, m, cluster_axis=axis, output_concat_dim=2)
        # experts on each chip: [el, 1, S * D, H]; expert (c * el + j) scales by its id + 1
        d = rows if axis == 0 else cols
        disp = torch.stack([sh.float() for sh in out._shards])  # [n, 1, 1, S*d, H]
        scale = torch.arange(e, dtype=torch.float32).reshape(n, el) + 1
        per = disp[:, 0, 0].unsqueeze(1) * scale[:, :, None, None]  # [n, el, S*d, H]
        if local_reduce:
            # each chip sums its experts' outputs per token, weighted (as a locally reduced MoE would)
            mt = meta._shards[0][0, 0].long()  # [S*d, K] (identical on the line's chips)
            red = []
            for c in range(n):
                mtc = meta._shards[c][0, 0].long()
                sel = (mtc // el == c)  # [S*d, K]
                w = torch.zeros(mtc.shape[0], el)
                for slot in range(k):
                    w[torch.arange(mtc.shape[0]), (mtc[:, slot] % el)] += sel[:, slot].float()
                red.append((per[c] * w.t()[:, :, None]).sum(0, keepdim=True))
            del mt
            expert_out = torch.stack(red).unsqueeze(2)  # [n, 1, 1, S*d, H]
        else:
            expert_out = per.unsqueeze(2)  # [n, el, 1, S*d, H]
        y = ttnn.from_torch(expert_out.reshape(-1, 1, s * d, h), ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT,
                            device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=0))
        comb = ttnn.all_to_all_combine(y, meta, m, cluster_axis=axis, output_shard_dim=2, local_reduce=local_reduce)
        assert tuple(comb.shape) == (k, 1, s, h)
        for c in range(n):
            got = comb._shards[c].float()[:, 0]  # [K, S, H]
            for t in range(s):
                chosen = idx[c, t].long()
                if local_reduce:
                    # slots of the same chip: the lowest expert's slot holds that chip's sum, the others NaN
                    total = torch.zeros(h)
                    for slot in range(k):
                        if not got[slot, t].isnan().any():
                            total += got[slot, t]
                    ref = sum((chosen[j] + 1).float() * tokens[c, t] for j in range(k))
                    torch.testing.assert_close(total, ref.to(torch.bfloat16).float(), rtol=1e-2, atol=1e-2)
                else:
                    for slot in range(k):
                        ref = ((chosen[slot] + 1).float() * tokens[c, t]).to(torch.bfloat16).float()
                        assert torch.equal(got[slot, t], ref)
                    moe = sum(weights[c, t, j] * got[j, t] for j in range(k))
                    ref = sum(weights[c, t, j] * (chosen[j] + 1) * tokens[c, t] for j in range(k))
                    torch.testing.assert_close(moe, ref, rtol=1e-2, atol=1e-2)
    finally:
        ttnn.close_mesh_device(mesh)


# --- moe_expert_token_remap ---
def _golden_remap(topk, mapping, metadata, reduction_size):
    """tt-metal's golden function (ttnn/operations/ccl.py) in plain PyTorch, per chip d: the scores at the chip's
    experts where the row's metadata selects them, else 0; then any non-zero per chunk of reduction_size rows."""
    chips = mapping.shape[-1]
    local = [mapping[0, 0, :, d].nonzero().reshape(-1) for d in range(chips)]
    mapped = [torch.where((metadata.long().unsqueeze(-1) == ids).any(dim=-2), topk[..., ids], 0) for ids in local]
    reduced = [m.reshape(-1, reduction_size, m.shape[-1]).bool().any(dim=1).to(torch.int32).reshape(1, 1, -1,
                                                                                                     m.shape[-1])
               for m in mapped]
    return mapped, reduced


@pytest.mark.parametrize("shape", [(1, 2), (1, 8), (2, 4)])
@pytest.mark.parametrize("reduction_size", [32, 16])
def test_remap_is_the_golden_semantics(shape, reduction_size, fabric):
    """Each chip's mapping output and reduced flags equal the golden function's, with non-zero scores (where the
    golden and the kernel agree: see test_remap_flags_the_selection)."""
    rows, cols = shape
    chips, k, n = rows * cols, 2, 64
    e = 2 * chips
    mesh = open_mesh(rows, cols)
    try:
        g = torch.Generator().manual_seed(2)
        topk = (torch.rand(1, 1, n, e, generator=g) + 0.5).to(torch.bfloat16).float()
        meta = torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(n)]).reshape(1, 1, n, k).to(torch.int32)
        meta[0, 0, :reduction_size] = 0  # a chunk that selects only experts 0 and 1: other chips' flags stay 0
        meta[0, 0, :reduction_size, 1] = 1
        mapping = _mapping(e, chips)
        mapped, reduced = ttnn.moe_expert_token_remap(
            _replicated(mesh, topk, ttnn.bfloat16), _replicated(mesh, mapping), _replicated(mesh, meta),
            reduction_size=reduction_size)
        assert tuple(mapped.shape) == (1, 1, n, e // chips) and mapped.dtype == ttnn.bfloat16
        assert tuple(reduced.shape) == (1, 1, n // reduction_size, e // chips) and reduced.dtype == ttnn.uint16
        assert mapped.layout == reduced.layout == ttnn.ROW_MAJOR_LAYOUT
        want_mapped, want_reduced = _golden_remap(topk, mapping, meta, reduction_size)
        for d in range(chips):
            assert torch.equal(mapped._shards[d].float(), want_mapped[d])
            assert torch.equal(reduced._shards[d].to(torch.int32), want_reduced[d])
        assert want_reduced[chips - 1][0, 0, 0].sum() == 0 and want_reduced[0][0, 0, 0].sum() == 2
    finally:
        ttnn.close_mesh_device(mesh)


def test_remap_flags_the_selection(fabric):
    """The kernel (writer_moe_expert_token_remap.cpp) sets a chunk's flag when a row selects the expert, whatever
    its score; the golden function tests the score. A selected expert with score 0: mapping 0, flag 1."""
    mesh = open_mesh(1, 2)
    try:
        topk = torch.ones(1, 1, 32, 4)
        topk[..., 1] = 0.0
        meta = torch.tensor([1, 3], dtype=torch.int32).expand(1, 1, 32, 2).contiguous()
        mapped, reduced = ttnn.moe_expert_token_remap(
            _replicated(mesh, topk, ttnn.bfloat16), _replicated(mesh, _mapping(4, 2)), _replicated(mesh, meta),
            reduction_size=32)
        assert torch.equal(mapped._shards[0].float()[0, 0, 0], torch.tensor([0.0, 0.0]))
        assert reduced._shards[0].tolist() == [[[[0, 1]]]]
        assert reduced._shards[1].tolist() == [[[[0, 1]]]]
        assert _golden_remap(topk, _mapping(4, 2), meta, 32)[1][0].tolist() == [[[[0, 0]]]]
    finally:
        ttnn.close_mesh_device(mesh)


@pytest.mark.parametrize("shape", [(1, 8), (2, 4)])
def test_remap_of_dispatched_rows_is_their_routing_sparsity(shape, fabric):
    """As the MoE layer uses it (expert_dispatch "all_to_all"): dispatch along the row of chips (concat dim 2: the
    line's rows in line order), then remap of tt-metal's ones mask with reduction_size 32. Each chip's flags equal,
    per 32-row block of the line's rows and local expert, whether some row of the block selected the expert."""
    rows, cols = shape
    chips, k, h, t = rows * cols, 2, 32, 8
    e = 2 * chips
    mesh = open_mesh(rows, cols)
    try:
        g = torch.Generator().manual_seed(3)
        idx = torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(chips * t)]).reshape(chips, t, k)
        idx[:, :, 1] = torch.where(idx[:, :, 0] == 5, 6, 5)  # expert 5 (or 6) selected by every row
        idx = idx.to(torch.int32)
        tokens = torch.randn(chips, t, h, generator=g)
        x, i, m = _inputs(mesh, tokens.reshape(chips, 1, t, h), idx.reshape(chips, 1, t, k), _mapping(e, chips))
        _, meta = ttnn.all_to_all_dispatch(x, i, m, cluster_axis=1, output_concat_dim=2)
        ones = _replicated(mesh, torch.ones(1, 1, t * cols, e), ttnn.bfloat16)
        _, reduced = ttnn.moe_expert_token_remap(ones, m, meta, reduction_size=32)
        el = e // chips
        for c in range(chips):
            r = c // cols
            line_idx = idx[r * cols:(r + 1) * cols].reshape(-1, k)  # the line's rows, in order
            blocks = line_idx.reshape(-1, 32, k)
            want = torch.stack([torch.stack([(b == c * el + j).any() for j in range(el)]) for b in blocks])
            assert torch.equal(reduced._shards[c][0, 0].bool(), want), c
    finally:
        ttnn.close_mesh_device(mesh)
