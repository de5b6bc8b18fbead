"""The distributed RMSNorm pair (ttnn.rms_norm_pre_all_gather / rms_norm_post_all_gather) against plain PyTorch:
on one device the stats are each row's sum of x^2 in a tile column's first column; over a mesh whose chips each hold
a slice of the columns, pre -> all_gather(stats) -> post equals the RMSNorm of the whole row, as tensor parallelism
runs it on a fractured residual (tt_transformers' tt_distributed_rmsnorm). The validation rules are held to the real
ttnn by tests/sim/test_rules.py (corpus cases tt_checks/cases_distributed_norm.py)."""

import pytest
import torch

import ttnn_sim as ttnn

EPS = 1e-5


def reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    x = x.double()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w.double()).float()


def fp32_kernel():
    return ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False,
                                            fp32_dest_acc_en=True, packer_l1_acc=True)


@pytest.fixture
def device():
    dev = ttnn.open_device(device_id=0)
    yield dev
    ttnn.close_device(dev)


def test_pre_is_the_row_sum_of_squares_in_one_tile_column(device):
    g = torch.Generator().manual_seed(0)
    x, r = torch.randn(1, 1, 64, 96, generator=g), torch.randn(1, 1, 64, 96, generator=g)
    tx = ttnn.from_torch(x, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)
    tr = ttnn.from_torch(r, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)
    stats = ttnn.rms_norm_pre_all_gather(tx, dtype=ttnn.float32, compute_kernel_config=fp32_kernel())
    assert tuple(stats.shape) == (1, 1, 64, 32) and stats.layout == ttnn.TILE_LAYOUT
    got = ttnn.to_torch(stats)
    torch.testing.assert_close(got[..., 0], x.double().pow(2).sum(-1).float(), rtol=1e-6, atol=1e-5)
    assert not got[..., 1:].any()
    # with a residual: the stats of x + residual
    got = ttnn.to_torch(ttnn.rms_norm_pre_all_gather(tx, dtype=ttnn.float32, residual_input_tensor=tr,
                                                     compute_kernel_config=fp32_kernel()))
    torch.testing.assert_close(got[..., 0], (x + r).double().pow(2).sum(-1).float(), rtol=1e-6, atol=1e-5)
    # bf16 by default: the sum rounded once
    got = ttnn.to_torch(ttnn.rms_norm_pre_all_gather(tx, compute_kernel_config=fp32_kernel()))
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got[..., 0].float(), x.pow(2).sum(-1), rtol=2**-8, atol=0)


@pytest.fixture(params=[2, 8], ids=["1x2", "1x8"])
def mesh(request):
    ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
    m = ttnn.open_mesh_device(ttnn.MeshShape(1, request.param), trace_region_size=1 << 20)
    yield m
    ttnn.close_mesh_device(m)
    ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


@pytest.mark.parametrize("precise", [True, False], ids=["fp32", "bf16"])
def test_distributed_norm_over_the_chips_equals_the_whole_row_norm(mesh, precise):
    """x [1, 1, 64, 512] split by columns over the chips, the weight split the same way ([1, 1, 512/32, 32] sticks
    sharded on dim 2, as tt_transformers' weight_distributed): each chip's output is its slice of the RMSNorm of the
    whole row."""
    n = mesh.get_num_devices()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 1, 64, 512, generator=g) * 3
    w = torch.randn(512, generator=g)
    dtype = ttnn.float32 if precise else ttnn.bfloat16
    if not precise:
        x, w = x.bfloat16().float(), w.bfloat16().float()
    tx = ttnn.from_torch(x, dtype, layout=ttnn.TILE_LAYOUT, device=mesh,
                         mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    tw = ttnn.from_torch(w.reshape(1, 1, -1, 32), dtype, layout=ttnn.ROW_MAJOR_LAYOUT, device=mesh,
                         mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=2))
    kernel = fp32_kernel()
    stats = ttnn.rms_norm_pre_all_gather(tx, dtype=dtype, compute_kernel_config=kernel)
    gathered = ttnn.all_gather(stats, 3, cluster_axis=1, topology=ttnn.Topology.Linear)
    assert tuple(gathered.shape) == (1, 1, 64, 32 * n)
    out = ttnn.rms_norm_post_all_gather(tx, gathered, epsilon=EPS, weight=tw, compute_kernel_config=kernel)
    assert tuple(out.shape) == (1, 1, 64, 512 // n) and out.dtype == dtype
    got = ttnn.to_torch(out, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=3)).float()
    want = reference(x, w)
    if precise:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    else:  # bf16 stats and output: each a rounding of about 2^-8
        torch.testing.assert_close(got, want, rtol=2**-6, atol=2**-6)
    # Each chip's own stats alone (no gather) normalise by the wrong mean: the gather is what makes it right.
    alone = ttnn.rms_norm_post_all_gather(tx, stats, epsilon=EPS, weight=tw, compute_kernel_config=kernel)
    wrong = ttnn.to_torch(alone, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=3)).float()
    assert (wrong - want).abs().max() > 0.1
