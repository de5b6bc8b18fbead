"""ttnn.pearson_correlation_coefficient (the real ttnn 0.81.1's ttnn/operations/comparison.py, a host-side metric):
the PCC of a torch tensor and a torch or ttnn tensor, with its fallbacks to allclose where PCC is undefined."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .tensor import Tensor


def _allclose(expected: torch.Tensor, actual: torch.Tensor) -> float:
    return float(torch.allclose(expected, actual, rtol=1e-05, atol=1e-04))


def _mask_nonfinite(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x[torch.logical_or(torch.isnan(x), torch.isinf(x))] = 0
    return x


def pearson_correlation_coefficient(expected: Any, actual: Any) -> float:
    from .conversion import to_torch

    if isinstance(actual, Tensor):
        actual = to_torch(actual)
    if not isinstance(expected, torch.Tensor):
        raise ValueError("Expected tensor is not a torch.Tensor")
    expected, actual = torch.Tensor(expected), torch.Tensor(actual)
    if expected.dtype != actual.dtype:
        actual = actual.type(expected.dtype)
    if torch.all(torch.isnan(expected)) and torch.all(torch.isnan(actual)):
        return 1.0
    if torch.all(torch.isnan(expected)) or torch.all(torch.isnan(actual)):
        return 0.0
    if torch.any(expected.bool()) != torch.any(actual.bool()):
        return _allclose(expected, actual)
    expected, actual = _mask_nonfinite(expected), _mask_nonfinite(actual)
    if torch.equal(expected, actual):
        return 1.0
    if expected.dtype == torch.bfloat16:
        expected, actual = expected.float(), actual.float()
    if torch.max(expected) == torch.min(expected) or torch.max(actual) == torch.min(actual):
        return _allclose(expected, actual)
    out = np.ma.corrcoef(np.ma.masked_invalid(torch.squeeze(expected).detach().numpy()).flatten(),
                         np.ma.masked_invalid(torch.squeeze(actual).detach().numpy()).flatten())[0, 1]
    if isinstance(out, np.ma.core.MaskedConstant) or np.isnan(float(out)):
        return _allclose(expected, actual)
    return float(out)


__all__ = ["pearson_correlation_coefficient"]
