import pytest

import ttnn_sim as ttnn


@pytest.fixture
def device():
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 20)
    yield dev
    ttnn.close_mesh_device(dev)


@pytest.fixture
def fabric():
    """The 1-D fabric the mesh collectives need, set before a mesh opens and reset after."""
    ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
    yield
    ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)
