"""Probe behind docs/tt-metal-unit-tests.md (issue 22): tt-metal's eltwise/test_typecast.py (wusatosi/tt-metal fork,
58df1629) on the real ttnn 0.81.1 (mock N150), and the host block-float conversion the simulator must match.

    TT_METAL_MOCK_CLUSTER_DESC_PATH=tt_checks/mock_device/clusters/N150.yaml \
      ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/typecast_0811.py [--host-out FILE]

Part 1 runs each of the file's 40 cases - its own test functions, imported unchanged from the fetched copy in
.cache/tt-metal-tests - with a minimal stand-in for pytest (parametrize is recorded and expanded here; .venv-ttnn has
no pytest) and a device from ttnn.open_device. A mock device computes nothing (values read back as zeros), so a case
reaching its PCC assertion means every ttnn call in it was ACCEPTED; an exception before that is a REJECTION.

Part 2 converts each case's input data on the host (from_torch to bfloat8_b / bfloat4_b, to_torch) and writes the
float32 bits to a .pt file, which tt_checks/tt_metal_unit/probes/typecast_host_compare.py compares with the
simulator's host conversion of the same data."""

from __future__ import annotations

import itertools
import sys
import types
from pathlib import Path

import torch
import ttnn

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache" / "tt-metal-tests"
TEST = "tests.ttnn.unit_tests.operations.eltwise.test_typecast"


def _fake_pytest() -> types.ModuleType:
    mod = types.ModuleType("pytest")

    class _Mark:
        def parametrize(self, names, values):
            def deco(fn):
                fn.__dict__.setdefault("_params", []).insert(0, (names, list(values)))
                return fn
            return deco

        def skipif(self, *a, **k):
            return lambda fn: fn

    mod.mark = _Mark()
    return mod


def cases(module):
    for name in dir(module):
        fn = getattr(module, name)
        if not (name.startswith("test_") and callable(fn)):
            continue
        params = fn.__dict__.get("_params", [])
        for combo in itertools.product(*[v for _, v in params]):
            yield name, fn, dict(zip([n for n, _ in params], combo, strict=True))


def main() -> None:
    sys.modules["pytest"] = _fake_pytest()
    sys.path.insert(0, str(CACHE))
    module = __import__(TEST, fromlist=["*"])
    dev = ttnn.open_device(device_id=0)
    accepted = rejected = 0
    for name, fn, kw in cases(module):
        label = f"{name}[{kw['output_dtype']}]"
        try:
            fn(device=dev, **kw)
            print(f"ACCEPTED (passed)  {label}")
            accepted += 1
        except AssertionError:
            print(f"ACCEPTED (pcc assertion on mock zeros)  {label}")
            accepted += 1
        except Exception as e:  # noqa: BLE001
            msg = str(e)
            if "info:" in msg:
                msg = msg.split("info:", 1)[1].split("backtrace", 1)[0]
            print(f"REJECTED  {label}: {type(e).__name__}: {msg.strip()[:300]}")
            rejected += 1
    ttnn.close_device(dev)
    print(f"total: {accepted} accepted, {rejected} rejected")

    if "--host-out" in sys.argv:
        out = Path(sys.argv[sys.argv.index("--host-out") + 1])
        data = host_inputs(module)
        bits = {}
        for key, x in data.items():
            for dt_name in ("bfloat8_b", "bfloat4_b"):
                t = ttnn.from_torch(x, dtype=getattr(ttnn, dt_name), layout=ttnn.TILE_LAYOUT)
                bits[(key, dt_name)] = ttnn.to_torch(t).float().view(torch.int32).clone()
        torch.save({"inputs": data, "bits": bits}, out)
        print(f"host conversions written to {out}")


def host_inputs(module) -> dict:
    """The float inputs the file feeds to bfloat8_b (and that bfloat4_b outputs would see)."""
    full = module.create_full_range_tensor(torch.Size([1, 1, 64, 64]), torch.bfloat16)

    def lin(lo, hi, dtype):
        return torch.linspace(lo, hi, 1024, dtype=dtype).float().reshape(1, 1, 32, 32)

    return {
        "full_range_bf16": full.float(),
        "full_range_fp32": module.create_full_range_tensor(torch.Size([1, 1, 64, 64]), torch.float32),
        "linspace_int32_range": lin(-2147483647, 2139095040, torch.bfloat16),
        "linspace_0_32700": lin(0, 32700, torch.bfloat16),
        "linspace_m100_100": lin(-100, 100, torch.bfloat16),
        "int32_full": lin(-2147483647, 2147483647, torch.int32),
        "uint16_full": lin(0, 65535, torch.int32),
        "uint8_full": lin(0, 255, torch.int32),
    }


if __name__ == "__main__":
    main()
