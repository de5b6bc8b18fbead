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


@pytest.fixture(autouse=True)
def _weight_cache(tmp_path_factory, monkeypatch):
    # Converted TT weights go to a per-session folder, never the user's cache.
    monkeypatch.setenv("TT_VLLM_CACHE", str(tmp_path_factory.getbasetemp() / "tt_cache"))
