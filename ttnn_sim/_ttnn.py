"""``ttnn._ttnn``: the real library's compiled module, of which code outside ttnn reaches one name.

tt-metal's model helpers (models/tt_transformers/tt/rope.py RotarySetup, and others) test
``isinstance(device, ttnn._ttnn.multi_device.MeshDevice)``. In ttnn 0.81.1 an opened single device is that class too
(probed on the mock N150: tt_checks/tt_metal_unit/probes/rope_decode_setup.py), as it is here.
"""

from types import SimpleNamespace

from .device import MeshDevice

multi_device = SimpleNamespace(MeshDevice=MeshDevice)


def __getattr__(name: str):
    # ttnn._ttnn.fabric: tt-metal's CCL tests build a FabricRouterConfig through it (imported lazily: ccl imports
    # this package's device module).
    if name == "fabric":
        from . import ccl

        return SimpleNamespace(FabricRouterConfig=ccl.FabricRouterConfig, FabricConfig=ccl.FabricConfig,
                               FabricReliabilityMode=ccl.FabricReliabilityMode,
                               FabricTensixConfig=ccl.FabricTensixConfig, FabricUDMMode=ccl.FabricUDMMode,
                               FabricManagerMode=ccl.FabricManagerMode, set_fabric_config=ccl.set_fabric_config,
                               get_fabric_config=ccl.get_fabric_config)
    raise AttributeError(f"module 'ttnn._ttnn' has no attribute {name!r}")
