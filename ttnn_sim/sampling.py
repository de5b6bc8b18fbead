"""On-device sampling: ttnn.sampling (top-k / top-p / temperature over candidate values) and ttnn.manual_seed (the
per-user random number generators it draws from).

The device runs one core per user (up to 32); each core keeps its own PRNG, which manual_seed seeds (all cores, one
core, or a list of users) and every sampling call advances by one draw (a nonzero `seed` given to the op instead
reseeds every core at each launch, so all users share one draw). Semantics are the 0.81.1 kernels' (the wheel ships
their sources: ttnn/cpp/ttnn/operations/reduction/{sampling,manual_seed}/device/kernels).

The simulator keeps one torch.Generator per (chip, user core) on the mesh device, so a user's draws depend only on
its own seed and how many draws it made: the same seeded user samples the same tokens whoever else is in the batch.
The device's PRNG bits are its own; the simulator matches the distribution, not the bit stream.
"""

from __future__ import annotations

from typing import Any

import torch

from .compute import _recording, output, per_device
from .memory import DRAM_MEMORY_CONFIG
from .placement import check_placement
from .rules import rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout

MAX_USERS = 32
_IDS = (DataType.UINT32, DataType.INT32)

S = rules("sampling", "reduction/sampling/device/sampling_device_operation.cpp")
SAMPLING_ON_DEVICE = S("Device Operations expect device tensors as inputs", "sampling/values-host", "sampling/ok",
                       source="ttnn/api/ttnn/device_operation.hpp")
SAMPLING_VALUES_INTERLEAVED = S("Only INTERLEAVED memory layout is supported for inputs!",
                                "sampling/values-height-sharded", "sampling/values-l1")
SAMPLING_VALUES_DTYPE = S("Only BFLOAT16 is supported for inputs!", "sampling/values-fp32", "sampling/values-bfp8",
                          "sampling/ok")
SAMPLING_VALUES_TILE = S("Only TILE_LAYOUT is supported for inputs!", "sampling/values-row-major", "sampling/ok")
SAMPLING_INDICES_INTERLEAVED = S("Only INTERLEAVED memory layout is supported for inputs!",
                                 "sampling/indices-height-sharded", "sampling/indices-l1")
SAMPLING_INDICES_DTYPE = S("Only UINT32 & INT32 dtypes are supported for input indices!", "sampling/indices-uint16",
                           "sampling/indices-bf16", "sampling/uint32-indices")
SAMPLING_INDICES_RM = S("Only ROW_MAJOR is supported for input indices!", "sampling/indices-tile", "sampling/ok")
SAMPLING_SAME_SHAPE = S("Input values and indices must have the same shape!", "sampling/indices-shape",
                        "sampling/ok")
SAMPLING_RANK = S("Sampling input_values must be rank-4; got rank {}", "sampling/rank-3", "sampling/ok")
SAMPLING_NC = S("Sampling requires input dims 0 and 1 (N, C) to be 1; got [{}, {}, {}, {}]!", "sampling/batch-2",
                "sampling/ok")
SAMPLING_USERS = S("Sampling currently supports between 1 and 32 users (one core per user); got {}!",
                   "sampling/users-33", "sampling/users-1")
SAMPLING_W_TILES = S("Input inner dim ({}) must be non-zero and divisible by 32, pad if needed!", "sampling/w-50",
                     "sampling/w-32")
SAMPLING_W_POW2 = S("Input inner dim ({}) must yield a power-of-2 number of tiles (Wt = W/32 = {}); pad W up to "
                    "the next power-of-2 multiple of 32 (e.g. with -inf values and dummy indices) if needed!",
                    "sampling/w-96", "sampling/w-128")
SAMPLING_OUT_DTYPE = S("Only UINT32 & INT32 dtypes are supported for outputs!", "sampling/output-bf16",
                       "sampling/output-int32")
SAMPLING_OUT_INTERLEAVED = S("Only INTERLEAVED memory layout is supported for outputs!",
                             "sampling/output-height-sharded", "sampling/output-ok")
SAMPLING_OUT_SHAPE = S("Sampling preallocated output logical shape must be [1,1,1,{}] (input dim 2), got "
                       "[{},{},{},{}]", "sampling/output-shape", "sampling/output-ok")
SAMPLING_K_DTYPE = S("Only UINT32 & INT32 dtypes are supported for k!", "sampling/k-uint16", "sampling/k-bf16",
                     "sampling/int32-k")
