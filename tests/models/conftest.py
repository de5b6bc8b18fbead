import pytest

from tt_models.backend import ttnn


@pytest.fixture
def mesh_device():
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 24)
    yield dev
    ttnn.close_mesh_device(dev)


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny_models")
