"""Probes behind docs/tt-metal-unit-tests.md (issue 22): what the real ttnn 0.81.1 does, on the mock N150, with the
calls tt-metal's test_linear.py makes that the simulator first refused or lacked.

    ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/matmul_and_sub_devices.py

Measured 2026-11-27: every activation name below is accepted with and without core_grid except "mish" with a core
grid ("Unsupported UnaryOpType for fused activation: UnaryOpType::MISH", also as a program config's
fused_activation); optional_output_tensor gives the output its dtype and memory config, refuses another explicit
dtype and another volume; intersecting sub-devices and an out-of-range stall-group index are refused;
load_sub_device_manager segfaults on the mock device (so it runs last); ttnn.pearson_correlation_coefficient and
ttnn.SubDevice exist."""

import re

import torch
import ttnn


def verdict(name, f):
    try:
        r = f()
        print(f"{name}: OK {getattr(r, 'shape', '')} {getattr(r, 'dtype', '')}")
    except Exception as e:  # noqa: BLE001  (the verdict is the message)
        m = re.search(r"info:\n(.*?)\nbacktrace", str(e), re.S)
        print(f"{name}: REJECTS {(m.group(1) if m else str(e))[:300]!r}")


dev = ttnn.open_device(device_id=0)


def tt(x, dtype=ttnn.bfloat16, mc=None):
    return ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, device=dev, memory_config=mc)


print("pearson_correlation_coefficient:", hasattr(ttnn, "pearson_correlation_coefficient"),
      "SubDevice:", hasattr(ttnn, "SubDevice"))
a, b = tt(torch.randn(1, 64, 1024)), tt(torch.randn(1024, 1024))
for act in ("relu", "relu6", "hardsigmoid", "mish", "gelu_approx", "gelu", "sigmoid", "silu", "tanh"):
    verdict(f"linear activation={act} core_grid",
            lambda act=act: ttnn.linear(a, b, core_grid=dev.core_grid, activation=act))
    verdict(f"linear activation={act}", lambda act=act: ttnn.linear(a, b, activation=act))
mish_pc = ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(
    compute_with_storage_grid_size=(8, 4), in0_block_w=2, out_subblock_h=1, out_subblock_w=1, per_core_M=2,
    per_core_N=1, fuse_batch=True, fused_activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.MISH), mcast_in0=True)
verdict("program config fused_activation=MISH", lambda: ttnn.linear(a, b, program_config=mish_pc))
verdict("optional_output_tensor", lambda: ttnn.linear(a, b, optional_output_tensor=tt(torch.zeros(1, 64, 1024))))
verdict("optional_output_tensor bfloat8_b", lambda: ttnn.linear(
    a, b, optional_output_tensor=tt(torch.zeros(1, 64, 1024), ttnn.bfloat8_b)))
verdict("optional_output_tensor bfloat8_b, dtype=bfloat16", lambda: ttnn.linear(
    a, b, dtype=ttnn.bfloat16, optional_output_tensor=tt(torch.zeros(1, 64, 1024), ttnn.bfloat8_b)))
verdict("optional_output_tensor of another volume", lambda: ttnn.linear(
    a, b, optional_output_tensor=tt(torch.zeros(1, 32, 1024))))
verdict("optional_output_tensor in L1", lambda: ttnn.linear(
    a, b, optional_output_tensor=tt(torch.zeros(1, 64, 1024), mc=ttnn.L1_MEMORY_CONFIG)).memory_config())


def crs(y0, y1):
    return ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, y0), ttnn.CoreCoord(7, y1))})


verdict("intersecting sub-devices", lambda: dev.create_sub_device_manager(
    [ttnn.SubDevice([crs(0, 1)]), ttnn.SubDevice([crs(1, 6)])], 0))
manager = dev.create_sub_device_manager([ttnn.SubDevice([crs(0, 0)]), ttnn.SubDevice([crs(1, 6)])], 0)
verdict("stall group index past the loaded manager's sub-devices", lambda: dev.set_sub_device_stall_group(
    [ttnn.SubDeviceId(0), ttnn.SubDeviceId(1)]))
print("load_sub_device_manager (segfaults on the mock device):", flush=True)
dev.load_sub_device_manager(manager)
