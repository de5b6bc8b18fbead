"""The API around the ops that real callers (tt-metal's own tests, tt_transformers) use, with the behaviour measured on
the real ttnn 0.81.1 on a mock N150 (scripts/check_real_ttnn.sh --python, probes quoted per test)."""

import pytest
import torch

import ttnn_sim as ttnn

# Real: Tile(shape) -> face_shape, num_faces, partial_face, narrow_tile, tile bytes in bf16 / fp32 / bfloat8_b.
REAL_TILES = {
    (32, 32): ([16, 16], 4, 0, 0, 2048, 4096, 1088),
    (16, 32): ([16, 16], 2, 1, 0, 1024, 2048, 544),
    (32, 16): ([16, 16], 2, 0, 1, 1024, 2048, 544),
    (16, 16): ([16, 16], 1, 1, 1, 512, 1024, 272),
    (8, 32): ([8, 16], 2, 1, 0, 512, 1024, 272),
    (4, 32): ([4, 16], 2, 1, 0, 256, 512, 144),
    (2, 32): ([2, 16], 2, 1, 0, 128, 256, 80),
    (1, 32): ([1, 16], 2, 1, 0, 64, 128, 48),
}


@pytest.mark.parametrize("shape", sorted(REAL_TILES))
def test_tile_matches_the_real_one(shape):
    t = ttnn.Tile(list(shape))
    got = (t.face_shape, t.num_faces, t.partial_face, t.narrow_tile, t.get_tile_size(ttnn.bfloat16),
           t.get_tile_size(ttnn.float32), t.get_tile_size(ttnn.bfloat8_b))
    assert got == REAL_TILES[shape]
    assert t == ttnn.Tile(shape) and t.tile_shape == list(shape)


def test_tile_rejects_what_hardware_has_no_faces_for():
    with pytest.raises(ttnn.TTError, match="Tile size is not valid for our hardware"):
        ttnn.Tile([64, 32])


def test_tensor_constructors(device):
    # Tensor(torch, dtype) is a host row-major tensor; Tensor(values, shape, dtype, layout) builds from a list.
    x = ttnn.Tensor(torch.ones(2, 3), ttnn.bfloat16)
    assert (tuple(x.shape), x.dtype, x.layout, x.storage_type()) == ((2, 3), ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT,
                                                                     ttnn.StorageType.HOST)
    v = ttnn.Tensor([1.0, 2.0, 3.0, 4.0], [1, 1, 2, 2], ttnn.DataType.FLOAT32, ttnn.Layout.ROW_MAJOR)
    assert torch.equal(ttnn.to_torch(v), torch.tensor([1.0, 2.0, 3.0, 4.0]).reshape(1, 1, 2, 2))
    with pytest.raises(ttnn.TTError, match="do not fill"):
        ttnn.Tensor([1.0, 2.0, 3.0], [1, 1, 2, 2], ttnn.DataType.FLOAT32, ttnn.Layout.ROW_MAJOR)
    # .to(layout) on the host; the logical shape stays, the padded one grows to whole tiles.
    t = v.to(ttnn.TILE_LAYOUT)
    assert t.layout == ttnn.TILE_LAYOUT and tuple(t.padded_shape) == (1, 1, 32, 32)
    # Tensor(torch, dtype, device, layout) and the mem_config keyword place it on the device.
    d = ttnn.Tensor(torch.ones(2, 3), ttnn.bfloat16, device, ttnn.TILE_LAYOUT)
    assert d.storage_type() == ttnn.StorageType.DEVICE and d.memory_config() == ttnn.DRAM_MEMORY_CONFIG
    d1 = ttnn.Tensor(torch.ones(2, 3), data_type=ttnn.bfloat16, device=device, layout=ttnn.TILE_LAYOUT,
                     mem_config=ttnn.L1_MEMORY_CONFIG)
    assert d1.memory_config().buffer_type == ttnn.BufferType.L1
    # Tensor(other) is another handle on the same tensor.
    same = ttnn.Tensor(d1)
    assert same is not d1 and torch.equal(ttnn.to_torch(same), ttnn.to_torch(d1))


