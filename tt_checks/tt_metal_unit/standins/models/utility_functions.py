"""Stand-in for tt-metal's old ``models/utility_functions.py`` (our code, not tt-metal's).

Some of the fetched tests still import ``models.utility_functions``; in tt-metal that module moved to
``models/common/utility_functions.py`` (fetched unchanged), and the copy the index holds at the old path is from the
pre-ttnn ``tt_lib`` era (it imports ``tt_lib``), so it cannot be used. This shim re-exports the fetched
``models.common.utility_functions`` and adds the three names the old module had and the new one dropped with
Grayskull support: ``is_grayskull``, ``skip_for_grayskull`` and ``pad_by_zero``, with their original meaning
(arch check against ``ttnn.get_arch_name()``; pad a torch tensor to tile multiples and put it on the device).
"""

import torch
import ttnn
from models.common.utility_functions import *  # noqa: F401,F403
from models.common.utility_functions import nearest_32, ti_skip


def is_grayskull() -> bool:
    return "grayskull" in ttnn.get_arch_name()


def skip_for_grayskull(reason_str: str = "not working for grayskull"):
    return ti_skip(is_grayskull(), reason=reason_str)


def pad_by_zero(x: torch.Tensor, device, tt_memory_config=ttnn.DRAM_MEMORY_CONFIG, tt_dtype=ttnn.bfloat16):
    """Zero-pad the last two dims to multiples of 32, tilize, put on ``device``; returns (tensor, original shape)."""
    initial_shape = x.shape
    shape = [1] * (4 - x.dim()) + list(x.shape)
    x = x.reshape(shape)
    padded = torch.nn.functional.pad(x, (0, nearest_32(shape[3]) - shape[3], 0, nearest_32(shape[2]) - shape[2]))
    tensor = ttnn.from_torch(padded, dtype=tt_dtype, layout=ttnn.TILE_LAYOUT, device=device,
                             memory_config=tt_memory_config)
    return tensor, initial_shape
