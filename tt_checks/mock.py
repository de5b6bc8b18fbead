"""Opening a mock device with the real ttnn and handing model code a recording proxy of it."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from tt_checks.recorder import Recorder, RecordingTTNN


def open_mock_device(device: str, clusters: Path, mesh_shape: tuple[int, int] | None = None
                     ) -> tuple[Any, Any, Recorder]:
    """The real ttnn, the mock `device`'s mesh (opened as the vLLM worker opens it, with the device profile's trace
    region; `mesh_shape` opens its chips in another shape, e.g. a T3K's 8 as 2x4), and the recorder every model call
    goes through."""
    desc = clusters / f"{device}.yaml"
    if not desc.exists():
        raise FileNotFoundError(f"no mock cluster descriptor {desc}")
    # The cluster is read once, when ttnn first opens a device: set before the import.
    os.environ["TT_METAL_MOCK_CLUSTER_DESC_PATH"] = str(desc)
    import ttnn

    from tt_models import backend
    from tt_models.config import load_device_profile

    logging.basicConfig(level=logging.WARNING)
    profile = load_device_profile(device)
    if profile.num_devices > 1:
        # As the vLLM worker opens a multi-chip mesh: the 1-D fabric first, which the collectives need.
        ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
    shape = mesh_shape or profile.mesh_shape
    if shape[0] * shape[1] != profile.num_devices:
        raise ValueError(f"a {shape[0]}x{shape[1]} mesh does not hold {device}'s {profile.num_devices} chips")
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(*shape), trace_region_size=profile.trace_region_size)
    rec = Recorder(ttnn, mesh)
    backend.use_ttnn(RecordingTTNN(ttnn, rec), f"real ttnn on a mock {device} (tt_checks)")
    return ttnn, mesh, rec