def test_host_reshape_keeps_the_tiled_buffer():
    # Real: a tiled host [1, 1, 30, 50] (padded 32x64) reshapes to [1, 1, 50, 30] (padded 64x32) or [30, 50], and
    # refuses [1, 1, 15, 100] whose padding (32x128) would not hold the same buffer.
    x = ttnn.from_torch(torch.arange(1500.0).reshape(1, 1, 30, 50), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    assert tuple(x.reshape([1, 1, 50, 30]).padded_shape) == (1, 1, 64, 32)
    assert tuple(x.reshape([30, 50]).shape) == (30, 50)
    with pytest.raises(ttnn.TTError, match=r"Physical data size 2048 should be same as volume indicated by "
                                           r"physical shape \(32, 128\)"):
        x.reshape([1, 1, 15, 100])
    rm = ttnn.from_torch(torch.arange(12.0).reshape(3, 4), ttnn.float32)
    assert torch.equal(ttnn.to_torch(rm.reshape(2, 6)), torch.arange(12.0).reshape(2, 6))


def _t(device, shape, **kw):
    return ttnn.from_torch(torch.zeros(shape), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device, **kw)


def test_program_cache_counts_programs_as_the_device_does(device):
    # Real 0.81.1: the cache is on from the start; add of two shapes is one program, softmax of two shapes two;
    # an op repeated adds nothing; disabling clears and stops counting.
    assert device.num_program_cache_entries() == 0
    ttnn.add(_t(device, [1, 1, 32, 64]), _t(device, [1, 1, 32, 64]))
    ttnn.add(_t(device, [1, 1, 64, 128]), _t(device, [1, 1, 64, 128]))
    assert device.num_program_cache_entries() == 1
    ttnn.softmax(_t(device, [1, 1, 32, 64]), -1)
    ttnn.softmax(_t(device, [1, 1, 64, 128]), -1)
    ttnn.softmax(_t(device, [1, 1, 64, 128]), -1)
    assert device.num_program_cache_entries() == 3
    ttnn.mul(_t(device, [1, 1, 32, 64]), _t(device, [1, 1, 32, 64]))
    assert device.num_program_cache_entries() == 4
    x = _t(device, [1, 1, 32, 64])
    ttnn.reshape(x, [1, 32, 64])  # a view (outer dims only): no program
    assert device.num_program_cache_entries() == 4
    device.set_program_cache_misses_allowed(False)
    # Real: 'Device operation "UnaryDeviceOperation": program cache miss occurred, but cache misses are forbidden'
    with pytest.raises(ttnn.TTError, match="program cache miss occurred, but cache misses are forbidden"):
        ttnn.silu(x)
    ttnn.mul(x, x)  # a hit is fine
    device.set_program_cache_misses_allowed(True)
    device.clear_program_cache()
    assert device.num_program_cache_entries() == 0
    device.disable_and_clear_program_cache()
    ttnn.add(x, x)
    assert device.num_program_cache_entries() == 0
    device.enable_program_cache()
    ttnn.add(x, x)
    assert device.num_program_cache_entries() == 1


def test_mesh_shape_and_coordinate():
    assert tuple(ttnn.MeshShape(s0=2, s1=4)) == (2, 4) == tuple(ttnn.MeshShape([2, 4])) == tuple(ttnn.MeshShape(2, 4))
    assert ttnn.MeshShape(1, 2).dims() == 2 and ttnn.MeshShape(2, 4).mesh_size() == 8
    c = ttnn.MeshCoordinate(0, 1)
    assert c.dims() == 2 and c[1] == 1 and list(c) == [0, 1] and c == ttnn.MeshCoordinate([0, 1])
    assert ttnn.MeshCoordinate([1, 2, 3]).dims() == 3


def test_dispatch_core_config():
    # Real defaults: WORKER on ROW; ETH dispatch cannot take the COL axis.
    c = ttnn.DispatchCoreConfig()
    assert (c.type, c.axis) == (ttnn.DispatchCoreType.WORKER, ttnn.DispatchCoreAxis.ROW)
    assert ttnn.DispatchCoreConfig(axis=ttnn.DispatchCoreAxis.COL).axis == ttnn.DispatchCoreAxis.COL
    with pytest.raises(ttnn.TTError, match="COL axis is not supported for ETH dispatch core type"):
        ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.COL)
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), dispatch_core_config=c)
    ttnn.close_mesh_device(dev)


def test_fill_implicit_tile_padding(device):
    # Real: the output takes the input's placement whatever memory_config says; row-major and host inputs refused.
    x = _t(device, [1, 1, 30, 50], memory_config=ttnn.L1_MEMORY_CONFIG)
    out = ttnn.fill_implicit_tile_padding(x, 1.0, memory_config=ttnn.DRAM_MEMORY_CONFIG)
    assert out.memory_config() == ttnn.L1_MEMORY_CONFIG and tuple(out.shape) == (1, 1, 30, 50)
    with pytest.raises(ttnn.TTError, match="FillPad should only be used for tile layout"):
        ttnn.fill_implicit_tile_padding(ttnn.to_layout(x, ttnn.ROW_MAJOR_LAYOUT), 1.0)
    with pytest.raises(ttnn.TTError, match="Device Operations expect device tensors as inputs"):
        ttnn.fill_implicit_tile_padding(ttnn.from_torch(torch.zeros(1, 1, 32, 32), ttnn.bfloat16,
                                                        layout=ttnn.TILE_LAYOUT), 1.0)


def test_golden_functions_agree_with_the_simulated_ops(device):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1, 1, 32, 64, generator=g), torch.randn(1, 1, 32, 64, generator=g)
    w = torch.randn(1, 1, 64, 32, generator=g)

    def dev(t):
        return ttnn.from_torch(t, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)

    cases = [
        (ttnn.add, (a, b), lambda: ttnn.add(dev(a), dev(b))),
        (ttnn.mul, (a, b), lambda: ttnn.mul(dev(a), dev(b))),
        (ttnn.silu, (a,), lambda: ttnn.silu(dev(a))),
        (ttnn.matmul, (a, w), lambda: ttnn.matmul(dev(a), dev(w))),
        (ttnn.transpose, (a, 2, 3), lambda: ttnn.transpose(dev(a), 2, 3)),
        (ttnn.concat, ([a, b], 3), lambda: ttnn.concat([dev(a), dev(b)], 3)),
    ]
    for op, args, run in cases:
        ref = ttnn.get_golden_function(op)(*args)
        assert torch.allclose(ttnn.to_torch(run()).float(), ref, atol=1e-4, rtol=1e-4), op.__name__
    with pytest.raises(RuntimeError, match="does not have a golden function"):
        ttnn.get_golden_function(ttnn.experimental.rotary_embedding_llama)
