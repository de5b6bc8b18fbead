"""The PCC every model test thresholds on must fail a model that emits nothing useful."""

import math

import pytest
import torch

from tests.conftest import pcc


def test_pcc_of_related_tensors():
    x = torch.randn(1000)
    assert pcc(x, x) == pytest.approx(1.0)
    assert pcc(x, 3 * x + 2) == pytest.approx(1.0)
    assert pcc(x, -x) == pytest.approx(-1.0)
    assert abs(pcc(x, torch.randn(1000))) < 0.2


@pytest.mark.parametrize("constant", [torch.zeros(512), torch.full((512,), 7.5)])
def test_constant_logits_fail_every_threshold(constant):
    ref = torch.randn(512)
    assert pcc(constant, ref) == 0.0
    assert pcc(ref, constant) == 0.0
    assert pcc(constant, constant) == 0.0


def test_nan_fails_every_threshold():
    x = torch.randn(64)
    y = x.clone()
    y[3] = float("nan")
    assert math.isnan(pcc(y, x))
    assert not pcc(y, x) >= 0.0


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError):
        pcc(torch.randn(4), torch.randn(5))
