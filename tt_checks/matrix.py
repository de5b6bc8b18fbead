"""The checkpoint matrix's targets: on which devices each real checkpoint (tt_models/configs/checkpoints.yaml) x
hardware profile is checked, by the simulator tests and by the real-ttnn checker.

A checkpoint runs on every one-chip device whose DRAM holds its weights (N150, P150), and, when one Wormhole chip
does not, on the smallest tensor-parallel mesh that does (N300, else a T3K as 1x8 and as 2x4, the split a Galaxy
runs). What fits is decided as the model decides at load (tt_models.parallel: the split must divide, the weights
per chip, counted per bank as the allocator places them, must fit the chip's DRAM beside the trace region), from
the chips' DRAM as the real ttnn 0.81.1 reports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ONE_CHIP = ("N150", "P150")
MESHES = (("N300", (1, 2)), ("T3K", (1, 8)), ("T3K", (2, 4)))
ARCH = {"N150": "wormhole_b0", "N300": "wormhole_b0", "T3K": "wormhole_b0", "P150": "blackhole"}


@dataclass(frozen=True)
class Target:
    device: str  # device profile (tt_models/configs/devices)
    mesh_shape: tuple[int, int]

    @property
    def name(self) -> str:
        default = {"N150": (1, 1), "P150": (1, 1), "N300": (1, 2), "T3K": (1, 8)}[self.device]
        return self.device if self.mesh_shape == default else f"{self.device} {self.mesh_shape[0]}x{self.mesh_shape[1]}"


def dram_free_per_chip(device: str) -> int:
    """DRAM a chip of this device profile has for weights and KV: its banks, less the trace region."""
    from tt_models.config import load_device_profile
    from ttnn_sim.chips import CHIPS

    chip = CHIPS[ARCH[device]]
    trace = load_device_profile(device).trace_region_size
    per_bank = -(-trace // chip.dram_banks)
    per_bank = -(-per_bank // chip.trace_alignment) * chip.trace_alignment
    return (chip.dram_bank_bytes - per_bank) * chip.dram_banks


def fits(cfg: Any, profile: str, target: Target) -> str | None:
    """None when the full checkpoint loads on the target with this profile, else why not (the model's own refusal:
    a split that does not divide, or the weights per chip against the chip's DRAM)."""
    from tt_models.config import load_model_overrides, load_optimizations
    from tt_models.model_args import ModelArgs, UnsupportedModelError
    from tt_models.parallel import pad_mlp, plan_tensor_parallel, weight_bytes_per_device
    from tt_models.precision import dtype_of, layer_precision

    try:
        args = pad_mlp(ModelArgs.from_hf_config(cfg), target.mesh_shape)
        args.check_tt_limits()
        plan = plan_tensor_parallel(args, target.mesh_shape)
    except UnsupportedModelError as e:
        return str(e)
    prof = load_optimizations(load_model_overrides(cfg._name_or_path).profile_for(profile))
    precisions = [layer_precision(prof, i) for i in range(args.n_layers)]
    from ttnn_sim.chips import CHIPS

    chip = CHIPS[ARCH[target.device]]
    need = weight_bytes_per_device(args, plan, precisions, dtype_of(prof.precision("LM_HEAD")), chip.dram_banks,
                                   chip.grid, chip.l1_bank_bytes)
    have = dram_free_per_chip(target.device)
    if need > have:
        return f"weights {need / 2**30:.2f} GiB per chip > {have / 2**30:.2f} GiB of DRAM"
    return None


def targets(cfg: Any, profile: str) -> list[Target]:
    """Where the checkpoint is checked: the one-chip devices it fits, then, if a Wormhole chip is too small, the
    smallest Wormhole mesh it fits (a T3K both as 1x8 and 2x4)."""
    out = [Target(d, (1, 1)) for d in ONE_CHIP if fits(cfg, profile, Target(d, (1, 1))) is None]
    if any(t.device == "N150" for t in out):
        return out
    for device in ("N300", "T3K"):
        fitting = [Target(d, shape) for d, shape in MESHES if d == device
                   and fits(cfg, profile, Target(d, shape)) is None]
        if fitting:
            return out + fitting
    return out
