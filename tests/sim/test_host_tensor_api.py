"""Host-side tensor calls as the real ttnn 0.81.1 makes them (probed on the mock N150 through
scripts/check_real_ttnn.sh --python): Tensor.to's two overloads with their keyword names, ttnn.Tensor(torch,
bfloat8_b) coming out tiled, ttnn.reshape of a host tensor, and the paged-cache ops' positions being runtime
arguments of one cached program (tt-metal's test_paged_update_cache.py asserts one entry across positions)."""

import pytest
import torch

import ttnn_sim as ttnn


def test_tensor_to_has_the_real_overloads(device):
    # Real: to(self, device, mem_config=None, cq_id=None) and to(self, target_layout).
    x = ttnn.Tensor(torch.randn(1, 1, 32, 64).bfloat16(), ttnn.bfloat16)
    tiled = x.to(ttnn.TILE_LAYOUT)
    assert tiled.layout == ttnn.TILE_LAYOUT and x.to(target_layout=ttnn.TILE_LAYOUT).layout == ttnn.TILE_LAYOUT
    on_l1 = tiled.to(device=device, mem_config=ttnn.L1_MEMORY_CONFIG)
    assert on_l1.storage_type() == ttnn.StorageType.DEVICE and on_l1.memory_config() == ttnn.L1_MEMORY_CONFIG
    assert tiled.to(device, ttnn.L1_MEMORY_CONFIG).memory_config() == ttnn.L1_MEMORY_CONFIG
    assert tiled.to(device).memory_config() == ttnn.DRAM_MEMORY_CONFIG
    assert torch.equal(ttnn.to_torch(on_l1), ttnn.to_torch(x))
    with pytest.raises(TypeError):  # the real overloads have no memory_config= keyword
        tiled.to(device, memory_config=ttnn.L1_MEMORY_CONFIG)


def test_block_float_tensor_constructor_tiles():
    # Real: Tensor(torch, bfloat8_b) -> Layout.TILE (block floats exist only in tiles); other dtypes stay row-major.
    data = torch.randn(1, 1, 32, 64)
    t = ttnn.Tensor(data, ttnn.bfloat8_b)
    assert t.layout == ttnn.TILE_LAYOUT and t.dtype == ttnn.bfloat8_b
    assert torch.equal(ttnn.to_torch(t), ttnn.to_torch(ttnn.from_torch(data, ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT)))
    assert ttnn.Tensor(data, ttnn.bfloat16).layout == ttnn.ROW_MAJOR_LAYOUT


def test_reshape_of_a_host_tensor():
    x = torch.randn(1, 4, 32, 128).bfloat16()
    # Same volume, row-major: the values keep their logical order (real: equal to torch's reshape).
    rm = ttnn.reshape(ttnn.Tensor(x, ttnn.bfloat16), ttnn.Shape([4, 32, 128]))
    assert rm.storage_type() == ttnn.StorageType.HOST and torch.equal(ttnn.to_torch(rm), x.reshape(4, 32, 128))
    # Tiled, a smaller logical shape within the same padded shape: the tiles stay, the new shape reads its region
    # (real: shape [1, 4, 8, 128], padded [1, 4, 32, 128], values equal to x[:, :, :8]).
    tiled = ttnn.reshape(ttnn.Tensor(x, ttnn.bfloat16).to(ttnn.TILE_LAYOUT), ttnn.Shape([1, 4, 8, 128]))
    assert tuple(tiled.shape) == (1, 4, 8, 128) and tuple(tiled.padded_shape) == (1, 4, 32, 128)
    assert torch.equal(ttnn.to_torch(tiled.to(ttnn.ROW_MAJOR_LAYOUT)), x[:, :, :8])


def _paged_update(device, cache, positions):
    users, heads, hd = 4, 1, 64
    x = torch.randn(1, users, 32, hd).bfloat16()
    grid = ttnn.num_cores_to_corerangeset(users, device.compute_with_storage_grid_size(), True)
    mc = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                           ttnn.ShardSpec(grid, [32, hd], ttnn.ShardOrientation.ROW_MAJOR))
    xt = ttnn.reshape(ttnn.Tensor(x, ttnn.bfloat16).to(ttnn.TILE_LAYOUT), ttnn.Shape([1, users, heads, hd]))
    ttnn.experimental.paged_update_cache(cache, xt.to(device, mc), update_idxs=positions)
    return x[0, :, :heads]


def test_paged_cache_positions_are_runtime_arguments(device):
    users, seq, hd = 4, 128, 64
    ref = torch.randn(users, 1, seq, hd).bfloat16()
    cache = ttnn.from_torch(ref, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    before = device.num_program_cache_entries()
    for positions in ([3, 20, 37, 54], [4, 21, 38, 55]):
        rows = _paged_update(device, cache, positions)
        for u, p in enumerate(positions):
            ref[u, :, p] = rows[u]
    assert device.num_program_cache_entries() == before + 1  # one program, two positions
    assert torch.equal(ttnn.to_torch(cache), ref)
    # paged_fill_cache: batch_idx is a runtime argument too.
    table = ttnn.from_torch(torch.arange(users * 2, dtype=torch.int32).reshape(users, 2), ttnn.int32, device=device)
    paged = ttnn.from_torch(torch.zeros(users * 2, 1, 64, hd), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    before = device.num_program_cache_entries()
    fills = []
    for b in range(users):
        fills.append(torch.randn(1, 1, 64, hd).bfloat16())
        ttnn.experimental.paged_fill_cache(paged, ttnn.from_torch(fills[-1], ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                                                                  device=device), table, batch_idx=b)
    assert device.num_program_cache_entries() == before + 1
    assert torch.equal(ttnn.to_torch(paged)[0::2, 0], torch.cat(fills)[:, 0])


def test_volume_is_the_physical_volume():
    # Real 0.81.1: volume() counts the tile padding, logical_volume() does not (tiled [1, 4, 8, 128]: 16384 / 4096;
    # tiled [1, 1, 30, 50]: 2048 / 1500); row-major tensors have no padding.
    tiled = ttnn.from_torch(torch.zeros(1, 1, 30, 50), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    assert (tiled.volume(), tiled.logical_volume()) == (32 * 64, 30 * 50)
    rm = ttnn.from_torch(torch.zeros(1, 1, 30, 50), ttnn.bfloat16)
    assert rm.volume() == rm.logical_volume() == 30 * 50
    # Reshape infers -1 from the logical volume.
    assert tuple(ttnn.reshape(tiled, [-1, 50]).shape) == (30, 50)
