"""Compare the simulator's host block-float conversion with the real ttnn 0.81.1's for the inputs of tt-metal's
eltwise/test_typecast.py (issue 22). First write the real wheel's conversions with typecast_0811.py --host-out FILE
(see its docstring), then:

    .venv/bin/python tt_checks/tt_metal_unit/probes/typecast_host_compare.py FILE

Prints, per input and block-float dtype, how many of the float32 values read back differ bit for bit."""

from __future__ import annotations

import sys

import torch

import ttnn_sim as ttnn


def main() -> int:
    saved = torch.load(sys.argv[1])
    bad = 0
    for (key, dt_name), real_bits in saved["bits"].items():
        x = saved["inputs"][key]
        t = ttnn.from_torch(x, dtype=getattr(ttnn, dt_name), layout=ttnn.TILE_LAYOUT)
        sim_bits = ttnn.to_torch(t).float().view(torch.int32)
        diff = int((sim_bits != real_bits).sum())
        bad += diff
        print(f"{key:22s} {dt_name:10s} {diff:5d} of {real_bits.numel()} values differ")
    print("bit-exact" if bad == 0 else f"{bad} values differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
