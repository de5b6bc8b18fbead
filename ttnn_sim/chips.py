"""The chips the simulator can be: grid and memory as the real ttnn 0.81.1 reports them for a mock N150 (Wormhole
n150, one harvested row, dispatch on a worker row: 8x8 workers) and a mock P150 (Blackhole p150). TT_SIM_CHIP picks
one (default wormhole_b0); the vLLM worker sets it from the device profile's arch. The L1 unreserved base is where
the real 0.81.1's circular-buffer errors put the start of a program's buffers (max L1 size 1,499,136 B on the N150,
1,572,864 B on the P150, minus the allocator's L1 bank size)."""

from __future__ import annotations

import os

from .allocator import ChipSpec
from .errors import TTError

CHIPS = {
    "wormhole_b0": ChipSpec(arch="wormhole_b0", grid=(8, 8), dram_banks=12, dram_bank_bytes=1_072_693_184,
                            l1_bank_bytes=1_393_312, dram_alignment=32, l1_alignment=16, allocator_alignment=32,
                            l1_unreserved_base=105_824),
    "blackhole": ChipSpec(arch="blackhole", grid=(13, 10), dram_banks=8, dram_bank_bytes=4_277_141_376,
                          l1_bank_bytes=1_461_120, dram_alignment=64, l1_alignment=16, allocator_alignment=64,
                          l1_unreserved_base=111_744),
}


def current_chip() -> ChipSpec:
    name = os.environ.get("TT_SIM_CHIP", "wormhole_b0").strip().lower()
    if name not in CHIPS:
        raise TTError("open_device", f"TT_SIM_CHIP={name!r}: expected one of {sorted(CHIPS)}")
    return CHIPS[name]