SAMPLING_P_DTYPE = S("Only BFLOAT16 dtypes are supported for p!", "sampling/p-fp32", "sampling/ok")
SAMPLING_TEMP_DTYPE = S("Only BFLOAT16 dtypes are supported for temp!", "sampling/temp-fp32", "sampling/ok")
SAMPLING_K_RM = S("Only ROW_MAJOR layout is supported for k!", "sampling/k-tile", "sampling/k-l1")
SAMPLING_P_RM = S("Only ROW_MAJOR layout is supported for p!", "sampling/p-tile", "sampling/ok")
SAMPLING_TEMP_RM = S("Only ROW_MAJOR layout is supported for temp!", "sampling/temp-tile", "sampling/ok")
SAMPLING_K_SHAPE = S("k must have shape [{}] (one per user)!", "sampling/k-4d", "sampling/k-16",
                     "sampling/users-8-params-32", "sampling/users-8")
SAMPLING_P_SHAPE = S("p must have shape [{}] (one per user)!", "sampling/p-16", "sampling/ok")
SAMPLING_TEMP_SHAPE = S("temp must have shape [{}] (one per user)!", "sampling/temp-16", "sampling/ok")


def _ml(t: Tensor) -> bool:
    return not t.memory_config().is_sharded()


def _rngs(dev: Any) -> list[list[torch.Generator]]:
    """Per chip, per user core: the PRNGs ttnn.manual_seed seeds and ttnn.sampling draws from."""
    rngs = getattr(dev, "_sampling_rngs", None)
    if rngs is None:
        rngs = [[_generator(0) for _ in range(MAX_USERS)] for _ in range(dev.get_num_devices())]
        dev._sampling_rngs = rngs
    return rngs


def _generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(int(seed) & 0xFFFFFFFF)
    return g


def _chip_ids(n: int) -> Tensor:
    """A host tensor whose shard c holds c: lets a per-device computation (and its trace replay) know its chip."""
    return Tensor.make([torch.tensor([c]) for c in range(n)], DataType.INT32, Layout.ROW_MAJOR, None)


def sample_rows(values: torch.Tensor, ids: torch.Tensor, k: torch.Tensor, p: torch.Tensor, temp: torch.Tensor,
                uniforms: torch.Tensor) -> torch.Tensor:
    """The 0.81.1 kernel's math for rows of users (its compute and writer kernels, shipped in the wheel): the 32
    best of the W values (ties to the lowest position), those past k masked, scaled by temp (1/T), softmax over them
    in bf16; top-p keeps the best tokens up to and including the first whose cumulative probability exceeds p (all
    k if none does; p=0 keeps the best only); the user's uniform draw picks the first kept token whose cumulative
    share of the kept mass exceeds it, the best one if rounding leaves none. Returns ids [U] of the picks."""
    top = torch.sort(values.float(), dim=-1, descending=True, stable=True)
    n = min(MAX_USERS, values.shape[-1])
    order, x = top.indices[:, :n], top.values[:, :n]
    rank = torch.arange(n)[None, :]
    kept = rank < k.long().clamp(1, MAX_USERS)[:, None]  # k=0 masks nothing but leaves the best: the same pick
    x = x.masked_fill(~kept, float("-inf")) * temp.float()[:, None]
    probs = torch.softmax(x, dim=-1).to(torch.bfloat16).float()
    before = torch.cumsum(probs, dim=-1) - probs
    kept &= (before <= p.float()[:, None]) | (rank == 0)
    probs = torch.where(kept, probs, torch.zeros(()))
    cdf = torch.cumsum(probs, dim=-1) / probs.sum(-1, keepdim=True)
    above = (cdf > uniforms[:, None]) & kept
    pick = torch.where(above.any(-1), above.float().argmax(-1), torch.zeros((), dtype=torch.long))
    return torch.gather(ids.long(), 1, torch.gather(order, 1, pick[:, None]))[:, 0]


def _uniforms(cores: list[torch.Generator], users: int) -> torch.Tensor:
    """One draw per user core, on the device's 16-bit lattice: u = (hi * 256 + lo) / 65536 from two 8-bit PRNG
    digits, so u lies in [0, 1 - 2**-16]."""
    bits = torch.cat([torch.randint(0, 1 << 16, (1,), generator=cores[u]) for u in range(users)])
    return bits.float() / 65536


