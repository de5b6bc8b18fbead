"""Shared helpers for simulator tests: move torch data on/off the simulated device."""

import torch

from tt_models.sim import ttnn


def dev_tensor(x: torch.Tensor, device, dtype=None, layout=ttnn.TILE_LAYOUT) -> ttnn.Tensor:
    return ttnn.from_torch(x, dtype or ttnn.bfloat16, layout=layout, device=device)


def host(t: ttnn.Tensor) -> torch.Tensor:
    return ttnn.to_torch(t).float()


def bf16(x: torch.Tensor) -> torch.Tensor:
    """The values a bfloat16 device tensor holds for x."""
    return x.to(torch.bfloat16).float()
