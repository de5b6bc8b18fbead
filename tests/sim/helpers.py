"""Shared helpers for simulator tests: move torch data on/off the simulated device."""

import torch

import ttnn_sim as ttnn


def dev_tensor(x: torch.Tensor, device, dtype=None, layout=ttnn.TILE_LAYOUT, memory_config=None) -> ttnn.Tensor:
    return ttnn.from_torch(x, dtype or ttnn.bfloat16, layout=layout, device=device, memory_config=memory_config)


def per_user(users: int, rows: int, width: int, first_core: int = 0) -> ttnn.MemoryConfig:
    """Height-sharded, one user per core: each user's [rows (padded to a tile), width] on its own core, users laid
    row by row over the 8x8 grid starting at core number first_core, as decode inputs are."""
    grid = ttnn.num_cores_to_corerangeset(first_core + users, ttnn.CoreCoord(8, 8), True)
    if first_core:
        grid = grid.subtract(ttnn.num_cores_to_corerangeset(first_core, ttnn.CoreCoord(8, 8), True))
    spec = ttnn.ShardSpec(grid, [-(-rows // 32) * 32, width], ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)


def host(t: ttnn.Tensor) -> torch.Tensor:
    return ttnn.to_torch(t).float()


def bf16(x: torch.Tensor) -> torch.Tensor:
    """The values a bfloat16 device tensor holds for x."""
    return x.to(torch.bfloat16).float()


def open_mesh(rows: int, cols: int):
    return ttnn.open_mesh_device(ttnn.MeshShape(rows, cols), trace_region_size=1 << 20)
