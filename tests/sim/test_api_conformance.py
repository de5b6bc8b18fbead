"""Every op the simulator implements exists at the same qualified path as in the real ttnn 0.81.1 and accepts the
parameters the real op declares (names, and keyword-only where the real op is keyword-only).

tests/ttnn_api_0.81.1.json is recorded from the real library by scripts/ttnn_oracle/dump_api.py."""

import inspect
import json
from pathlib import Path

import pytest

from tt_models.sim import ttnn

API = json.loads((Path(__file__).parent.parent / "ttnn_api_0.81.1.json").read_text())
OPS = {name: spec for name, spec in API["ops"].items() if spec.get("exists", True)}


def resolve(qualname: str):
    obj = ttnn
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def test_recorded_api_covers_the_simulated_ops():
    for name in ("ttnn.experimental.paged_update_cache", "ttnn.transformer.paged_scaled_dot_product_attention_decode",
                 "ttnn.experimental.paged_fill_cache", "ttnn.linear", "ttnn.rms_norm", "ttnn.from_torch"):
        assert name in OPS, name


@pytest.mark.parametrize("qualname", sorted(OPS))
def test_op_exists_and_accepts_real_parameters(qualname):
    obj = resolve(qualname)
    assert obj is not None, f"{qualname} is missing from the simulator"
    params = OPS[qualname].get("parameters")
    if not params or not callable(obj) or inspect.isclass(obj):
        return
    sig = inspect.signature(obj)
    for p in params:
        if p["kind"] in ("var_positional", "var_keyword") or p["name"] in ("self", "args", "kwargs"):
            continue
        ours = sig.parameters.get(p["name"])
        assert ours is not None, f"{qualname}: parameter {p['name']!r} not accepted"
        if ours is not None and p["kind"] == "keyword_only":
            assert ours.kind in (ours.KEYWORD_ONLY, ours.POSITIONAL_OR_KEYWORD), f"{qualname}.{p['name']}"
        if ours is not None and p["kind"] == "positional_or_keyword":
            assert ours.kind is ours.POSITIONAL_OR_KEYWORD, f"{qualname}: {p['name']!r} must be positional"


@pytest.mark.parametrize("name", sorted(API.get("constants", {})))
def test_constants_exist(name):
    if API["constants"][name].get("exists", True):
        assert resolve(name) is not None, f"{name} is missing from the simulator"
