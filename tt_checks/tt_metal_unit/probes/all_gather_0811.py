"""Probe behind docs/tt-metal-unit-tests.md (issue 22, all_gather): what the real ttnn 0.81.1 does, on a mock T3K,
with the calls tests/nightly/t3000/ccl/test_all_gather.py (0152fafb) makes beyond the plain gather - all_gather's
output_tensor= and its refusals, the output's TensorTopology, ND-sharded placement (its refusals and per-core
bytes), apply_device_delay, and experimental.all_gather_async with use_broadcast. The simulator follows each verdict
and message (tests/sim/test_ccl.py). A mock device computes no values: only verdicts, specs and addresses count.

    TT_METAL_MOCK_CLUSTER_DESC_PATH=$PWD/tt_checks/mock_device/clusters/T3K.yaml \\
        ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/all_gather_0811.py
"""

import torch
import ttnn


def run(name, f):
    try:
        r = f()
        print(f"== {name}: OK", "" if r is None else r)
    except Exception as e:  # noqa: BLE001  (the real TT_FATAL text is the result)
        s = str(e)
        i = s.find("backtrace")
        print(f"== {name}: {type(e).__name__}: {s[: i if i > 0 else 600][:600]}")


# --- 2x4 mesh, FABRIC_1D: topologies from the mappers and after all_gather ---
ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
mesh = ttnn.open_mesh_device(ttnn.MeshShape(2, 4), trace_region_size=90112)


def on_mesh(shape, mapper):
    return ttnn.from_torch(torch.rand(shape).bfloat16(), layout=ttnn.TILE_LAYOUT, device=mesh, mesh_mapper=mapper)


a = on_mesh([2, 2, 32, 128], ttnn.ShardTensor2dMesh(mesh, dims=(None, 3), mesh_shape=(2, 4)))
print("ShardTensor2dMesh (None, 3):", repr(a.tensor_topology()))
b = ttnn.all_gather(a, 3, cluster_axis=1)
print("gathered on cluster_axis 1:", repr(b.tensor_topology()))
t = a.tensor_topology()
placements = list(t.placements())
placements[1] = ttnn.PlacementReplicate()
print("== TensorTopology(...) equal:", b.tensor_topology() == ttnn.TensorTopology(t.distribution_shape(), placements,
                                                                                   t.mesh_coords()))
flat = on_mesh([2, 2, 32, 256], ttnn.ShardTensorToMesh(mesh, dim=3))
print("ShardTensorToMesh on 2x4:", repr(flat.tensor_topology()))
a0 = on_mesh([1, 1, 64, 32], ttnn.ShardTensor2dMesh(mesh, dims=(2, None), mesh_shape=(2, 4)))
run("(2, None) gathered on cluster_axis 0", lambda: repr(ttnn.all_gather(a0, 2, cluster_axis=0).tensor_topology()))
run("(2, None) gathered on cluster_axis 1", lambda: repr(ttnn.all_gather(a0, 3, cluster_axis=1).tensor_topology()))
print("host tensor:", repr(ttnn.from_torch(torch.rand(1, 1, 32, 32)).tensor_topology()))
print("add keeps the input's:", repr(ttnn.add(a, a).tensor_topology()))
ttnn.close_mesh_device(mesh)
ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)

# --- 1x8 mesh, FABRIC_1D_RING ---
ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D_RING)
mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 8), trace_region_size=90112)


def mk(shape, layout=ttnn.TILE_LAYOUT, dtype=ttnn.bfloat16, mc=ttnn.DRAM_MEMORY_CONFIG, mapper=None):
    return ttnn.from_torch(torch.rand(shape), layout=layout, dtype=dtype, memory_config=mc, device=mesh,
                           mesh_mapper=mapper or ttnn.ReplicateTensorToMesh(mesh))


x = mk([1, 1, 32, 32])
run("output_tensor wrong dtype",
    lambda: ttnn.all_gather(x, dim=-1, output_tensor=mk([1, 1, 32, 256], dtype=ttnn.bfloat8_b)))
run("output_tensor wrong layout",
    lambda: ttnn.all_gather(x, dim=-1, output_tensor=mk([1, 1, 32, 256], layout=ttnn.ROW_MAJOR_LAYOUT)))
run("output_tensor wrong rank", lambda: ttnn.all_gather(x, dim=-1, output_tensor=mk([1, 1, 1, 32, 256])))
run("output_tensor wrong shape", lambda: ttnn.all_gather(x, dim=-1, output_tensor=mk([1, 1, 32, 128])))
run("invalid dim", lambda: ttnn.all_gather(mk([256]), dim=-2, output_tensor=mk([2048])))
out = mk([1, 1, 32, 256])


