import os

import pytest
import torch

# Tests never depend on a TT device: force the simulator unless a developer asked otherwise.
os.environ.setdefault("TT_BACKEND", "sim")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def pcc(a: torch.Tensor, b: torch.Tensor) -> float:
    """Pearson correlation of two tensors, the accuracy figure TT model tests use. 0.0 when either side is constant
    (a model emitting constant logits correlates with nothing, and must fail every PCC threshold) and NaN when either
    holds a NaN (fails every comparison)."""
    a, b = a.double().flatten(), b.double().flatten()
    if a.shape != b.shape:
        raise ValueError(f"pcc of tensors with {a.numel()} and {b.numel()} values")
    a, b = a - a.mean(), b - b.mean()
    denom = a.norm() * b.norm()
    return 0.0 if denom == 0 else float((a @ b) / denom)
