"""ttnn.scale_mask_softmax, scale_mask_softmax_in_place (interleaved and with SoftmaxShardedMultiCoreProgramConfig)
and softmax_in_place against plain PyTorch: softmax(x * scale + mask) over the last dim in fp32, rounded once into the
input's dtype. Their argument checks are held to the real ttnn by tests/sim/test_rules.py (cases "sms-in-place/...",
"scale-mask-softmax/...", "softmax-in-place/...")."""

import pytest
import torch

import ttnn_sim as ttnn


def _mask(batch: int, w: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(batch, 1, 1, w, generator=g) > 0.5
    keep[..., 0] = True  # no fully masked row
    return torch.zeros(batch, 1, 1, w).masked_fill(~keep, float("-inf"))


def _reference(x: torch.Tensor, scale: float | None, mask: torch.Tensor | None) -> torch.Tensor:
    y = x.float() * (1.0 if scale is None else scale)
    if mask is not None:
        y = y + mask.float()
    return torch.softmax(y, dim=-1)


def _dev(t: torch.Tensor, device, dtype=ttnn.bfloat16, **kw):
    return ttnn.from_torch(t, dtype, layout=ttnn.TILE_LAYOUT, device=device, **kw)


def test_scale_mask_softmax_is_the_masked_scaled_softmax(device):
    x = torch.randn(2, 3, 64, 96).bfloat16()
    mask = _mask(2, 96)
    out = ttnn.scale_mask_softmax(_dev(x, device), 0.125, _dev(mask, device))
    assert out.layout == ttnn.TILE_LAYOUT and out.memory_config() == ttnn.DRAM_MEMORY_CONFIG
    assert torch.equal(ttnn.to_torch(out), _reference(x, 0.125, mask).bfloat16())
    # Without a mask: the plain softmax; a scale without a mask is refused as on the device.
    plain = ttnn.scale_mask_softmax(_dev(x, device))
    assert torch.equal(ttnn.to_torch(plain), torch.softmax(x.float(), -1).bfloat16())
    with pytest.raises(ttnn.TTError, match="Scale value must not be set when mask is not present"):
        ttnn.scale_mask_softmax(_dev(x, device), 0.5)


def test_causal_mask_has_one_row_per_input_row(device):
    x = torch.randn(1, 2, 64, 64).bfloat16()
    causal = torch.full((64, 64), float("-inf")).triu(1).reshape(1, 1, 64, 64)
    out = ttnn.scale_mask_softmax(_dev(x, device), 1.0, _dev(causal, device), is_causal_mask=True)
    assert torch.equal(ttnn.to_torch(out), _reference(x, 1.0, causal).bfloat16())
    # A many-row mask without is_causal_mask is not implemented: refused, never guessed.
    with pytest.raises(ttnn.TTError, match="not implemented|implements a non-causal mask of one row"):
        ttnn.scale_mask_softmax(_dev(x, device), 1.0, _dev(causal, device))


@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.bfloat8_b])
def test_sharded_in_place_softmax_writes_the_input(device, dtype):
    batch, heads, h, w = 2, 2, 64, 64
    x = torch.randn(batch, heads, h, w) * 4
    mask = _mask(batch, w, seed=1)
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 1))})
    mc = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                           ttnn.ShardSpec(grid, [batch * heads * h // 4, w], ttnn.ShardOrientation.ROW_MAJOR))
    config = ttnn.SoftmaxShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(2, 2), subblock_w=2,
                                                       block_h=h // 32, block_w=w // 32)
    xt = _dev(x, device, dtype, memory_config=mc)
    stored = ttnn.to_torch(xt).float()  # the input as the device holds it (bfloat8_b rounds it)
    out = ttnn.scale_mask_softmax_in_place(xt, 0.5, _dev(mask, device), program_config=config, numeric_stable=True)
    assert out is xt and out.memory_config() == mc and out.dtype == dtype
    expected = ttnn.to_torch(ttnn.from_torch(_reference(stored, 0.5, mask), dtype, layout=ttnn.TILE_LAYOUT))
    assert torch.equal(ttnn.to_torch(out).float(), expected.float())
    # One program for both calls (new data, same shapes); the in-place op is counted although it returns its input.
    before = device.num_program_cache_entries()
    ttnn.scale_mask_softmax_in_place(_dev(x, device, dtype, memory_config=mc), 0.5, _dev(mask, device),
                                     program_config=config, numeric_stable=True)
    assert device.num_program_cache_entries() == before


def test_softmax_in_place(device):
    x = torch.randn(1, 2, 32, 128).bfloat16()
    xt = _dev(x, device)
    assert ttnn.softmax_in_place(xt) is xt
    assert torch.equal(ttnn.to_torch(xt), torch.softmax(x.float(), -1).bfloat16())
