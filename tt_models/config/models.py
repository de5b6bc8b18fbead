"""Per-model overrides (configs/models/*.yaml), matched against a model's name or directory name."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from .schema import CONFIG_ROOT, ConfigError, check_int, check_keys, named_file, read_yaml

_KEYS = ("match", "max_prefill_chunk", "token_budget", "optimizations")


@dataclass(frozen=True)
class ModelOverrides:
    source: str | None = None
    max_prefill_chunk: int | None = None
    token_budget: int | None = None
    optimizations: dict[str, str] = field(default_factory=dict)  # requested profile -> profile to use

    def profile_for(self, requested: str) -> str:
        return self.optimizations.get(requested, requested)


def _parse(path: Path) -> tuple[list[str], ModelOverrides]:
    data = read_yaml(path)
    where = str(path)
    check_keys(where, data, _KEYS, ("match",))
    patterns = data["match"]
    if not (isinstance(patterns, list) and all(isinstance(p, str) for p in patterns)):
        raise ConfigError(f"{where}: match must be a list of name patterns")
    opts = data.get("optimizations") or {}
    for requested, profile in opts.items():
        named_file("optimizations", requested)
        named_file("optimizations", profile)
    return patterns, ModelOverrides(
        source=path.stem,
        max_prefill_chunk=check_int(where, "max_prefill_chunk", data["max_prefill_chunk"], 32)
        if "max_prefill_chunk" in data else None,
        token_budget=check_int(where, "token_budget", data["token_budget"]) if "token_budget" in data else None,
        optimizations=dict(opts),
    )


def load_model_overrides(model_name: str | Path) -> ModelOverrides:
    """Overrides of the first file whose patterns match the name (or its last path component); none -> defaults."""
    names = {str(model_name), Path(str(model_name)).name}
    for path in sorted((CONFIG_ROOT / "models").glob("*.yaml")):
        patterns, overrides = _parse(path)
        if any(fnmatch.fnmatch(n, p) for n in names for p in patterns):
            return overrides
    return ModelOverrides()


def validate_all() -> None:
    """Parse every shipped model file (used by tests and at startup of tools)."""
    for path in sorted((CONFIG_ROOT / "models").glob("*.yaml")):
        _parse(named_file("models", path.stem))
