"""ttnn.sampling and ttnn.manual_seed on the simulator: the distribution the op draws from is vLLM's (top-k, then
top-p over the renormalized top-k, temperature as 1/T), checked exactly with a grid of uniform draws; the per-user
core PRNGs (seeded per user, advanced one draw per call, by trace replays too, untouched by a capture)."""

import pytest
import torch
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p

import ttnn_sim as ttnn
from ttnn_sim.sampling import sample_rows

W = 64


def _vllm_probs(values, temperature, k, p):
    x = apply_top_k_top_p((values.float() / temperature)[None], torch.tensor([k]), torch.tensor([p]))
    return torch.softmax(x[0], -1)


@pytest.mark.parametrize("temperature,k,p", [(1.0, 32, 1.0), (0.5, 8, 1.0), (2.0, 32, 0.5), (1.0, 5, 0.75),
                                             (4.0, 1, 1.0), (1.0, 32, 0.0)])
def test_drawn_distribution_is_vllms(temperature, k, p):
    """M uniforms spread evenly over [0, 1) pick each candidate in proportion to its probability: the op's
    distribution equals vLLM's on the same candidates to within 1/M per token."""
    g = torch.Generator().manual_seed(1)
    values = (torch.randn(W, generator=g) * 2).to(torch.bfloat16)
    ids = torch.randperm(W, generator=g) + 1000
    m = 1 << 14  # uniforms on a lattice of the device's 16-bit draws
    u = (torch.arange(m) * 4 + 2) / 65536
    picks = sample_rows(values.expand(m, W), ids.expand(m, W), torch.full((m,), k), torch.full((m,), p),
                        torch.full((m,), 1.0 / temperature), u)
    freq = torch.zeros(W)
    for i, c in zip(*torch.unique(picks, return_counts=True), strict=True):
        freq[(ids == i).nonzero()[0, 0]] = c / m
    # p = 0 keeps only the best candidate (argmax), as vLLM's smallest top_p does. The device holds the
    # probabilities in bf16 (relative error up to 2**-8 before renormalizing).
    expected = _vllm_probs(values, temperature, k, max(p, 1e-6))
    assert ((freq - expected).abs() <= 2 ** -7 * expected + 2 / m).all()


def _tensors(device, users, values, k, p, temp):
    ids = torch.arange(W, dtype=torch.int32).expand(users, W).reshape(1, 1, users, W).contiguous()
    return (ttnn.from_torch(values.reshape(1, 1, users, W), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device),
            ttnn.from_torch(ids, ttnn.uint32, device=device),
            ttnn.from_torch(torch.tensor(k, dtype=torch.int32), ttnn.uint32, device=device),
            ttnn.from_torch(torch.tensor(p), ttnn.bfloat16, device=device),
            ttnn.from_torch(torch.tensor(temp), ttnn.bfloat16, device=device))


def _draw(device, args, n):
    return torch.stack([ttnn.to_torch(ttnn.sampling(*args)).reshape(-1).long() for _ in range(n)])


def test_per_user_seeds_and_draws(device):
    users = 8
    values = torch.zeros(users, W)  # uniform over the 32 kept candidates: every draw shows the PRNG
    args = _tensors(device, users, values, [32] * users, [1.0] * users, [1.0] * users)
    seeds = ttnn.from_torch(torch.tensor([7, 7, 8, 9, 10, 11, 12, 13]), ttnn.uint32, device=device)
    ids = ttnn.from_torch(torch.arange(users), ttnn.uint32, device=device)
    out = ttnn.manual_seed(seeds, user_ids=ids)
    assert tuple(out.shape) == (1,) and out.dtype == ttnn.uint32
    first = _draw(device, args, 20)
    assert torch.equal(first[:, 0], first[:, 1]) and not torch.equal(first[:, 0], first[:, 2])
    assert first[:, 0].unique().numel() > 5  # each call draws anew
    # Reseeding one user replays its stream and leaves the others' running.
    ttnn.manual_seed(7, device=device, user_ids=2)
    again = _draw(device, args, 20)
    assert torch.equal(again[:, 2], first[:, 0]) and not torch.equal(again[:, 3], first[:, 3])
    # One seed for every core; a seed given to the op reseeds all of them at each call.
    ttnn.manual_seed(5, device=device)
    all_same = _draw(device, args, 3)
    assert all(torch.equal(all_same[:, 0], all_same[:, u]) for u in range(users))
    fixed = torch.stack([ttnn.to_torch(ttnn.sampling(*args, seed=3)).reshape(-1) for _ in range(3)])
    assert torch.equal(fixed[0], fixed[1]) and torch.equal(fixed[1], fixed[2])
    assert all(torch.equal(fixed[:, 0], fixed[:, u]) for u in range(users))  # one shared draw
    # A seeds tensor without user ids seeds every core with 0 (0.81.1's fallback program); UINT32_MAX skips.
    ttnn.manual_seed(ttnn.from_torch(torch.tensor([5, 6]), ttnn.uint32, device=device))
    zero = _draw(device, args, 2)
    ttnn.manual_seed(0, device=device)
    four = _draw(device, args, 4)
    assert torch.equal(zero, four[:2])
    ttnn.manual_seed(0, device=device)
    _draw(device, args, 2)
    ttnn.manual_seed(0xFFFFFFFF, device=device)
    assert torch.equal(_draw(device, args, 2), four[2:])  # the streams went on


def test_trace_replay_draws_and_capture_does_not(device):
    users = 4
    values = torch.zeros(users, W)
    args = [ttnn.to_device(t, device) if t.device_or_none is None else t
            for t in _tensors(device, users, values, [32] * users, [1.0] * users, [1.0] * users)]
    ttnn.manual_seed(42, device=device)
    eager = _draw(device, args, 4)
    ttnn.manual_seed(42, device=device)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    out = ttnn.sampling(*args)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    replays = []
    for _ in range(4):
        ttnn.execute_trace(device, tid, cq_id=0, blocking=True)
        replays.append(ttnn.to_torch(out).reshape(-1).long())
    assert torch.equal(torch.stack(replays), eager)  # the capture drew nothing; each replay draws once
    ttnn.release_trace(device, tid)
