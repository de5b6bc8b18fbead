"""A functional simulator of the ttnn API subset LLMs use, computed with PyTorch.

Same names, arguments and rules as the real `ttnn` (tile padding, layouts, block-float rounding, paged-cache
semantics, trace capture/replay), so model code runs here unchanged and on hardware unchanged.
"""

from . import _ttnn, experimental, transformer
from .all_to_all import all_to_all_combine, all_to_all_dispatch, moe_expert_token_remap
from .ccl import (
    FabricConfig,
    FabricManagerMode,
    FabricReliabilityMode,
    FabricRouterConfig,
    FabricTensixConfig,
    FabricUDMMode,
    ReduceType,
    Topology,
    all_gather,
    all_reduce,
    apply_device_delay,
    create_global_semaphore,
    get_fabric_config,
    reduce_scatter,
    reset_global_semaphore_value,
    set_fabric_config,
    using_distributed_env,
)
from .clamp import clamp
from .comparison import pearson_correlation_coefficient
from .conversion import (
    ConcatMesh2dToTensor,
    ConcatMeshToTensor,
    ReplicateTensorToMesh,
    ShardTensor2dMesh,
    ShardTensorToMesh,
    as_tensor,
    concat_mesh_to_tensor_composer,
    copy_host_to_device_tensor,
    deallocate,
    empty,
    from_device,
    from_torch,
    replicate_tensor_to_mesh_mapper,
    shard_tensor_to_mesh_mapper,
    to_device,
    to_layout,
    to_torch,
    typecast,
    zeros,
)
from .copy_op import copy
from .cores import (
    CoreCoord,
    CoreGrid,
    CoreRange,
    CoreRangeSet,
    num_cores_to_corerangeset,
    num_cores_to_corerangeset_in_subcoregrids,
)
from .data_movement import (
    clone,
    concat,
    interleaved_to_sharded,
    permute,
    reshape,
    sharded_to_interleaved,
    slice,
    to_memory_config,
    transpose,
    unsqueeze_to_4D,
)
from .device import (
    Arch,
    Device,
    MeshCoordinate,
    MeshDevice,
    MeshShape,
    close_device,
    close_mesh_device,
    get_arch_name,
    get_device_ids,
    get_memory_view,
    get_num_devices,
    get_num_pcie_devices,
    open_device,
    open_mesh_device,
    synchronize_device,
)
from .distributed_norm import rms_norm_post_all_gather, rms_norm_pre_all_gather
from .eltwise import add, eq, exp, fill, ge, gt, log, mul, multiply, silu, softmax, sub, subtract
from .embedding import EmbeddingsType, embedding
from .errors import TTError
from .events import MeshEvent, event_synchronize, record_event, wait_for_event
from .fused_softmax import scale_mask_softmax, scale_mask_softmax_in_place, softmax_in_place
from .generic_reduction import sum  # noqa: A004  (ttnn.sum)
from .golden import get_golden_function
from .matmul import linear, matmul
from .memory import (
    DRAM_MEMORY_CONFIG,
    L1_BLOCK_SHARDED_MEMORY_CONFIG,
    L1_HEIGHT_SHARDED_MEMORY_CONFIG,
    L1_MEMORY_CONFIG,
    L1_WIDTH_SHARDED_MEMORY_CONFIG,
    BufferType,
    MemoryConfig,
    NdShardSpec,
    ShardDistributionStrategy,
    ShardOrientation,
    ShardSpec,
    ShardStrategy,
    TensorMemoryLayout,
    create_sharded_memory_config,
)
from .mesh_mapping import (
    MeshMapperConfig,
    PlacementReplicate,
    PlacementShard,
    TensorTopology,
    create_mesh_mapper,
    get_device_tensors,
)
from .normalization import rms_norm
from .padding import fill_implicit_tile_padding
from .program_configs import (
    LayerNormDefaultProgramConfig,
    LayerNormShardedMultiCoreProgramConfig,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
    SDPAProgramConfig,
    SoftmaxDefaultProgramConfig,
    SoftmaxShardedMultiCoreProgramConfig,
)
from .reduction import argmax, plus_one, topk
from .sampling import manual_seed, sampling
from .sparse_matmul import sparse_matmul
from .subdevice import SubDevice, SubDeviceId, SubDeviceManagerId
from .tensor import Tensor
from .trace import begin_trace_capture, end_trace_capture, execute_trace, release_trace
from .types import *  # noqa: F403  (the dtype/layout/config names of the real namespace)

IS_SIMULATOR = True

from .getitem import getitem as _getitem  # noqa: E402

Tensor.__getitem__ = _getitem  # as ttnn/__init__.py attaches ttnn.operations.core.__getitem__


def _attach_golden_functions() -> None:
    import sys

    from .golden import attach
    from .operations import accept_queue_ids

    accept_queue_ids(sys.modules[__name__])  # before attach: the golden functions go on the ops callers see
    attach(sys.modules[__name__])


_attach_golden_functions()

__all__ = [name for name in dir() if not name.startswith("_")]
