"""16x32 tiles (from_torch(tile=ttnn.Tile((16, 32)))): modelled for nlp_concat_heads only, as tt-metal's
test_nlp_concat_heads.py uses them; every other op refuses such an input with a TTError naming the op. The real
0.81.1 accepts them and returns the op's output in 32x32 tiles (tt_checks/tt_metal_unit/probes/small_tiles.py)."""

import pytest
import torch

import ttnn_sim as ttnn
from ttnn_sim.errors import TTError


@pytest.fixture(scope="module")
def device():
    dev = ttnn.open_device(device_id=0)
    yield dev
    ttnn.close_device(dev)


def small(x, dev, dtype=ttnn.bfloat16):
    return ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, tile=ttnn.Tile((16, 32)), device=dev)


@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.bfloat8_b, ttnn.float32])
def test_concat_heads_on_small_tiles_matches_32x32(device, dtype):
    x = torch.randn(1, 8, 64, 128)
    a = ttnn.experimental.nlp_concat_heads(small(x, device, dtype))
    b = ttnn.experimental.nlp_concat_heads(ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, device=device))
    assert a.tile == ttnn.Tile((32, 32)) and list(a.padded_shape) == [1, 1, 64, 1024]
    assert torch.equal(ttnn.to_torch(a), ttnn.to_torch(b))


def test_other_ops_refuse_small_tiles(device):
    t = small(torch.randn(1, 1, 64, 64), device)
    assert t.tile == ttnn.Tile((16, 32))
    for name, call in [("silu", lambda: ttnn.silu(t)), ("matmul", lambda: ttnn.matmul(t, t)),
                       ("to_memory_config", lambda: ttnn.to_memory_config(t, ttnn.L1_MEMORY_CONFIG))]:
        with pytest.raises(TTError, match=f"{name}: an input stored in 16x32 tiles"):
            call()


def test_small_tiles_modelled_only_on_device_whole_blocks(device):
    with pytest.raises(TTError, match="on a device only"):
        ttnn.from_torch(torch.randn(32, 32), layout=ttnn.TILE_LAYOUT, tile=ttnn.Tile((16, 32)))
    with pytest.raises(TTError, match="whole 32x32 blocks"):
        small(torch.randn(1, 1, 48, 64), device)
    with pytest.raises(TTError, match="32x32 and 16x32 tiles only"):
        ttnn.from_torch(torch.randn(32, 32), layout=ttnn.TILE_LAYOUT, tile=ttnn.Tile((32, 16)), device=device)
