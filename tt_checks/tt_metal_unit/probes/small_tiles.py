"""Probe behind docs/tt-metal-unit-tests.md (issue 22): 16x32 tiles on the real ttnn 0.81.1 (mock N150), as
tt-metal's test_nlp_concat_heads.py makes them (tests/ttnn/utils_for_testing.py select_tile -> ttnn.Tile((16, 32))).

    ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/small_tiles.py

Prints, per dtype, the input's tile and padded shape, and nlp_concat_heads' output shape, padded shape and tile."""

import re

import torch
import ttnn

dev = ttnn.open_device(device_id=0)
for dt in (ttnn.bfloat16, ttnn.bfloat8_b, ttnn.float32):
    try:
        t = ttnn.from_torch(torch.randn(1, 8, 64, 128), dtype=dt, layout=ttnn.TILE_LAYOUT, tile=ttnn.Tile((16, 32)),
                            device=dev, memory_config=ttnn.DRAM_MEMORY_CONFIG)
        o = ttnn.experimental.nlp_concat_heads(t, memory_config=ttnn.L1_MEMORY_CONFIG)
        print(f"{dt}: input tile {t.tile.tile_shape} padded {list(t.padded_shape)}; output {list(o.shape)} padded "
              f"{list(o.padded_shape)} tile {o.tile.tile_shape} {o.memory_config().buffer_type}")
    except Exception as e:  # noqa: BLE001
        m = re.search(r"info:\n(.*?)\nbacktrace", str(e), re.S)
        print(f"{dt}: REJECTS {(m.group(1) if m else str(e))[:300]!r}")
ttnn.close_device(dev)