@device_op(kernel_replay=True)
def sampling(
    input_values_tensor: Tensor,
    input_indices_tensor: Tensor,
    k: Tensor,
    p: Tensor,
    temp: Tensor,
    *,
    seed: int | None = None,
    sub_core_grids: Any = None,
    output_tensor: Tensor | None = None,
) -> Tensor:
    values, indices = input_values_tensor, input_indices_tensor
    if not all(isinstance(t, Tensor) and t.device_or_none is not None for t in (values, indices, k, p, temp)):
        raise SAMPLING_ON_DEVICE.error()
    dev = require_device("sampling", values, indices, k, p, temp, output_tensor)
    SAMPLING_VALUES_INTERLEAVED.require(_ml(values))
    SAMPLING_VALUES_DTYPE.require(values.dtype == DataType.BFLOAT16)
    SAMPLING_VALUES_TILE.require(values.layout == Layout.TILE)
    SAMPLING_INDICES_INTERLEAVED.require(_ml(indices))
    SAMPLING_INDICES_DTYPE.require(indices.dtype in _IDS)
    SAMPLING_INDICES_RM.require(indices.layout == Layout.ROW_MAJOR)
    SAMPLING_SAME_SHAPE.require(list(indices.shape) == list(values.shape))
    shape = list(values.shape)
    SAMPLING_RANK.require(len(shape) == 4, len(shape))
    SAMPLING_NC.require(shape[0] == 1 and shape[1] == 1, *shape)
    users, w = shape[2], shape[3]
    SAMPLING_USERS.require(1 <= users <= MAX_USERS, users)
    SAMPLING_W_TILES.require(w != 0 and w % TILE_SIZE == 0, w)
    wt = w // TILE_SIZE
    SAMPLING_W_POW2.require(wt & (wt - 1) == 0, w, wt)
    if output_tensor is not None:
        o = output_tensor
        SAMPLING_OUT_DTYPE.require(o.dtype in _IDS)
        SAMPLING_OUT_INTERLEAVED.require(_ml(o))
        got = list(o.shape) + [0] * (4 - len(o.shape))
        SAMPLING_OUT_SHAPE.require(list(o.shape) == [1, 1, 1, users], users, *got[:4])
    SAMPLING_K_DTYPE.require(k.dtype in _IDS)
    SAMPLING_P_DTYPE.require(p.dtype == DataType.BFLOAT16)
    SAMPLING_TEMP_DTYPE.require(temp.dtype == DataType.BFLOAT16)
    SAMPLING_K_RM.require(k.layout == Layout.ROW_MAJOR)
    SAMPLING_P_RM.require(p.layout == Layout.ROW_MAJOR)
    SAMPLING_TEMP_RM.require(temp.layout == Layout.ROW_MAJOR)
    SAMPLING_K_SHAPE.require(list(k.shape) == [users], users)
    SAMPLING_P_SHAPE.require(list(p.shape) == [users], users)
    SAMPLING_TEMP_SHAPE.require(list(temp.shape) == [users], users)
    out_mc = values.memory_config()
    out_dtype = output_tensor.dtype if output_tensor is not None else DataType.UINT32
    if output_tensor is None:
        check_placement("sampling", dev, (1, 1, 1, users), Layout.ROW_MAJOR, out_mc, out_dtype)
    rngs = _rngs(dev)

    def compute(v: torch.Tensor, ids: torch.Tensor, kk: torch.Tensor, pp: torch.Tensor, tt: torch.Tensor,
                chip: torch.Tensor) -> torch.Tensor:
        cores = rngs[int(chip[0])]
        if _recording:
            # Capturing a trace records the op without running it on a device, so no core draws: the capture's
            # own shape-finding run uses scratch generators.
            cores = [_generator(u) for u in range(users)]
        if seed:  # a nonzero seed reseeds every user's core at each launch (0, like None, leaves them running)
            for u in range(users):
                cores[u].manual_seed(int(seed))
        uniforms = _uniforms(cores, users)
        v2, i2 = v.reshape(users, w), ids.reshape(users, w)
        return sample_rows(v2, i2, kk.reshape(users), pp.reshape(users), tt.reshape(users), uniforms
                           ).reshape(1, 1, 1, users)

    shards = per_device(compute, values, indices, k, p, temp, _chip_ids(dev.get_num_devices()))
    if output_tensor is not None:
        output_tensor._rebind(output(values, shards, output_tensor.dtype, output_tensor.layout,
                                     output_tensor.memory_config()))
        return output_tensor
    return output(values, shards, out_dtype, Layout.ROW_MAJOR, out_mc)


M = rules("manual_seed", "reduction/manual_seed/device/manual_seed_operation.cpp")
SEED_DEVICE = M("Device must be provided when seeds is a uint32_t value.", "manual-seed/no-device",
                "manual-seed/int")
