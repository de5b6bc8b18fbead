"""Exact bf16 ties at the top of the logits (common: logits come off the device in bf16). Greedy (argmax), top_k = 1
at any temperature and a top-p small enough to keep one token must pick one token, the lowest tied id, in every slot
of a 32-user batch: on the device (ttnn.argmax; ttnn.topk + ttnn.sampling over one vocabulary chunk or several, and
over tensor-parallel vocabulary slices gathered on a mesh) and on the host (vLLM's Sampler as the TT runner
configures it). The crafted ties sit inside a chunk, straddle chunk and slice boundaries, and outnumber the 32
candidates the device keeps."""

from types import SimpleNamespace

import pytest
import torch
from vllm.v1.sample.sampler import Sampler

from tt_models.backend import ttnn
from tt_models.layers.collectives import gather_vocab
from tt_models.layers.sampling import DeviceSampler, device_params
from vllm_patches import tie_order

ROWS, TOP = 32, 8.0  # 8.0 is exact in bf16
# A top-p below every row's top probability keeps one token, even in the row whose whole vocabulary ties.
TINY_P = 1e-6


def _tied_logits(vocab: int, boundaries: list[int], seed: int = 0) -> tuple[torch.Tensor, list[list[int]]]:
    """bf16 logits [1, 1, 32, vocab] below TOP, each row with a set of ids tied at TOP, and those sets."""
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(1, 1, ROWS, vocab, generator=g) * 2).clamp(max=TOP - 1).to(torch.bfloat16)
    sets: list[list[int]] = []
    for r in range(ROWS):
        if r < 2 * len(boundaries):  # a pair straddling a chunk / slice boundary, higher id first or second
            b = boundaries[r // 2]
            ids = [b - 1, b] if r % 2 else [b, b - 1 - r]
        elif r == 2 * len(boundaries):  # more tied values than the 32 candidates a chunk hands on
            ids = torch.randperm(vocab, generator=g)[:40].tolist()
        elif r == 2 * len(boundaries) + 1:  # every id of the row: the whole vocabulary tied
            ids = list(range(vocab))
        else:
            n = 2 + r % 3
            ids = torch.randperm(vocab, generator=g)[:n].tolist()
        logits[0, 0, r, ids] = TOP
        sets.append(ids)
    return logits, sets


def _device_paths(mesh_device, sampler: DeviceSampler, x) -> dict[str, list[int]]:
    """Token per row from argmax and from ttnn.sampling with k = 1 (hot temperatures) and with a tiny top-p."""
    out = {"argmax": ttnn.to_torch(ttnn.argmax(x, dim=3, keepdim=True)).reshape(-1)[:ROWS].tolist()}
    temps = [0.0] * 4 + [0.5 + r / 8 for r in range(ROWS - 4)]  # four greedy slots, the rest sampled hot
    for name, top_k, top_p in (("top_k=1", [1] * ROWS, [1.0] * ROWS), ("tiny top_p", [32] * ROWS, [TINY_P] * ROWS)):
        params = device_params(temps, top_k, top_p)
        dev = {k: ttnn.from_torch(v, ttnn.uint32 if k == "k" else ttnn.bfloat16, device=mesh_device)
               for k, v in params.items()}
        ids = sampler(x, dev["k"], dev["p"], dev["temp"])
        out[name] = ttnn.to_torch(ids).reshape(-1)[:ROWS].long().tolist()
    return out


@pytest.mark.parametrize("vocab", [49152, 70000, 262144], ids=["one-chunk", "two-chunks", "four-chunks"])
def test_every_device_path_picks_the_lowest_tied_id(mesh_device, vocab):
    sampler = DeviceSampler(vocab, ROWS)
    assert len(sampler.chunks) == {49152: 1, 70000: 2, 262144: 4}[vocab]
    boundaries = [b for _, b in sampler.chunks[:-1]] or [vocab // 2]
    logits, sets = _tied_logits(vocab, boundaries)
    x = ttnn.from_torch(logits, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=mesh_device)
    lowest = [min(s) for s in sets]
    for _ in range(3):  # fresh draws each time: the rule is not luck
        for path, ids in _device_paths(mesh_device, sampler, x).items():
            assert ids == lowest, path


def test_topk_stable_order_is_value_then_position(mesh_device):
    """ttnn.topk(stable=True): best first, equal values lowest position first, -0.0 one tie class with +0.0 (the
    stable engines' rule in 0.81.1's tt-llk topk); a stable descending sort is the reference."""
    g = torch.Generator().manual_seed(1)
    x = torch.randint(-3, 4, (1, 1, ROWS, 256), generator=g).float()
    x[0, 0, 0, :8] = -0.0  # negative zeros among the zeros
    for largest in (True, False):
        v, i = ttnn.topk(ttnn.from_torch(x.to(torch.bfloat16), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                                         device=mesh_device), 32, dim=-1, largest=largest, stable=True)
        ref = torch.sort(x + 0.0, dim=-1, descending=largest, stable=True)
        assert torch.equal(ttnn.to_torch(i).long(), ref.indices[..., :32])
        vals = ttnn.to_torch(v).float()
        assert torch.equal(vals, ref.values[..., :32]) and not torch.signbit(vals[vals == 0]).any()


@pytest.mark.parametrize("chips", [2, 8], ids=["N300", "T3K"])
def test_vocabulary_slices_gathered_keep_the_global_tie_order(chips):
    """Tensor parallel: each chip holds a slice of the vocabulary; gathered in chip order, the ties that straddle
    slices resolve to the lowest global id on every path, on every chip."""
    ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)  # the collectives need a fabric, as on hardware
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, chips), trace_region_size=1 << 24)
    try:
        vocab = 49152
        width = vocab // chips
        logits, sets = _tied_logits(vocab, [width * c for c in range(1, chips)], seed=2)
        sliced = ttnn.from_torch(logits, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=mesh,
                                 mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
        plan = SimpleNamespace(devices=chips, two_d=False, cluster_axis=1)
        full = gather_vocab(sliced, plan)
        sampler = DeviceSampler(vocab, ROWS)
        lowest = [min(s) for s in sets]
        composer = ttnn.ConcatMeshToTensor(mesh, dim=0)
        argmax = ttnn.to_torch(ttnn.argmax(full, dim=3, keepdim=True), mesh_composer=composer)
        assert all(argmax[c].reshape(-1)[:ROWS].tolist() == lowest for c in range(chips))
        temps = [1.0 + r / 16 for r in range(ROWS)]
        params = device_params(temps, [1] * ROWS, [1.0] * ROWS)
        dev = {k: ttnn.from_torch(v, ttnn.uint32 if k == "k" else ttnn.bfloat16, device=mesh)
               for k, v in params.items()}
        ids = ttnn.to_torch(sampler(full, dev["k"], dev["p"], dev["temp"]), mesh_composer=composer)
        assert all(ids[c].reshape(-1)[:ROWS].long().tolist() == lowest for c in range(chips))
    finally:
        ttnn.close_mesh_device(mesh)
        ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


def _host_draws(sampler: Sampler, logits: torch.Tensor, temperature: float, k: int | None, p: float | None,
                seed: int) -> list[int]:
    """vLLM's top-k / top-p masking and draw (its TopKTopPSampler, on logits scaled by the temperature), as the
    Sampler runs them for the random rows of a batch."""
    gens = {r: torch.Generator().manual_seed(seed + r) for r in range(ROWS)}
    kk = None if k is None else torch.full((ROWS,), k)
    pp = None if p is None else torch.full((ROWS,), p)
    ids, _ = sampler.topk_topp_sampler(logits / temperature, gens, kk, pp)
    return ids.tolist()


def test_host_sampler_picks_the_lowest_tied_id():
    """The TT runner's host Sampler: greedy, top_k = 1 and a tiny top_p agree on the lowest tied id. vLLM's stock
    masking keeps every value equal to the k-th, so its top_k = 1 draws among the tied: shown on the same logits, so
    the check fails if the TT rule is not installed."""
    logits, sets = _tied_logits(49152, [24576])
    x = logits[0, 0].float()
    lowest = [min(s) for s in sets]
    tt = Sampler()
    tie_order.install(tt)
    assert Sampler.greedy_sample(x.clone()).tolist() == lowest
    for seed in range(3):
        assert _host_draws(tt, x.clone(), 2.0, 1, None, seed) == lowest
        assert _host_draws(tt, x.clone(), 1.0, None, TINY_P, seed) == lowest
        assert _host_draws(tt, x.clone(), 0.7, 1, 0.5, seed) == lowest
    stock = Sampler()
    drawn = [_host_draws(stock, x.clone(), 2.0, 1, None, seed) for seed in range(3)]
    assert any(d != lowest for d in drawn), "vLLM's own top_k=1 should draw among tied ids"


def test_host_logprobs_list_tied_tokens_lowest_id_first():
    """The N best tokens a logprobs request lists: equal logprobs lowest id first (the device's order), the sampled
    token's logprob and rank as vLLM computes them."""
    logits, sets = _tied_logits(49152, [24576])
    lp = Sampler.compute_logprobs(logits[0, 0].float())
    lowest = torch.tensor([min(s) for s in sets])
    tt = Sampler()
    tie_order.install(tt)
    got = tt.gather_logprobs(lp, 5, lowest)
    ref = Sampler.gather_logprobs(lp, 5, lowest)
    assert torch.equal(got.logprob_token_ids[:, 0], ref.logprob_token_ids[:, 0])
    assert torch.equal(got.selected_token_ranks, ref.selected_token_ranks)
    for r, tied in enumerate(sets):
        best = sorted(tied)[:5]
        assert got.logprob_token_ids[r, 1:1 + len(best)].tolist() == best, r
        assert torch.equal(got.logprobs[r, 1:], ref.logprobs[r, 1:])  # the same values, in the device's order
