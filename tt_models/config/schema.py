"""Reading YAML with errors that name the file, the key and what is allowed."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

# Shipped inside the package (package data), so a wheel install finds them wherever it is run from.
CONFIG_ROOT = Path(str(files("tt_models") / "configs"))


class ConfigError(ValueError):
    """A config file is missing, malformed, or holds a key or value this package does not accept."""


def read_yaml(path: Path) -> dict:
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def check_keys(where: str, data: dict, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {list(allowed)}")
    missing = [k for k in required if k not in data]
    if missing:
        raise ConfigError(f"{where}: missing key(s) {missing}")


def check_value(where: str, key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{where}: {key}={value!r} is not one of {list(allowed)}")
    return value


def check_int(where: str, key: str, value: Any, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{where}: {key} must be an integer >= {minimum}, got {value!r}")
    return value


def named_file(kind: str, name_or_path: str | Path) -> Path:
    """`name` -> configs/<kind>/<name>.yaml; anything with a suffix or slash is taken as a path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or len(p.parts) > 1:
        return p
    path = CONFIG_ROOT / kind / f"{name_or_path}.yaml"
    if not path.exists():
        known = sorted(f.stem for f in (CONFIG_ROOT / kind).glob("*.yaml") if f.stem != "aliases")
        raise ConfigError(f"unknown {kind[:-1]} {str(name_or_path)!r}; known: {known}")
    return path
