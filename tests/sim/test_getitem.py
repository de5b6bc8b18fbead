"""ttnn.Tensor.__getitem__ (ttnn 0.81.1's ttnn/operations/core.py): ints and slices become one ttnn.slice on a
device tensor and int-indexed dims are squeezed; a TILE table handed to ttnn.embedding costs an untilize program of
its own in the program cache (measured: tt_checks/tt_metal_unit/probes/rope_decode_setup.py); ttnn._ttnn.multi_device
.MeshDevice is the device class."""

import pytest
import torch

import ttnn_sim as ttnn


@pytest.fixture
def device():
    dev = ttnn.open_device(device_id=0)
    yield dev
    ttnn.close_device(dev)


@pytest.mark.parametrize("layout", [ttnn.TILE_LAYOUT, ttnn.ROW_MAJOR_LAYOUT])
def test_getitem_matches_torch(device, layout):
    x = torch.randn(1, 32, 32, 64).bfloat16()
    t = ttnn.from_torch(x, layout=layout, device=device)
    for index in [(slice(None), slice(None, 8)), (0, slice(2, 10)), (Ellipsis, slice(0, 32)), (slice(None), 3)]:
        got = ttnn.to_torch(t[index])
        assert torch.equal(got, x[index]), index


def test_getitem_errors(device):
    t = ttnn.from_torch(torch.randn(1, 2, 32, 32), layout=ttnn.TILE_LAYOUT, device=device)
    with pytest.raises(IndexError):
        t[0, 0, 0, 0, 0]
    with pytest.raises(IndexError):
        t[:, 5]
    with pytest.raises(ValueError):
        t[..., ...]


@pytest.mark.parametrize("layout, programs", [(ttnn.TILE_LAYOUT, 2), (ttnn.ROW_MAJOR_LAYOUT, 1)])
def test_embedding_tile_table_untilize_program(device, layout, programs):
    w = ttnn.from_torch(torch.randn(1, 1, 64, 128), dtype=ttnn.bfloat16, layout=layout, device=device)
    i = ttnn.from_torch(torch.arange(32).reshape(1, 32), dtype=ttnn.uint32, device=device)
    before = device.num_program_cache_entries()
    ttnn.embedding(i, w, layout=ttnn.TILE_LAYOUT)
    ttnn.embedding(i, w, layout=ttnn.TILE_LAYOUT)
    assert device.num_program_cache_entries() - before == programs


def test_ttnn_module_mesh_device_class(device):
    assert isinstance(device, ttnn._ttnn.multi_device.MeshDevice)
