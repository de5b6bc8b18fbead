"""bfloat8_b / bfloat4_b block-float rounding.

The fixtures were recorded from the real ttnn 0.81.1 host packer (tt_checks/oracle/gen_blockfloat_fixtures.py):
the simulator must reproduce them bit for bit. Further checks compare with an independent per-value reference
written straight from the format's definition, and check idempotence."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch

import ttnn_sim as ttnn

FIXTURES = Path(__file__).parent.parent / "fixtures" / "blockfloat_ttnn_0.81.1.npz"
FORMATS = {"bfloat8_b": (ttnn.bfloat8_b, 6), "bfloat4_b": (ttnn.bfloat4_b, 2)}


def packed(x: torch.Tensor, dtype) -> torch.Tensor:
    return ttnn.to_torch(ttnn.from_torch(x, dtype, layout=ttnn.TILE_LAYOUT)).float()


def reference_block(values: list[float], frac_bits: int) -> list[float]:
    """One 16-value block, value by value in Python floats, from the definition: shared max exponent, magnitudes of
    frac_bits + 1 bits with the explicit leading one, round half to even, saturate, denormals -> 0."""
    exps = [math.frexp(v)[1] - 1 if v != 0 and abs(v) >= 2.0**-126 else None for v in values]
    shared = max((e for e in exps if e is not None), default=None)
    if shared is None:
        return [0.0] * len(values)
    step = 2.0 ** (shared - frac_bits)
    out = []
    for v, e in zip(values, exps, strict=True):
        if e is None:
            out.append(0.0)
            continue
        m = min(round(abs(v) / step), (1 << (frac_bits + 1)) - 1)  # Python round() is half-to-even
        out.append(math.copysign(m * step, v))
    return out


@pytest.mark.parametrize("name", list(FORMATS))
def test_matches_real_ttnn_fixtures_bit_for_bit(name):
    data = np.load(FIXTURES)
    cases = sorted({k.split("__")[1] for k in data.files if k.startswith(name + "__")})
    assert len(cases) >= 4, cases
    total = 0
    for case in cases:
        x = torch.from_numpy(data[f"{name}__{case}__input"]).float()
        want = torch.from_numpy(data[f"{name}__{case}__output"]).float()
        got = packed(x, FORMATS[name][0])
        assert got.view(torch.int32).equal(want.view(torch.int32)), (
            f"{name}/{case}: {(got != want).sum()} values differ")
        total += x.numel()
    assert total >= 40000


@pytest.mark.parametrize("name", list(FORMATS))
def test_matches_definition_on_random_blocks(name):
    dtype, frac = FORMATS[name]
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(4, 64, generator=g) * torch.exp2(torch.randint(-8, 8, (4, 64), generator=g).float()))
    x = x.to(torch.bfloat16).float()
    got = packed(x, dtype)
    for r in range(4):
        for b in range(4):
            blk = x[r, b * 16 : (b + 1) * 16].tolist()
            assert got[r, b * 16 : (b + 1) * 16].tolist() == reference_block(blk, frac), (r, b)


@pytest.mark.parametrize("name", list(FORMATS))
def test_requantizing_changes_nothing(name):
    dtype = FORMATS[name][0]
    x = torch.randn(3, 40, 96) * 10
    once = packed(x, dtype)
    assert torch.equal(packed(once, dtype), once)


def test_blocks_are_16_wide_and_independent():
    x = torch.zeros(1, 32)
    x[0, :16] = 1000.0
    x[0, 16:] = 0.01
    out = packed(x, ttnn.bfloat8_b)
    assert torch.equal(out[0, 16:], packed(torch.full((1, 16), 0.01), ttnn.bfloat8_b)[0])
    # In the same block as 1000, 0.01 is far below one step of the shared exponent and flushes to zero.
    y = torch.tensor([[1000.0] + [0.01] * 15])
    assert torch.count_nonzero(packed(y, ttnn.bfloat8_b)[0, 1:]) == 0
