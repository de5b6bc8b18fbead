"""Device profiles (configs/devices/*.yaml) and the MESH_DEVICE environment variable."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .schema import CONFIG_ROOT, ConfigError, check_int, check_keys, named_file, read_yaml

_KEYS = ("mesh_shape", "max_batch_per_device", "max_context", "max_prefill_chunk", "trace_region_size")


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    mesh_shape: tuple[int, int]
    max_batch_per_device: int
    max_context: int
    max_prefill_chunk: int
    trace_region_size: int

    @property
    def num_devices(self) -> int:
        return self.mesh_shape[0] * self.mesh_shape[1]


def _aliases() -> dict[str, str]:
    return read_yaml(CONFIG_ROOT / "devices" / "aliases.yaml")


def load_device_profile(name: str) -> DeviceProfile:
    name = _aliases().get(name, name)
    path = named_file("devices", name)
    data = read_yaml(path)
    check_keys(str(path), data, _KEYS, _KEYS)
    shape = data["mesh_shape"]
    if not (isinstance(shape, list) and len(shape) == 2):
        raise ConfigError(f"{path}: mesh_shape must be [rows, cols], got {shape!r}")
    return DeviceProfile(
        name=path.stem,
        mesh_shape=(check_int(str(path), "mesh_shape[0]", shape[0]), check_int(str(path), "mesh_shape[1]", shape[1])),
        **{k: check_int(str(path), k, data[k]) for k in _KEYS[1:]},
    )


def mesh_shape_from_env(default_num_devices: int = 1) -> tuple[int, int]:
    """MESH_DEVICE as a profile name (N150, N300, T3K, ...) or "(r, c)"; unset -> (1, number of devices)."""
    value = os.environ.get("MESH_DEVICE", "").strip()
    if not value:
        return (1, default_num_devices)
    m = re.fullmatch(r"\(?\s*(\d+)\s*,\s*(\d+)\s*\)?", value)
    if m:
        return (int(m.group(1)), int(m.group(2)))
    try:
        return load_device_profile(value).mesh_shape
    except ConfigError:
        known = sorted(set(_aliases()))
        raise ConfigError(f"MESH_DEVICE={value!r}: expected one of {known} or '(rows, cols)'") from None
