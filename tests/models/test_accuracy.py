"""Teacher-forced token accuracy against HF, per profile (benchmarks/accuracy.py; docs/precision.md's table is its
output): 640 positions of a fixed text, each model's top-1 next token against HF's top-1 (top-1) and HF's top-5 (top-5).

Floors are set from the measurement (benchmarks/accuracy.py --markdown; lowest measured value per profile across
SmolLM2 and the tiny families, then rounded down): reference 100/100 (fp32 pipeline, HF-exact), bf16 96.9/100,
accuracy 94.5/100, performance 92.5/100 (floor 90/98 as the project sets it), performance_bfp4 64.5/96.4 (its
3-bit gate/up mantissas move the logits of random tiny models, whose next-token distributions are flat, far more
than a trained model's: SmolLM2 measures 78.3/98.1 and TT validates this profile per model, see
tt_models/configs/models).
The simulator is deterministic, so these hold exactly until the numerics change."""

import pytest

from benchmarks.accuracy import hf_top5, measure, text_tokens
from tests.models.tiny import FAMILIES, make_tiny_model

FLOORS = {"reference": (99.0, 100.0), "bf16": (95.0, 99.0), "accuracy": (93.0, 99.0), "performance": (90.0, 98.0),
          "performance_bfp4": (60.0, 95.0)}
PREFILL, USERS, STEPS = 128, 8, 80


@pytest.fixture(scope="module")
def ids():
    return text_tokens()


@pytest.mark.parametrize("profile", sorted(FLOORS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tiny_family_accuracy(family, profile, ids, tiny_root):
    path = make_tiny_model(family, tiny_root)
    r = measure(path, profile, ids, PREFILL, USERS, STEPS)
    top1, top5 = FLOORS[profile]
    assert r["tokens"] >= 512
    assert r["top1"] >= top1 and r["top5"] >= top5, r


def test_smollm2_default_profile_accuracy(ids):
    from tt_models.checkpoint import default_model_dir

    path = default_model_dir()
    reference = hf_top5(path, ids[: PREFILL + USERS * STEPS + 1])
    r = measure(path, "performance", ids, PREFILL, USERS, STEPS, reference)
    assert r["top1"] >= FLOORS["performance"][0] and r["top5"] >= FLOORS["performance"][1], r
