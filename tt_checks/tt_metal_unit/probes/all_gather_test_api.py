"""Probe behind docs/tt-metal-unit-tests.md (issue 22, all_gather): which of the names the stored versions of tt-metal's
tests/nightly/t3000/ccl/test_all_gather.py use beyond the op itself exist in the real ttnn 0.81.1 wheel.

    ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/all_gather_test_api.py

(Names only: the mock device has no ethernet fabric to run a collective on.)"""

import ttnn

checks = {
    "Tensor.tensor_topology": hasattr(ttnn.Tensor, "tensor_topology"),
    "ttnn.using_distributed_env": hasattr(ttnn, "using_distributed_env"),
    "ttnn.apply_device_delay": hasattr(ttnn, "apply_device_delay"),
    "MeshDevice.get_view": hasattr(ttnn.MeshDevice, "get_view"),
    "ttnn._ttnn.fabric.FabricRouterConfig": hasattr(ttnn._ttnn.fabric, "FabricRouterConfig"),
    "ttnn.experimental.all_gather_async_reversed": hasattr(ttnn.experimental, "all_gather_async_reversed"),
    "ttnn.fp8_e4m3": hasattr(ttnn, "fp8_e4m3"),
    "ttnn.ShardDistributionStrategy": hasattr(ttnn, "ShardDistributionStrategy"),
    "ttnn.element_size": hasattr(ttnn, "element_size"),
    "all_gather_async.python_fully_qualified_name": hasattr(ttnn.experimental.all_gather_async,
                                                            "python_fully_qualified_name"),
}
try:
    import tracy

    checks["tracy.signpost"] = hasattr(tracy, "signpost")
except ImportError:
    checks["tracy.signpost"] = False
for name, ok in checks.items():
    print(f"{name}: {'present' if ok else 'MISSING'}")
print("NdShardSpec.__init__:", ttnn.NdShardSpec.__init__.__doc__.splitlines()[0])
