"""How a tensor is laid over a mesh: ttnn.TensorTopology (distribution shape, one placement per distribution dim,
the mesh coordinates of the devices holding it) and the placements ttnn.PlacementReplicate / ttnn.PlacementShard.

What ttnn 0.81.1 gives (measured on mock T3K meshes, probes in docs/tt-metal-unit-tests.md's all_gather section):
ReplicateTensorToMesh and ShardTensorToMesh(dim) distribute over a 1-D shape of all the mesh's devices
(MeshShape([8]) on a 1x8 or a 2x4 mesh, placements [PlacementReplicate()] / [PlacementShard(dim)], dim as the caller
spelled it); ShardTensor2dMesh over the mesh shape it names, one placement per mesh dim; a host tensor is
MeshShape([1]), replicated, at MeshCoordinate([0, 0]); an op's output keeps its input's topology, and all_gather
replicates along its cluster axis (every placement, on a 1-D distribution)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PlacementReplicate:
    def __repr__(self) -> str:
        return "PlacementReplicate()"


@dataclass(frozen=True)
class PlacementShard:
    dim: int

    def __repr__(self) -> str:
        return f"PlacementShard({self.dim})"


class DistributionShape:
    """A tensor's distribution shape: a MeshShape of any rank (1-D for the mesh mappers that spread over all
    devices); prints as ttnn prints a MeshShape."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Any) -> None:
        self._dims = tuple(int(d) for d in dims)

    def dims(self) -> int:
        return len(self._dims)

    def mesh_size(self) -> int:
        n = 1
        for d in self._dims:
            n *= d
        return n

    def __iter__(self):
        return iter(self._dims)

    def __len__(self) -> int:
        return len(self._dims)

    def __getitem__(self, i: int) -> int:
        return self._dims[i]

    def __eq__(self, other: object) -> bool:
        return tuple(other) == self._dims if isinstance(other, (DistributionShape, tuple, list)) or \
            hasattr(other, "num_rows") else NotImplemented

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return f"MeshShape({list(self._dims)})"


class TensorTopology:
    """ttnn.TensorTopology(distribution_shape, placements, mesh_coords)."""

    def __init__(self, distribution_shape: Any, placements: Any, mesh_coords: Any) -> None:
        self._shape = DistributionShape(tuple(distribution_shape))
        self._placements = list(placements)
        self._coords = list(mesh_coords)

    def distribution_shape(self) -> DistributionShape:
        return self._shape

    def placements(self) -> list[Any]:
        return list(self._placements)

    def mesh_coords(self) -> list[Any]:
        return list(self._coords)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorTopology):
            return NotImplemented
        return (self._shape == other._shape and self._placements == other._placements
                and [tuple(c) for c in self._coords] == [tuple(c) for c in other._coords])

    def __hash__(self) -> int:
        return hash((self._shape, tuple(self._placements), tuple(tuple(c) for c in self._coords)))

    def __repr__(self) -> str:
        coords = ", ".join(repr(c) for c in self._coords)
        return (f"TensorTopology(distribution_shape={self._shape!r}, placements=SmallVector({self._placements!r}), "
                f"mesh_coords={coords})")


def _coords(device: Any) -> list[Any]:
    from .device import MeshCoordinate

    rows, cols = tuple(device.shape)
    return [MeshCoordinate(r, c) for r in range(rows) for c in range(cols)]


def host_topology() -> TensorTopology:
    from .device import MeshCoordinate

    return TensorTopology((1,), [PlacementReplicate()], [MeshCoordinate(0, 0)])


def replicated(device: Any) -> TensorTopology:
    return TensorTopology((device.get_num_devices(),), [PlacementReplicate()], _coords(device))


def of_mapper(mapper: Any, device: Any) -> TensorTopology:
    """The topology from_torch gives a tensor placed on `device` with `mapper`."""
    from .conversion import ReplicateTensorToMesh, ShardTensor2dMesh, ShardTensorToMesh

    if isinstance(mapper, ShardTensorToMesh):
        return TensorTopology((device.get_num_devices(),), [PlacementShard(mapper.dim)], _coords(device))
    if isinstance(mapper, ShardTensor2dMesh):
        placements = [PlacementShard(d) if d is not None else PlacementReplicate() for d in mapper.dims]
        return TensorTopology((mapper.rows, mapper.cols), placements, _coords(device))
    if mapper is None or isinstance(mapper, ReplicateTensorToMesh):
        return replicated(device)
    return replicated(device)


def gathered(topology: TensorTopology, cluster_axis: int | None) -> TensorTopology:
    """all_gather's output topology in ttnn 0.81.1: the placement along cluster_axis replicated (every placement
    without one, or on a 1-D distribution), whatever dim was gathered (measured: a tensor sharded on dim -2 and
    gathered on dim 3 comes back PlacementReplicate())."""
    placements = topology.placements()
    if cluster_axis is None or len(placements) == 1:
        placements = [PlacementReplicate()] * len(placements)
    else:
        placements[cluster_axis] = PlacementReplicate()
    return TensorTopology(tuple(topology.distribution_shape()), placements, topology.mesh_coords())
