"""Every op the simulator implements exists at the same qualified path as in the real ttnn 0.81.1 and accepts the
parameters the real op declares (names, and keyword-only where the real op is keyword-only).

tests/ttnn_api_0.81.1.json is recorded from the real library by tt_checks/oracle/dump_api.py."""

import inspect
import json
from pathlib import Path

import pytest

import ttnn_sim as ttnn

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


def mismatches(sig: inspect.Signature, overload: list[dict]) -> list[str]:
    """What keeps `sig` from accepting every call the real overload accepts (positional order included)."""
    problems = []
    ours = list(sig.parameters.values())
    positional = [p for p in overload if p["kind"] == "positional_or_keyword"]
    for i, p in enumerate(positional):
        if i >= len(ours) or ours[i].name != p["name"] or ours[i].kind is not ours[i].POSITIONAL_OR_KEYWORD:
            problems.append(f"positional parameter {i} must be {p['name']!r}")
    for p in overload:
        if p["kind"] != "keyword_only":
            continue
        mine = sig.parameters.get(p["name"])
        if mine is None or mine.kind not in (mine.KEYWORD_ONLY, mine.POSITIONAL_OR_KEYWORD):
            problems.append(f"keyword {p['name']!r} not accepted")
        elif not p["required"] and mine.default is inspect.Parameter.empty:
            problems.append(f"keyword {p['name']!r} must be optional")
    return problems


@pytest.mark.parametrize("qualname", sorted(OPS))
def test_op_exists_and_accepts_real_parameters(qualname):
    obj = resolve(qualname)
    assert obj is not None, f"{qualname} is missing from the simulator"
    overloads = OPS[qualname].get("overloads")
    if not overloads or inspect.isclass(obj):
        return
    sig = inspect.signature(obj)
    # The simulator must accept every parameter of at least one of the real op's overloads.
    results = [mismatches(sig, o) for o in overloads]
    assert any(not r for r in results), f"{qualname}{sig}: " + " | ".join("; ".join(r) for r in results)


@pytest.mark.parametrize("name", sorted(API.get("constants", {})))
def test_constants_exist(name):
    if API["constants"][name].get("exists", True):
        assert resolve(name) is not None, f"{name} is missing from the simulator"


@pytest.mark.parametrize("name", sorted(API.get("methods", {})))
def test_methods_exist(name):
    """Methods and properties real callers use on devices, tensors and config objects."""
    if not API["methods"][name]["exists"]:
        return
    cls, attr = name.rsplit(".", 1)
    obj = resolve(cls)
    assert (obj is not None and hasattr(obj, attr)) or _instance_has(cls, attr), f"{name} is missing"


def _instance_has(cls: str, attr: str) -> bool:
    """Attributes set in __init__ exist on instances only: look on one."""
    examples = {"ttnn.Tile": lambda: ttnn.Tile([32, 32]), "ttnn.MeshShape": lambda: ttnn.MeshShape(1, 1),
                "ttnn.MeshCoordinate": lambda: ttnn.MeshCoordinate(0, 0),
                "ttnn.DispatchCoreConfig": lambda: ttnn.DispatchCoreConfig()}
    return cls in examples and hasattr(examples[cls](), attr)
