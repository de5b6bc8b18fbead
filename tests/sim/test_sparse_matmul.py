"""sparse_matmul against plain PyTorch: only the products whose sparsity entry is non-zero are computed, the rest of
the output is zero; a traced call follows the sparsity written after capture; an nnz that is not the count of
non-zero entries (a device deadlock) is refused."""

import pytest
import torch

import ttnn_sim as ttnn

E, H, I = 8, 128, 64


def pc(k: int, n: int) -> ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig:
    return ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(n // 32, 1), in0_block_w=k // 32, out_subblock_h=1,
        out_subblock_w=1, out_block_h=1, out_block_w=1, per_core_M=1, per_core_N=1, fuse_batch=False,
        fused_activation=None, mcast_in0=True)


def tile(x, device, dtype=ttnn.float32):
    return ttnn.from_torch(x, dtype, layout=ttnn.TILE_LAYOUT, device=device)


def rm(x, device):
    return ttnn.from_torch(x, ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)


def test_dense_a_sparse_b_computes_only_the_selected_products(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 2, 32, H, generator=g)
    w = torch.randn(1, E, H, I, generator=g)
    mask = torch.zeros(1, 2, 1, E)
    mask[0, 0, 0, [1, 5]] = 1.0
    mask[0, 1, 0, [0, 5, 7]] = 0.25
    out = ttnn.to_torch(ttnn.sparse_matmul(tile(x, device), tile(w, device), sparsity=rm(mask, device),
                                           program_config=pc(H, I), nnz=5))
    assert out.shape == (1, 2, 1, E, 32, I)
    want = torch.einsum("gmk,ekn->gemn", x[0], w[0]) * (mask[0, :, 0, :, None, None] != 0)
    torch.testing.assert_close(out[0, :, 0], want, rtol=1e-5, atol=1e-4)
    assert out[0, 0, 0, 2].abs().sum() == 0  # a product not selected is exactly zero


def test_sparse_a_pairs_each_block_with_its_expert(device):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, E, 32, I, generator=g)
    w = torch.randn(1, E, I, H, generator=g)
    mask = (torch.rand(1, 1, 2, E, generator=g) > 0.5).float()
    out = ttnn.to_torch(ttnn.sparse_matmul(tile(x, device), tile(w, device), sparsity=rm(mask, device),
                                           program_config=pc(I, H), is_input_a_sparse=True,
                                           is_input_b_sparse=False))
    assert out.shape == (2, E, 32, H)
    want = torch.einsum("aemk,ekn->aemn", x, w[0]) * (mask[0, 0, :, :, None, None] != 0)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-4)


def test_a_trace_replays_with_the_sparsity_written_after_capture(device):
    g = torch.Generator().manual_seed(2)
    x, w = tile(torch.randn(1, 1, 32, H, generator=g), device), tile(torch.randn(1, E, H, I, generator=g), device)
    first, second = torch.zeros(1, 1, 1, E), torch.zeros(1, 1, 1, E)
    first[..., 0] = 1.0
    second[..., 3] = 1.0
    sparsity = rm(first, device)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    out = ttnn.sparse_matmul(x, w, sparsity=sparsity, program_config=pc(H, I))
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(second, ttnn.bfloat16), sparsity)
    ttnn.execute_trace(device, tid, cq_id=0, blocking=True)
    y = ttnn.to_torch(out)[0, 0, 0]
    assert y[0].abs().sum() == 0 and y[3].abs().sum() > 0


def test_an_nnz_other_than_the_non_zero_count_is_refused(device):
    mask = torch.zeros(1, 1, 1, E)
    mask[..., :2] = 1.0
    x, w = tile(torch.randn(1, 1, 32, H), device), tile(torch.randn(1, E, H, I), device)
    with pytest.raises(ttnn.TTError, match="would deadlock"):
        ttnn.sparse_matmul(x, w, sparsity=rm(mask, device), program_config=pc(H, I), nnz=3)


def test_the_program_config_is_required(device):
    x, w = tile(torch.randn(1, 1, 32, H), device), tile(torch.randn(1, E, H, I), device)
    with pytest.raises(TypeError):
        ttnn.sparse_matmul(x, w, sparsity=rm(torch.ones(1, 1, 1, E), device))
