"""Tensors and conversions: dtypes, layouts and tile padding, device moves, data movement ops, meshes, caching."""

import pytest
import torch

import ttnn_sim as ttnn
from tests.sim.helpers import bf16, dev_tensor, host


def test_round_trip_dtypes(device):
    x = torch.randn(2, 3, 5, 7)
    assert torch.equal(ttnn.to_torch(ttnn.from_torch(x, ttnn.float32, device=device)), x)
    b = ttnn.to_torch(ttnn.from_torch(x, ttnn.bfloat16, device=device))
    assert b.dtype == torch.bfloat16 and torch.equal(b, x.to(torch.bfloat16))
    ids = torch.randint(0, 50000, (1, 32), dtype=torch.int32)
    back = ttnn.to_torch(ttnn.from_torch(ids, ttnn.uint32, device=device))
    assert back.dtype == torch.uint32 and torch.equal(back.to(torch.int64), ids.to(torch.int64))  # as real ttnn
    assert ttnn.from_torch(x.to(torch.bfloat16)).dtype == ttnn.bfloat16
    with pytest.raises(ttnn.TTError, match="pass dtype"):
        ttnn.from_torch(torch.zeros(2, dtype=torch.float64))


def test_tile_layout_pads_to_32():
    t = ttnn.from_torch(torch.randn(1, 3, 5, 33), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    assert t.shape == (1, 3, 5, 33) and t.padded_shape == (1, 3, 32, 64)
    r = ttnn.to_layout(t, ttnn.ROW_MAJOR_LAYOUT)
    assert r.padded_shape == r.shape == (1, 3, 5, 33)


def test_block_float_needs_tile_layout(device):
    with pytest.raises(ttnn.TTError, match="Layout must be Layout::TILE for bfloat8_b or bfloat4_b!"):
        ttnn.from_torch(torch.randn(32, 32), ttnn.bfloat8_b)
    # Untilize on the device hands bfloat8_b back as bfloat16; bfloat4_b it cannot untilize (both measured on 0.81.1).
    t = ttnn.from_torch(torch.randn(32, 32), ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device)
    r = ttnn.to_layout(t, ttnn.ROW_MAJOR_LAYOUT)
    assert r.dtype == ttnn.bfloat16 and r.layout == ttnn.ROW_MAJOR_LAYOUT
    assert torch.equal(ttnn.to_torch(r).float(), ttnn.to_torch(t).float())
    t4 = ttnn.from_torch(torch.randn(32, 32), ttnn.bfloat4_b, layout=ttnn.TILE_LAYOUT, device=device)
    with pytest.raises(ttnn.TTError, match="Only TILE layout is supported"):
        ttnn.to_layout(t4, ttnn.ROW_MAJOR_LAYOUT)


def test_typecast_rounds_into_target(device):
    x = bf16(torch.randn(1, 1, 32, 64))
    t = ttnn.typecast(dev_tensor(x, device), ttnn.bfloat4_b)
    assert t.dtype == ttnn.bfloat4_b
    # Same values as packing on the host directly.
    direct = ttnn.from_torch(x, ttnn.bfloat4_b, layout=ttnn.TILE_LAYOUT)
    assert torch.equal(host(t), ttnn.to_torch(direct).float())
    assert len(set(host(t).abs().reshape(-1, 16)[0].tolist())) <= 8


def test_data_movement(device):
    x = bf16(torch.randn(2, 3, 32, 64))
    t = dev_tensor(x, device)
    assert torch.equal(host(ttnn.reshape(t, (1, 6, 32, 64))), x.reshape(1, 6, 32, 64))
    assert torch.equal(host(ttnn.permute(t, (0, 2, 1, 3))), x.permute(0, 2, 1, 3))
    assert torch.equal(host(ttnn.transpose(t, 1, 2)), x.transpose(1, 2))
    assert torch.equal(host(ttnn.slice(t, [0, 1, 0, 16], [2, 3, 32, 48])), x[:, 1:3, :, 16:48])
    assert torch.equal(host(ttnn.concat([t, t], dim=3)), torch.cat([x, x], 3))
    assert ttnn.unsqueeze_to_4D(dev_tensor(torch.randn(5, 7), device)).shape == (1, 1, 5, 7)
    with pytest.raises(ttnn.TTError, match="Invalid arguments to reshape"):
        ttnn.reshape(t, (1, 1, 32, 64))
    # A TILE slice checks its end rounded up to whole tiles (65 -> 96), as the device op does.
    with pytest.raises(ttnn.TTError, match="Ends 96 must be less than or equal to the shape of the tensor 64"):
        ttnn.slice(t, [0, 0, 0, 0], [2, 3, 32, 65])


def test_host_tensors_are_rejected_by_ops_and_deallocation_is_enforced(device):
    x = ttnn.from_torch(torch.randn(1, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    with pytest.raises(ttnn.TTError, match="add: Input tensor A must be on device, got storage type: "
                                           "StorageType::HOST"):
        ttnn.add(x, x)
    d = ttnn.to_device(x, device)
    ttnn.deallocate(d)
    assert not d.is_allocated()
    with pytest.raises(ttnn.TTError, match="deallocated"):
        ttnn.silu(d)


def test_deallocate_without_force_spares_a_shared_buffer(device):
    """As 0.81.1 does on a mock N150 (tt_checks/tt_metal_unit/probes/deallocate_force.py): a full-range slice is
    another handle on the same buffer, which deallocate(force=False) leaves allocated for both handles; a partial
    slice is a copy of its own, and an unshared buffer goes with force=False too; forced, it goes under every
    handle."""
    def table():
        return ttnn.from_torch(torch.arange(48, dtype=torch.int32).reshape(4, 12), device=device, dtype=ttnn.int32,
                               layout=ttnn.ROW_MAJOR_LAYOUT)

    t = table()
    whole = t[:, 0:12]
    assert whole is not t
    ttnn.deallocate(whole, force=False)
    assert whole.is_allocated() and t.is_allocated()
    assert torch.equal(ttnn.to_torch(t), torch.arange(48, dtype=torch.int32).reshape(4, 12))
    part = t[:, 4:8]
    ttnn.deallocate(part, force=False)
    assert not part.is_allocated() and t.is_allocated()
    ttnn.deallocate(t, force=False)  # the full-range handle still holds the buffer
    assert t.is_allocated()
    del whole
    ttnn.deallocate(t, force=False)
    assert not t.is_allocated()
    t = table()
    ttnn.deallocate(t[:, 0:12], force=True)  # forced: the buffer goes under the original handle too
    assert not t.is_allocated()
    with pytest.raises(ttnn.TTError, match="deallocated"):
        ttnn.add(t, t)

def test_copy_host_to_device_tensor_updates_in_place(device):
    d = dev_tensor(torch.zeros(1, 1, 32, 32), device)
    view = ttnn.reshape(d, (1, 1, 1, 1024))
    new = torch.randn(1, 1, 32, 32)
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(new, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT), d)
    assert torch.equal(host(d), bf16(new))
    assert torch.equal(host(view).reshape(1, 1, 32, 32), bf16(new))  # same device buffer


def test_mesh_mappers_and_composers():
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        assert mesh.get_num_devices() == 2
        x = torch.randn(1, 1, 32, 128)
        sharded = ttnn.from_torch(x, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=mesh,
                                  mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
        assert sharded.shape == (1, 1, 32, 64)
        assert torch.equal(ttnn.to_torch(sharded, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=3)), x)
        with pytest.raises(ttnn.TTError, match="mesh_composer"):
            ttnn.to_torch(sharded)
        rep = ttnn.from_torch(x, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=mesh,
                              mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
        # Ops run per chip: each chip adds its own shard to the replicated tensor.
        both = ttnn.to_torch(ttnn.add(sharded, ttnn.slice(rep, [0, 0, 0, 0], [1, 1, 32, 64])),
                             mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=0))
        assert torch.equal(both[0], x[..., :64][0] * 2) and torch.equal(both[1], x[..., 64:][0] + x[..., :64][0])
    finally:
        ttnn.close_mesh_device(mesh)


def test_open_and_close_devices():
    assert ttnn.get_num_devices() >= 1
    dev = ttnn.open_device(device_id=0)
    with pytest.raises(ttnn.TTError, match="cannot open"):
        ttnn.open_device(device_id=0)
    ttnn.close_device(dev)
    x = ttnn.from_torch(torch.zeros(2), ttnn.float32)
    with pytest.raises(ttnn.TTError, match="closed"):
        ttnn.to_device(x, dev)


def test_as_tensor_caches_converted_weights(tmp_path, device):
    w = torch.randn(64, 64)
    name = tmp_path / "layer0.wq"
    first = ttnn.as_tensor(w, ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device, cache_file_name=name)
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and "BFLOAT8_B" in files[0].name
    again = ttnn.as_tensor(None, ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device, cache_file_name=name)
    assert torch.equal(ttnn.to_torch(first), ttnn.to_torch(again))
    with pytest.raises(ttnn.TTError, match="no cached tensor"):
        ttnn.as_tensor(None, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, cache_file_name=name)


def test_as_tensor_cache_hit_keeps_the_first_placement(tmp_path, device):
    """Real ttnn 0.81.1 on a mock N150: as_tensor with a cache file written under a width-sharded DRAM config,
    asked again with DRAM_MEMORY_CONFIG or L1_MEMORY_CONFIG, returns the width-sharded tensor (load_tensor_flatbuffer
    places the file's own spec). The simulator must not quietly honour the new memory_config."""
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(11, 0))})
    sharded = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.DRAM,
                                ttnn.ShardSpec(grid, [576, 96], ttnn.ShardOrientation.ROW_MAJOR))
    w = torch.randn(1, 1, 576, 960)
    name = tmp_path / "w"
    first = ttnn.as_tensor(w, ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device, memory_config=sharded,
                           cache_file_name=name)
    for asked in (ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG):
        again = ttnn.as_tensor(w, ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device, memory_config=asked,
                               cache_file_name=name)
        assert again.memory_config() == sharded == first.memory_config()
        assert torch.equal(ttnn.to_torch(first), ttnn.to_torch(again))
