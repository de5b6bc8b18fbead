"""Optimization profiles: the precision of each tensor group and the math fidelity of each op group, with optional
per-decoder-layer overrides (configs/optimizations/*.yaml)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .schema import ConfigError, check_keys, check_value, named_file, read_yaml

TENSOR_GROUPS = ("WQKV", "WO", "FF1_FF3", "FF2", "KV_CACHE", "ACTIVATION", "RESIDUAL", "LM_HEAD")
PRECISIONS = ("BFP4", "BFP8", "BF16", "FP32")
OP_GROUPS = ("LI_FF1_FF3", "LI_FF2", "LI_QKV_DECODE", "LI_O_DECODE", "SDPA_DECODE", "LI_QKV_PREFILL", "LI_O_PREFILL",
             "SDPA_PREFILL")
FIDELITIES = ("LOFI", "HIFI2", "HIFI2_NA", "HIFI2_FP16", "HIFI4", "HIFI4_FP32")
# Which precisions each group may use: computed values are never bfloat4_b, weights never float32, and the
# residual stream (every matmul output) is bf16 or fp32.
_ALLOWED = {g: ("BFP4", "BFP8", "BF16") for g in ("WQKV", "WO", "FF1_FF3", "FF2", "LM_HEAD")}
_ALLOWED.update(KV_CACHE=("BFP8", "BF16", "FP32"), ACTIVATION=("BFP8", "BF16", "FP32"), RESIDUAL=("BF16", "FP32"))


@dataclass(frozen=True)
class OptimizationProfile:
    name: str
    precisions: dict[str, str]
    fidelities: dict[str, str]
    layers: dict[int, dict[str, dict[str, str]]] = field(default_factory=dict)
    simulator_only: bool = False  # needs the simulator's reference precision (fp32 beyond what a device takes)

    def cache_tag(self, n_layers: int) -> str:
        """Names converted-weight caches: changes whenever a weight precision would."""
        body = json.dumps([self.precisions, {k: v.get("precision") for k, v in self.layers.items()}, n_layers],
                          sort_keys=True, default=str)
        return f"{self.name}-{hashlib.sha1(body.encode()).hexdigest()[:10]}"

    def precision(self, group: str, layer: int | None = None) -> str:
        if group not in TENSOR_GROUPS:
            raise ConfigError(f"unknown tensor group {group!r}; known: {list(TENSOR_GROUPS)}")
        return self.layers.get(layer, {}).get("precision", {}).get(group, self.precisions[group])

    def fidelity(self, op_group: str, layer: int | None = None) -> str:
        if op_group not in OP_GROUPS:
            raise ConfigError(f"unknown op group {op_group!r}; known: {list(OP_GROUPS)}")
        return self.layers.get(layer, {}).get("fidelity", {}).get(op_group, self.fidelities[op_group])


def hardware_profiles() -> list[str]:
    """The shipped profiles a device can run (every one but those marked simulator_only)."""
    root = named_file("optimizations", "performance").parent
    return sorted(p.stem for p in root.glob("*.yaml") if not read_yaml(p).get("simulator_only", False))


def _section(where: str, data: dict, groups: tuple, values: tuple, complete: bool) -> dict[str, str]:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping")
    check_keys(where, data, groups, groups if complete else ())
    out = {k: check_value(where, k, v, values) for k, v in data.items()}
    for k, v in out.items():
        if k in _ALLOWED:
            check_value(where, k, v, _ALLOWED[k])
    return out


def load_optimizations(name_or_path: str | Path) -> OptimizationProfile:
    path = named_file("optimizations", name_or_path)
    data = read_yaml(path)
    check_keys(str(path), data, ("base", "precision", "fidelity", "layers", "simulator_only"))
    base = load_optimizations(data["base"]) if "base" in data else None
    complete = base is None
    prec = _section(f"{path}: precision", data.get("precision", {}), TENSOR_GROUPS, PRECISIONS, complete)
    fid = _section(f"{path}: fidelity", data.get("fidelity", {}), OP_GROUPS, FIDELITIES, complete)
    layers: dict[int, dict] = dict(base.layers) if base else {}
    for layer, over in (data.get("layers") or {}).items():
        where = f"{path}: layers.{layer}"
        if not isinstance(layer, int) or layer < 0:
            raise ConfigError(f"{where}: layer keys must be non-negative integers")
        check_keys(where, over, ("precision", "fidelity"))
        layers[layer] = {
            "precision": _section(f"{where}.precision", over.get("precision", {}), TENSOR_GROUPS, PRECISIONS, False),
            "fidelity": _section(f"{where}.fidelity", over.get("fidelity", {}), OP_GROUPS, FIDELITIES, False),
        }
    return OptimizationProfile(
        name=Path(path).stem,
        precisions={**(base.precisions if base else {}), **prec},
        fidelities={**(base.fidelities if base else {}), **fid},
        layers=layers,
        simulator_only=bool(data.get("simulator_only", base.simulator_only if base else False)),
    )
