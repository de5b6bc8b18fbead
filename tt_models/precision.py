"""Turns an optimization profile (configs/optimizations/*.yaml) into ttnn dtypes and compute-kernel configs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tt_models.backend import ttnn
from tt_models.config.optimizations import OP_GROUPS

_DTYPE = {"BFP4": "bfloat4_b", "BFP8": "bfloat8_b", "BF16": "bfloat16", "FP32": "float32"}
# fidelity setting -> (math fidelity, fp32 accumulation, approx mode)
_FIDELITY = {
    "LOFI": ("LoFi", False, True),
    "HIFI2": ("HiFi2", True, True),
    "HIFI2_NA": ("HiFi2", True, False),
    "HIFI2_FP16": ("HiFi2", False, True),
    "HIFI4": ("HiFi4", False, False),
    "HIFI4_FP32": ("HiFi4", True, False),
}


@dataclass(frozen=True)
class LayerPrecision:
    """dtypes and kernel configs one decoder layer uses."""

    wqkv: Any
    wo: Any
    ff1_ff3: Any
    ff2: Any
    kv_cache: Any
    activation: Any
    residual: Any
    kernels: dict[str, Any]


def dtype_of(setting: str) -> Any:
    return getattr(ttnn, _DTYPE[setting])


def kernel_config(setting: str) -> Any:
    fidelity, fp32_acc, approx = _FIDELITY[setting]
    return ttnn.WormholeComputeKernelConfig(
        math_fidelity=getattr(ttnn.MathFidelity, fidelity), math_approx_mode=approx, fp32_dest_acc_en=fp32_acc,
        packer_l1_acc=True,
    )


# Kernels no profile varies (as tt_transformers fixes them): norms accumulate in fp32 at HiFi2; the LM head runs
# HiFi2 without fp32 accumulation.
FIXED_KERNELS = {"NORM": ("HiFi2", True, False), "LM_HEAD": ("HiFi2", False, False)}


def fixed_kernel(name: str) -> Any:
    fidelity, fp32_acc, approx = FIXED_KERNELS[name]
    return ttnn.WormholeComputeKernelConfig(math_fidelity=getattr(ttnn.MathFidelity, fidelity),
                                            math_approx_mode=approx, fp32_dest_acc_en=fp32_acc, packer_l1_acc=True)


def layer_precision(profile: Any, layer: int) -> LayerPrecision:
    def p(group: str) -> Any:
        return dtype_of(profile.precision(group, layer))

    return LayerPrecision(
        wqkv=p("WQKV"), wo=p("WO"), ff1_ff3=p("FF1_FF3"), ff2=p("FF2"), kv_cache=p("KV_CACHE"),
        activation=p("ACTIVATION"), residual=p("RESIDUAL"),
        kernels={**{op: kernel_config(profile.fidelity(op, layer)) for op in OP_GROUPS},
                 **{name: fixed_kernel(name) for name in FIXED_KERNELS}},
    )
