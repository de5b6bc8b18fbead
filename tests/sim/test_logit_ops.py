"""The element-wise and reduction ops on-device penalties and logprobs use, on the simulator, against plain PyTorch:
sub, the comparisons gt / ge / eq (1.0 / 0.0 in input A's dtype, broadcasting a [B, 1] column against a [1, V] row),
exp, log, sum over the last dim; and a binary op's output_tensor is written in place, so a traced
add(counts, x, output_tensor=counts) accumulates into the caller's tensor on every replay."""

import pytest
import torch

import ttnn_sim as ttnn
from tests.sim.helpers import bf16, dev_tensor, host

B, V = 32, 96


def _data(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, 1, B, V, generator=g) * 3, torch.randn(1, 1, B, 1, generator=g)


@pytest.mark.parametrize("dtype", [ttnn.float32, ttnn.bfloat16])
def test_binary_ops_against_torch(device, dtype):
    x, col = _data()
    rnd = (lambda t: t) if dtype == ttnn.float32 else bf16
    x, col = rnd(x), rnd(col)
    x[..., 0] = 0.0  # gt and ge differ on ties
    x[..., 1] = col[..., 0]
    a, c = dev_tensor(x, device, dtype), dev_tensor(col, device, dtype)
    assert torch.equal(host(ttnn.sub(a, c)), rnd(x - col))
    assert torch.equal(host(ttnn.gt(a, 0.0)), (x > 0).float())
    assert torch.equal(host(ttnn.ge(a, c)), (x >= col).float())
    y = x.clone()
    y[..., ::3] += 1
    assert torch.equal(host(ttnn.eq(a, dev_tensor(y, device, dtype))), (x == y).float())
    assert ttnn.gt(a, 0.0).dtype == dtype


def test_eq_row_against_column_is_one_hot(device):
    """eq([1, V] vocabulary ids, [B, 1] token ids) in fp32: each row one-hot at its token (ids exact below 2**24)."""
    ids = torch.arange(V, dtype=torch.float32).reshape(1, 1, 1, V)
    tokens = torch.randint(0, V, (1, 1, B, 1)).float()
    hot = host(ttnn.eq(dev_tensor(ids, device, ttnn.float32), dev_tensor(tokens, device, ttnn.float32)))
    assert torch.equal(hot, torch.nn.functional.one_hot(tokens.long().reshape(B), V).float().reshape(1, 1, B, V))


def test_exp_log_sum_against_torch(device):
    x, _ = _data(1)
    a = dev_tensor(x, device, ttnn.float32)
    assert torch.allclose(host(ttnn.exp(a)), x.exp(), rtol=1e-6)
    assert torch.allclose(host(ttnn.log(ttnn.exp(a))), x, atol=1e-5)
    s = ttnn.sum(a, dim=-1, keepdim=True)
    assert list(s.shape) == [1, 1, B, 1]
    assert torch.allclose(host(s), x.sum(-1, keepdim=True), atol=1e-4)
    # bf16: fp32 accumulation, rounded once into bf16 (relative 2**-8)
    sb = host(ttnn.sum(dev_tensor(x.abs(), device), dim=-1, keepdim=True))
    ref = bf16(x.abs()).sum(-1, keepdim=True)
    assert ((sb - ref).abs() <= 2 ** -8 * ref).all()


def test_in_place_output_tensor_accumulates_across_trace_replays(device):
    counts = dev_tensor(torch.zeros(1, 1, B, V), device, ttnn.float32)
    step = dev_tensor(torch.zeros(1, 1, B, V), device, ttnn.float32)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    out = ttnn.add(counts, step, output_tensor=counts)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    assert out is counts
    assert host(counts).abs().sum() == 0  # a capture does not run the write, as on hardware
    expected = torch.zeros(1, 1, B, V)
    for i in range(3):
        x = torch.randint(0, 2, (1, 1, B, V)).float()
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(x, ttnn.float32, layout=ttnn.TILE_LAYOUT), step)
        ttnn.execute_trace(device, tid, cq_id=0)
        expected += x
        assert torch.equal(host(counts), expected), f"replay {i}"
    # the host overwrites the state between replays; the next replay adds to what it wrote
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(torch.full((1, 1, B, V), 5.0), ttnn.float32,
                                                    layout=ttnn.TILE_LAYOUT), counts)
    ttnn.execute_trace(device, tid, cq_id=0)
    assert torch.equal(host(counts), 5.0 + x)
    ttnn.release_trace(device, tid)
