"""``ttnn._ttnn``: the real library's compiled module, of which code outside ttnn reaches one name.

tt-metal's model helpers (models/tt_transformers/tt/rope.py RotarySetup, and others) test
``isinstance(device, ttnn._ttnn.multi_device.MeshDevice)``. In ttnn 0.81.1 an opened single device is that class too
(probed on the mock N150: tt_checks/tt_metal_unit/probes/rope_decode_setup.py), as it is here.
"""

from types import SimpleNamespace

from .device import MeshDevice

multi_device = SimpleNamespace(MeshDevice=MeshDevice)
