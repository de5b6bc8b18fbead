"""The placement-based mesh mapping API of ttnn 0.81.1 (ttnn.MeshMapperConfig, ttnn.PlacementReplicate,
ttnn.PlacementShard, ttnn.create_mesh_mapper) and ttnn.get_device_tensors.

A MeshMapperConfig lists one placement per mesh dimension (rows, then columns): replicate along it, or shard the
tensor's `dim` over it; mesh_shape_override maps onto another shape of the same devices, row-major."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .conversion import ShardTensor2dMesh
from .errors import TTError
from .tensor import Tensor


@dataclass(frozen=True)
class PlacementReplicate:
    def __repr__(self) -> str:
        return "PlacementReplicate()"


@dataclass(frozen=True)
class PlacementShard:
    dim: int

    def __repr__(self) -> str:
        return f"PlacementShard({self.dim})"


class MeshMapperConfig:
    def __init__(self, placements: list[Any], mesh_shape_override: Any = None) -> None:
        self.placements = list(placements)
        self.mesh_shape_override = mesh_shape_override


def create_mesh_mapper(mesh_device: Any, config: MeshMapperConfig) -> ShardTensor2dMesh:
    shape = tuple(config.mesh_shape_override) if config.mesh_shape_override is not None else tuple(mesh_device.shape)
    if len(shape) != 2 or len(config.placements) != 2:
        raise TTError("create_mesh_mapper", f"the simulator maps onto 2-D meshes; got shape {shape}, placements "
                                            f"{config.placements}")
    if shape[0] * shape[1] != mesh_device.get_num_devices():
        # ttnn 0.81.1 places such a tensor on a submesh (SUBMESH mode: an override that fits the mesh per dimension)
        # and leaves the other devices without a buffer; the simulator's mesh tensors hold one buffer per device.
        raise TTError("create_mesh_mapper", f"the simulator does not model a mesh tensor on part of the mesh "
                                            f"(mesh_shape_override {shape} on a {tuple(mesh_device.shape)} mesh)")
    dims = tuple(p.dim if isinstance(p, PlacementShard) else None for p in config.placements)
    return ShardTensor2dMesh(mesh_device, dims, shape)


def get_device_tensors(tensor: Tensor) -> list[Tensor]:
    """One tensor per device of the mesh (row-major), each holding that device's buffer."""
    return [Tensor.make([tensor.shard(i)], tensor.dtype, tensor.layout, None) for i in range(tensor.num_shards)]


__all__ = ["MeshMapperConfig", "PlacementReplicate", "PlacementShard", "create_mesh_mapper", "get_device_tensors"]
