"""``ttnn.core``: the real module holds the memory-config and core-grid helpers the top-level ``ttnn`` re-exports.

Tests ``import ttnn.core``; the simulator keeps those helpers in its own modules and gathers the shared ones here
under their real names so that import (and ``ttnn.core.<name>``) works.
"""

from .cores import num_cores_to_corerangeset, num_cores_to_corerangeset_in_subcoregrids
from .memory import (
    BufferType,
    MemoryConfig,
    ShardOrientation,
    ShardStrategy,
    TensorMemoryLayout,
    create_sharded_memory_config,
)

__all__ = [
    "BufferType",
    "MemoryConfig",
    "ShardOrientation",
    "ShardStrategy",
    "TensorMemoryLayout",
    "create_sharded_memory_config",
    "num_cores_to_corerangeset",
    "num_cores_to_corerangeset_in_subcoregrids",
]
