"""Program configs with ttnn 0.81.1's constructors (keyword-only fields, same defaults): they say how an op's work
is spread over cores, and the ops check them against their inputs as the device does."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from .cores import CoreCoord, CoreRangeSet


def _coord(c: Any) -> CoreCoord:
    return c if isinstance(c, CoreCoord) else CoreCoord(*c)


@dataclass
class MatmulMultiCoreReuseProgramConfig:
    _: KW_ONLY
    compute_with_storage_grid_size: CoreCoord
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    per_core_M: int  # noqa: N815 (the real field name)
    per_core_N: int  # noqa: N815
    allowed_worker_cores: CoreRangeSet | None = None

    def __post_init__(self) -> None:
        self.compute_with_storage_grid_size = _coord(self.compute_with_storage_grid_size)


@dataclass
class MatmulMultiCoreReuseMultiCastProgramConfig:
    """2-D multicast: in0 rows over grid rows, in1 columns over grid columns (transposed with transpose_mcast)."""

    _: KW_ONLY
    compute_with_storage_grid_size: CoreCoord
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    out_block_h: int | None = None
    out_block_w: int | None = None
    per_core_M: int  # noqa: N815
    per_core_N: int  # noqa: N815
    transpose_mcast: bool
    fused_activation: Any = None
    fuse_batch: bool = True
    allowed_worker_cores: CoreRangeSet | None = None

    def __post_init__(self) -> None:
        self.compute_with_storage_grid_size = _coord(self.compute_with_storage_grid_size)
        self.out_block_h = self.out_block_h if self.out_block_h is not None else self.per_core_M
        self.out_block_w = self.out_block_w if self.out_block_w is not None else self.per_core_N


@dataclass
class MatmulMultiCoreReuseMultiCast1DProgramConfig:
    """1-D multicast: in0 (mcast_in0) or in1 broadcast over a line of cores, each core a per_core_M x per_core_N
    tile block of the output."""

    _: KW_ONLY
    compute_with_storage_grid_size: CoreCoord
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    out_block_h: int | None = None
    out_block_w: int | None = None
    per_core_M: int  # noqa: N815
    per_core_N: int  # noqa: N815
    fuse_batch: bool
    fused_activation: Any = None
    mcast_in0: bool
    gather_in0: bool = False
    hop_cores: CoreRangeSet = field(default_factory=CoreRangeSet)
    num_global_cb_receivers: int = 1
    untilize_out: bool = False
    allowed_worker_cores: CoreRangeSet | None = None
    stream_in1: bool = False

    def __post_init__(self) -> None:
        self.compute_with_storage_grid_size = _coord(self.compute_with_storage_grid_size)
        self.out_block_h = self.out_block_h if self.out_block_h is not None else self.per_core_M
        self.out_block_w = self.out_block_w if self.out_block_w is not None else self.per_core_N


@dataclass
class MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
    """Decode GEMMs whose weights are width-sharded over the DRAM banks: each bank's reader core computes its
    slice of the output width."""

    _: KW_ONLY
    in0_block_w: int
    per_core_M: int  # noqa: N815
    per_core_N: int  # noqa: N815
    fused_activation: Any = None
    num_workers_per_dram_bank: int = 1


@dataclass
class SDPAProgramConfig:
    _: KW_ONLY
    compute_with_storage_grid_size: CoreCoord
    sub_core_grids: CoreRangeSet | None = None
    q_chunk_size: int
    k_chunk_size: int
    exp_approx_mode: bool | None = None
    max_cores_per_head_batch: int = 16
    max_k_splits: int = 1
    matmul_math_fidelity: Any = None
    segmented_accumulation: bool = False

    def __post_init__(self) -> None:
        self.compute_with_storage_grid_size = _coord(self.compute_with_storage_grid_size)


@dataclass
class LayerNormShardedMultiCoreProgramConfig:
    _: KW_ONLY
    compute_with_storage_grid_size: CoreCoord
    subblock_w: int
    block_h: int
    block_w: int
    inplace: bool
    legacy_reduction: bool = False
    legacy_rsqrt: bool = False
    use_welford: bool = False

    def __post_init__(self) -> None:
        self.compute_with_storage_grid_size = _coord(self.compute_with_storage_grid_size)


@dataclass
class LayerNormDefaultProgramConfig:
    _: KW_ONLY
    legacy_reduction: bool = False
    legacy_rsqrt: bool = False
    use_welford: bool = False


MATMUL_PROGRAM_CONFIGS = (MatmulMultiCoreReuseProgramConfig, MatmulMultiCoreReuseMultiCastProgramConfig,
                          MatmulMultiCoreReuseMultiCast1DProgramConfig,
                          MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig)


@dataclass
class SoftmaxDefaultProgramConfig:
    """The interleaved softmax program (ttnn 0.81.1: no fields)."""


@dataclass
class SoftmaxShardedMultiCoreProgramConfig:
    """Sharded softmax: each of the grid's cores holds block_h x block_w tiles of the input and normalises its rows in
    place; subblock_w tiles go through the compute engine at a time (a kernel choice, no effect on values)."""

    _: KW_ONLY
    compute_with_storage_grid_size: CoreCoord
    subblock_w: int
    block_h: int
    block_w: int

    def __post_init__(self) -> None:
        self.compute_with_storage_grid_size = _coord(self.compute_with_storage_grid_size)
