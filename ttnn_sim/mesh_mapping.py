"""The placement-based mesh mapping API of ttnn 0.81.1 (ttnn.MeshMapperConfig, ttnn.PlacementReplicate,
ttnn.PlacementShard, ttnn.create_mesh_mapper) and ttnn.get_device_tensors.

A MeshMapperConfig lists one placement per mesh dimension (rows, then columns): replicate along it, or shard the
tensor's `dim` over it. mesh_shape_override maps onto another shape of the same devices, row-major, or, when it fits
inside the mesh per dimension, onto that submesh (0.81.1's SUBMESH mode): the tensor then lives on the first
rows x cols chips, which the simulator models as a tensor on a submesh view of those chips."""

from __future__ import annotations

from typing import Any

from .conversion import ShardTensor2dMesh
from .errors import TTError
from .tensor import Tensor
from .topology import PlacementReplicate, PlacementShard, TensorTopology


class MeshMapperConfig:
    def __init__(self, placements: list[Any], mesh_shape_override: Any = None) -> None:
        self.placements = list(placements)
        self.mesh_shape_override = mesh_shape_override


class _SubmeshMapper(ShardTensor2dMesh):
    """A mapper onto the first rows x cols chips of the mesh (0.81.1's SUBMESH mode): from_torch places the tensor
    on that submesh, the other chips hold no buffer of it."""

    def device_for(self, mesh_device: Any) -> Any:
        return mesh_device.submesh_view((self.rows, self.cols))


def create_mesh_mapper(mesh_device: Any, config: MeshMapperConfig) -> ShardTensor2dMesh:
    mesh = tuple(mesh_device.shape)
    shape = tuple(config.mesh_shape_override) if config.mesh_shape_override is not None else mesh
    if len(shape) != 2 or len(config.placements) != 2:
        raise TTError("create_mesh_mapper", f"the simulator maps onto 2-D meshes; got shape {shape}, placements "
                                            f"{config.placements}")
    dims = tuple(p.dim if isinstance(p, PlacementShard) else None for p in config.placements)
    if shape[0] * shape[1] == mesh_device.get_num_devices():
        return ShardTensor2dMesh(mesh_device, dims, shape)  # the whole mesh, row-major
    if shape[0] <= mesh[0] and shape[1] <= mesh[1]:
        return _SubmeshMapper(mesh_device, dims, shape)
    raise TTError("create_mesh_mapper", f"the simulator does not model mesh_shape_override {shape} on a {mesh} mesh "
                                        f"(neither the mesh's size nor a submesh of it)")


def get_device_tensors(tensor: Tensor) -> list[Tensor]:
    """One tensor per device of the mesh (row-major), each holding that device's buffer."""
    return [Tensor.make([tensor.shard(i)], tensor.dtype, tensor.layout, None) for i in range(tensor.num_shards)]


__all__ = ["MeshMapperConfig", "PlacementReplicate", "PlacementShard", "TensorTopology", "create_mesh_mapper",
           "get_device_tensors"]