def good():
    r = ttnn.all_gather(x, dim=-1, output_tensor=out)
    return (r.buffer_address() == out.buffer_address(), [repr(p) for p in r.tensor_topology().placements()])


run("output_tensor accepted (same buffer, placements)", good)
xs = mk([1, 1, 256, 256], mapper=ttnn.ShardTensorToMesh(mesh, dim=-2))
print("ShardTensorToMesh(dim=-2):", repr(xs.tensor_topology()))
run("sharded on -2, gathered on 3", lambda: repr(ttnn.all_gather(xs, dim=3).tensor_topology()))
run("apply_device_delay", lambda: ttnn.apply_device_delay(mesh, [[400000, 0, 0, 0, 0, 0, 0, 800000]]))
run("apply_device_delay, 2 rows", lambda: ttnn.apply_device_delay(mesh, [[1] * 8, [1] * 8]))
run("apply_device_delay, 2 cols", lambda: ttnn.apply_device_delay(mesh, [[1, 2]]))
print("using_distributed_env:", ttnn.using_distributed_env())

grid8 = ttnn.num_cores_to_corerangeset(8, ttnn.CoreCoord(8, 8), row_wise=True)


def nd(shape, buf=ttnn.BufferType.L1, grid=grid8):
    return ttnn.MemoryConfig(buf, ttnn.NdShardSpec(ttnn.Shape(shape), grid))


def place(shape, mc, layout=ttnn.TILE_LAYOUT):
    return repr(ttnn.from_torch(torch.rand(shape).bfloat16(), layout=layout, memory_config=mc, device=mesh)
                .memory_config())[:160]


run("ND tile shard 16x64", lambda: place([1, 1, 64, 128], nd([1, 1, 16, 64])))
run("ND row-major shard 8x64", lambda: place([1, 1, 64, 128], nd([1, 1, 8, 64]), ttnn.ROW_MAJOR_LAYOUT))
run("ND shard rank above the tensor's", lambda: place([64, 128], nd([1, 1, 32, 64])))
run("ND DRAM core off row 0", lambda: place([1, 1, 64, 128], nd([1, 1, 32, 64], ttnn.BufferType.DRAM,
                                                               ttnn.num_cores_to_corerangeset(9, ttnn.CoreCoord(8, 8),
                                                                                              row_wise=True))))
for shape, shard, cores in (([1, 1, 128, 512], [1, 1, 64, 64], 8), ([1, 1, 128, 512], [1, 1, 32, 32], 4),
                            ([3, 8, 64, 64], [2, 1, 32, 64], 8)):
    mc = nd(shard, grid=ttnn.num_cores_to_corerangeset(cores, ttnn.CoreCoord(8, 8), row_wise=True))
    t1 = ttnn.from_torch(torch.rand(shape).bfloat16(), layout=ttnn.TILE_LAYOUT, memory_config=mc, device=mesh)
    t2 = ttnn.from_torch(torch.rand(shape).bfloat16(), layout=ttnn.TILE_LAYOUT, memory_config=mc, device=mesh)
    print(f"ND bytes per core {shape} in {shard} over {cores} cores:", t1.buffer_address() - t2.buffer_address())
    ttnn.deallocate(t1)
    ttnn.deallocate(t2)


def nd_gather(oshape, dim, layout, mi, mo):
    inp = ttnn.from_torch(torch.rand(oshape), layout=layout, dtype=ttnn.bfloat16, memory_config=mi, device=mesh,
                          mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=dim))
    return list(ttnn.all_gather(inp, dim=dim, memory_config=mo).shape)


run("ND gather, tile",
    lambda: nd_gather([1, 1, 128, 512], -1, ttnn.TILE_LAYOUT, nd([1, 1, 64, 64]), nd([1, 1, 64, 64])))
run("ND gather, row-major", lambda: nd_gather([1, 1, 64, 512], -1, ttnn.ROW_MAJOR_LAYOUT, nd([1, 1, 8, 64]),
                                              nd([1, 1, 8, 64])))
crs = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 7))})
sems = [ttnn.create_global_semaphore(mesh, crs, 0) for _ in range(2)]
run("all_gather_async use_broadcast", lambda: list(ttnn.experimental.all_gather_async(
    mk([1, 1, 32, 256], mapper=ttnn.ShardTensorToMesh(mesh, dim=3)), dim=3, multi_device_global_semaphore=sems,
    num_links=1, topology=ttnn.Topology.Ring, use_broadcast=True).shape))
ttnn.close_mesh_device(mesh)
