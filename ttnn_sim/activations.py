"""ttnn.operations.activations: the torch reference of a matmul/linear fused activation, as the real ttnn 0.81.1's
pure-Python module of that name gives it (``get_golden_function_for_activation``). A string names a ttnn op whose
golden function is used (``"<op>_approx"`` the same op; ``"gelu_tanh"`` the tanh form); a UnaryWithParam or a
UnaryOpType maps to its torch function. For the unary ops ttnn has and the simulator does not (relu, relu6, gelu,
sigmoid, hardsigmoid, mish, tanh, ...) the torch function their golden function is stands in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .types import UnaryOpType, UnaryWithParam

_BY_TYPE: dict[str, Callable[..., torch.Tensor]] = {
    "RELU": torch.nn.functional.relu,
    "RELU6": torch.nn.functional.relu6,
    "SILU": torch.nn.functional.silu,
    "MISH": torch.nn.functional.mish,
    "SIGMOID": torch.nn.functional.sigmoid,
    "HARDSIGMOID": torch.nn.functional.hardsigmoid,
    "TANH": torch.nn.functional.tanh,
    "LOG": torch.log,
    "SOFTPLUS": torch.nn.functional.softplus,
    "GELU": torch.nn.functional.gelu,
    "GELU_TANH": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "SQRT": torch.sqrt,
}


def _for_type(activation: Any) -> Callable[..., torch.Tensor]:
    if not isinstance(activation, UnaryOpType):
        raise RuntimeError(f"{activation} is not a UnaryOpType")
    if activation.name in _BY_TYPE:
        return _BY_TYPE[activation.name]
    raise RuntimeError(f"{activation} is not supported as activation function")


def _from_string(activation: str) -> Callable[..., torch.Tensor]:
    import ttnn_sim

    from .golden import get_golden_function

    if activation == "gelu_tanh":
        return _BY_TYPE["GELU_TANH"]
    name = activation[:-7] if activation.endswith("_approx") else activation
    op = getattr(ttnn_sim, name, None)
    if op is None:
        # ttnn has these unary ops and the simulator does not: their golden functions are these torch functions.
        if name.upper() in _BY_TYPE and name.upper() != "GELU_TANH":
            return _BY_TYPE[name.upper()]
        raise RuntimeError(f"Unsupported activation: {activation}")
    return get_golden_function(op)


def get_golden_function_for_activation(activation: Any | None) -> Callable[..., torch.Tensor] | None:
    """The torch function for an activation given as a string, a UnaryWithParam, a UnaryOpType, or None."""
    if activation is None:
        return None
    if isinstance(activation, str):
        return _from_string(activation)
    if isinstance(activation, UnaryWithParam):
        activation = activation.op_type
    if not isinstance(activation, UnaryOpType):
        raise RuntimeError(f"{activation} is not supported as activation function")
    return _for_type(activation)


__all__ = ["get_golden_function_for_activation"]
