"""Probe behind docs/tt-metal-unit-tests.md (issue 22, reduce_scatter): what tt-metal's comparison helpers (the
0.81.1 wheel's tt_lib/_internal/comparison_funcs.py) do when a test hands them a ttnn.Tensor instead of a torch
tensor, as test_minimal_reduce_scatter_async.py's trace (perf) cases do with the op's returned tensor.

    ./scripts/check_real_ttnn.sh --python tt_checks/tt_metal_unit/probes/comparison_on_ttnn_tensor.py
"""

import torch
import ttnn
from tt_lib._internal.comparison_funcs import comp_equal, comp_pcc

golden = ttnn.from_torch(torch.ones(1, 1, 32, 64).bfloat16(), layout=ttnn.TILE_LAYOUT)
reference = torch.ones(1, 1, 32, 64).bfloat16()
for name, fn in (("comp_pcc", comp_pcc), ("comp_equal", comp_equal)):
    try:
        fn(golden, reference)
        print(f"{name}: no error")
    except Exception as e:  # noqa: BLE001
        print(f"{name}: {type(e).__name__}: {e}")