SEED_TENSOR_DTYPE = M("Seeds tensor must be of type UINT32.", "manual-seed/int32-seeds", "manual-seed/tensors")
SEED_TENSOR_RM = M("Seeds tensor must have ROW_MAJOR layout.", "manual-seed/tile-seeds", "manual-seed/tensors")
SEED_USERS_DTYPE = M("User IDs tensor must be of type UINT32.", "manual-seed/int32-users", "manual-seed/tensors")
SEED_USERS_RM = M("User IDs tensor must have ROW_MAJOR layout.", "manual-seed/tile-users", "manual-seed/tensors")
SEED_VOLUME = M("Seeds tensor and User IDs tensor must have the same number of elements. Got seeds volume: {} and "
                "user_ids volume: {}", "manual-seed/shape-mismatch", "manual-seed/tensors-8")
SEED_SHAPE = M("Seeds tensor and User IDs tensor must have the same shape.", "manual-seed/shape-differs",
               "manual-seed/tensors")
SEED_RANK = M("Seeds tensor and User IDs tensor must be 1-dimensional.", "manual-seed/2d", "manual-seed/tensors")
SEED_SCALAR_USER = M("Seeds were provided as a tensor, so user_ids must not be provided as a scalar.",
                     "manual-seed/tensor-int-user", "manual-seed/tensors")
SEED_USER_RANGE = M("User IDs scalar must be in the range [0, 31].", "manual-seed/int-user-32",
                    "manual-seed/int-user-31")


def _volume(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def manual_seed(seeds: int | Tensor, *, device: Any = None, user_ids: int | Tensor | None = None,
                sub_core_grids: Any = None) -> Tensor:
    """Seeds the user cores' PRNGs: an int seeds every core (or the one core, or the cores, user_ids names); a seeds
    tensor seeds the cores its user_ids tensor lists, entry by entry (without user_ids, 0.81.1 seeds every core with
    0). UINT32_MAX skips a core. Returns the op's placeholder [1] uint32 tensor."""
    if not isinstance(seeds, Tensor):
        SEED_DEVICE.require(device is not None)
        dev = device
    else:
        dev = device if device is not None else require_device("manual_seed", seeds)
    if isinstance(user_ids, Tensor):
        require_device("manual_seed", user_ids)
    if isinstance(seeds, Tensor):
        require_device("manual_seed", seeds)
        SEED_TENSOR_DTYPE.require(seeds.dtype == DataType.UINT32)
        SEED_TENSOR_RM.require(seeds.layout == Layout.ROW_MAJOR)
        if isinstance(user_ids, Tensor):
            SEED_USERS_DTYPE.require(user_ids.dtype == DataType.UINT32)
            SEED_USERS_RM.require(user_ids.layout == Layout.ROW_MAJOR)
            sv, uv = _volume(seeds.shape), _volume(user_ids.shape)
            SEED_VOLUME.require(sv == uv, sv, uv)
            SEED_SHAPE.require(list(seeds.shape) == list(user_ids.shape))
            SEED_RANK.require(len(seeds.shape) == 1)
        SEED_SCALAR_USER.require(user_ids is None or isinstance(user_ids, Tensor))
    elif user_ids is not None and not isinstance(user_ids, Tensor):
        SEED_USER_RANGE.require(0 <= int(user_ids) <= MAX_USERS - 1)
    rngs = _rngs(dev)
    for chip, cores in enumerate(rngs):
        if isinstance(seeds, Tensor) and not isinstance(user_ids, Tensor):
            # 0.81.1 takes this for its single-seed program with no seed set: every core is seeded with 0.
            users, values = list(range(MAX_USERS)), [0] * MAX_USERS
        elif isinstance(seeds, Tensor):
            values = [int(s) for s in seeds.shard(chip).reshape(-1).tolist()]
            users = [int(u) for u in user_ids.shard(chip).reshape(-1).tolist()]
        else:
            users = ([int(u) for u in user_ids.shard(chip).reshape(-1).tolist()] if isinstance(user_ids, Tensor)
                     else [int(user_ids)] if user_ids is not None else list(range(MAX_USERS)))
            values = [int(seeds)] * len(users)
        for u, s in zip(users, values, strict=True):
            # ids past the core grid's users name no core; UINT32_MAX leaves a core's generator as it is
            if 0 <= u < MAX_USERS and (s & 0xFFFFFFFF) != 0xFFFFFFFF:
                cores[u].manual_seed(s & 0xFFFFFFFF)
    shards = [torch.zeros(1, dtype=torch.int64) for _ in range(dev.get_num_devices())]
    return Tensor.make(shards, DataType.UINT32, Layout.ROW_MAJOR, dev, DRAM_MEMORY_CONFIG, op="manual_seed")

