"""Probe behind docs/tt-metal-unit-tests.md (issue 22, rotary embedding): what tt-metal's
test_rotary_embedding_llama.py and models/tt_transformers/tt/rope.py (RotarySetup) ask of ttnn 0.81.1 beyond the op,
on the real ttnn (mock N150).

    ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/rope_decode_setup.py

Prints whether an opened device is a ttnn._ttnn.multi_device.MeshDevice (RotarySetup's is_mesh_device), and the
program-cache entries after RotarySetup's decode path (as_tensor, embedding, unsqueeze_to_4D, transpose, slice,
interleaved_to_sharded) plus two rotary_embedding_llama calls, run three times as the test's program-cache case does."""

import torch
import ttnn

dev = ttnn.open_device(device_id=0)
print("MeshDevice:", isinstance(dev, ttnn._ttnn.multi_device.MeshDevice), type(dev).__mro__)
print("_ttnn submodules:", sorted(n for n in dir(ttnn._ttnn) if not n.startswith("__")))
head_dim = 128
for batch in (32, 8, 1):
    before = dev.num_program_cache_entries()
    grid = dev.compute_with_storage_grid_size()
    cos_m = ttnn.from_torch(torch.randn(1, 1, 4096, head_dim), device=dev, layout=ttnn.TILE_LAYOUT, dtype=ttnn.bfloat16)
    sin_m = ttnn.from_torch(torch.randn(1, 1, 4096, head_dim), device=dev, layout=ttnn.TILE_LAYOUT, dtype=ttnn.bfloat16)
    batch_grid = ttnn.num_cores_to_corerangeset(batch, grid, row_wise=True)
    tm = ttnn.from_torch(torch.randn(1, 1, batch * 32, 32), device=dev, layout=ttnn.TILE_LAYOUT, dtype=ttnn.bfloat16,
                         memory_config=ttnn.create_sharded_memory_config(
                             shape=(32, 32), core_grid=batch_grid, strategy=ttnn.ShardStrategy.HEIGHT,
                             orientation=ttnn.ShardOrientation.ROW_MAJOR, use_height_and_width_as_shard_shape=True))
    for _ in range(3):
        pos = torch.nn.functional.pad(torch.arange(batch).reshape(1, batch), (0, (-batch) % 32), "constant", 0)
        idx = ttnn.as_tensor(pos, dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT, device=dev,
                             memory_config=ttnn.DRAM_MEMORY_CONFIG)
        cos = ttnn.embedding(idx, cos_m, layout=ttnn.TILE_LAYOUT)
        sin = ttnn.embedding(idx, sin_m, layout=ttnn.TILE_LAYOUT)
        cos = ttnn.transpose(ttnn.unsqueeze_to_4D(cos), 1, 2)
        sin = ttnn.transpose(ttnn.unsqueeze_to_4D(sin), 1, 2)
        if batch % 32:
            cos, sin = cos[:, :batch, :, :], sin[:, :batch, :, :]
        mc = ttnn.create_sharded_memory_config(shape=(32, head_dim), core_grid=batch_grid,
                                               strategy=ttnn.ShardStrategy.HEIGHT,
                                               orientation=ttnn.ShardOrientation.ROW_MAJOR,
                                               use_height_and_width_as_shard_shape=True)
        cos, sin = ttnn.interleaved_to_sharded(cos, mc), ttnn.interleaved_to_sharded(sin, mc)
        x = ttnn.from_torch(torch.randn(1, batch, 32, head_dim), device=dev, layout=ttnn.TILE_LAYOUT,
                            dtype=ttnn.bfloat16, memory_config=mc)
        for _ in range(2):
            ttnn.experimental.rotary_embedding_llama(x, cos, sin, tm, is_decode_mode=True)
    print(f"decode batch {batch}: program cache entries added {dev.num_program_cache_entries() - before}")
ttnn.close_device(dev)

# ttnn.embedding's programs alone, each on a fresh device: a TILE weight (as RotarySetup's cos/sin tables) against a
# ROW_MAJOR one, output in TILE layout.
for layout in (ttnn.TILE_LAYOUT, ttnn.ROW_MAJOR_LAYOUT):
    dev = ttnn.open_device(device_id=0)
    w = ttnn.from_torch(torch.randn(1, 1, 4096, 128), device=dev, layout=layout, dtype=ttnn.bfloat16)
    idx = ttnn.as_tensor(torch.arange(32).reshape(1, 32), dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT,
                         device=dev, memory_config=ttnn.DRAM_MEMORY_CONFIG)
    ttnn.embedding(idx, w, layout=ttnn.TILE_LAYOUT)
    n1 = dev.num_program_cache_entries()
    ttnn.embedding(idx, w, layout=ttnn.TILE_LAYOUT)
    n2 = dev.num_program_cache_entries()
    print(f"embedding, {layout} weight: {n1} program(s) on the first call, {n2} after a repeat")
    ttnn.close_device(dev)
