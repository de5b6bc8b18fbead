"""Typed, validated access to configs/*.yaml: optimization profiles, device profiles, per-model overrides."""

from .devices import DeviceProfile, load_device_profile, mesh_shape_from_env
from .models import ModelOverrides, load_model_overrides
from .optimizations import OptimizationProfile, load_optimizations
from .schema import ConfigError

__all__ = [
    "ConfigError",
    "DeviceProfile",
    "ModelOverrides",
    "OptimizationProfile",
    "load_device_profile",
    "load_model_overrides",
    "load_optimizations",
    "mesh_shape_from_env",
]
