"""ttnn.get_golden_function(op): the plain-PyTorch reference each real op carries as `op.golden_function`, taking
torch tensors and the op's own arguments (the real op's golden signature). Ops the real ttnn gives no golden
function (rotary, paged cache updates, the nlp head ops, ...) have None and get_golden_function raises as it does."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch


def get_golden_function(operation: Any) -> Callable[..., Any]:
    golden = getattr(operation, "golden_function", None)
    if golden is None:
        raise RuntimeError(f"{operation} does not have a golden function")
    return golden


def _activation(x: torch.Tensor, activation: Any) -> torch.Tensor:
    if activation is None:
        return x
    name = str(activation).lower()
    if "silu" in name:
        return torch.nn.functional.silu(x)
    if "relu" in name:
        return torch.relu(x)
    if "gelu" in name:
        return torch.nn.functional.gelu(x)
    if "sigmoid" in name:
        return torch.sigmoid(x)
    raise ValueError(f"no golden activation {activation!r}")


def _acts(x: torch.Tensor, acts: Any) -> torch.Tensor:
    for a in acts or ():
        x = _activation(x, getattr(a, "op_type", a))
    return x


def _binary(fn: Callable[[Any, Any], torch.Tensor]) -> Callable[..., torch.Tensor]:
    def golden(input_tensor_a: Any, input_tensor_b: Any, *args: Any, activations: Any = None,
               input_tensor_a_activations: Any = None, input_tensor_b_activations: Any = None, dtype: Any = None,
               **_: Any) -> torch.Tensor:
        a = _acts(input_tensor_a, input_tensor_a_activations)
        b = _acts(input_tensor_b, input_tensor_b_activations) if isinstance(input_tensor_b, torch.Tensor) \
            else input_tensor_b
        return _acts(fn(a, b), activations)

    return golden


def _matmul(input_tensor_a: torch.Tensor, input_tensor_b: torch.Tensor, transpose_a: bool = False,
            transpose_b: bool = False, *, bias: torch.Tensor | None = None, activation: Any = None,
            program_config: Any = None, dtype: Any = None, **_: Any) -> torch.Tensor:
    a = input_tensor_a.transpose(-1, -2) if transpose_a else input_tensor_a
    b = input_tensor_b.transpose(-1, -2) if transpose_b else input_tensor_b
    out = a @ b
    if bias is not None:
        out = out + bias
    return _activation(out, activation)


def _rms_norm(input_tensor: torch.Tensor, weight: torch.Tensor | None = None, *, epsilon: float = 1e-12,
              bias: torch.Tensor | None = None, residual_input_tensor: torch.Tensor | None = None,
              **_: Any) -> torch.Tensor:
    x = input_tensor if residual_input_tensor is None else input_tensor + residual_input_tensor
    out = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + epsilon).to(x.dtype)
    if weight is not None:
        out = out * weight.reshape(-1)[: x.shape[-1]]
    return out + bias.reshape(-1)[: x.shape[-1]] if bias is not None else out


def _sdpa(input_tensor_q: torch.Tensor, input_tensor_k: torch.Tensor, input_tensor_v: torch.Tensor, *,
          attn_mask: torch.Tensor | None = None, is_causal: bool = True, scale: float | None = None,
          sliding_window_size: int | None = None, **_: Any) -> torch.Tensor:
    q, k, v = input_tensor_q, input_tensor_k, input_tensor_v
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = (q.float() @ k.float().transpose(-1, -2)) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if is_causal:
        s, t = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(s, t, dtype=torch.bool).tril(t - s)
        if sliding_window_size is not None:
            keep &= ~torch.ones(s, t, dtype=torch.bool).tril(t - s - sliding_window_size)
        scores = scores.masked_fill(~keep, float("-inf"))
    elif attn_mask is not None:
        scores = scores + attn_mask.float()
    return (scores.softmax(-1) @ v.float()).to(q.dtype)


def _slice(input_tensor: torch.Tensor, slice_start: Any = None, slice_end: Any = None, slice_step: Any = None,
           *args: Any, **_: Any) -> torch.Tensor:
    steps = slice_step or [1] * len(slice_start)
    return input_tensor[tuple(slice(b, e, s) for b, e, s in zip(slice_start, slice_end, steps, strict=True))]


def _plus_one(input_tensor: torch.Tensor, *args: Any, skip_negative_entries: bool = False, **_: Any) -> torch.Tensor:
    return torch.where(input_tensor < 0, input_tensor, input_tensor + 1) if skip_negative_entries else input_tensor + 1


GOLDEN: dict[str, Callable[..., Any]] = {
    "add": _binary(torch.add),
    "mul": _binary(torch.mul),
    "multiply": _binary(torch.mul),
    "silu": lambda input_tensor, *args, **_: torch.nn.functional.silu(input_tensor),
    "softmax": lambda input_tensor, dim=None, **_: torch.softmax(input_tensor, -1 if dim is None else dim),
    "rms_norm": _rms_norm,
    "matmul": _matmul,
    "linear": _matmul,
    "embedding": lambda input_tensor, weight, *, dtype=None, **_: torch.nn.functional.embedding(
        input_tensor.long(), weight.reshape(-1, weight.shape[-1])),
    "argmax": lambda input_tensor, dim=None, keepdim=False, **_: torch.argmax(input_tensor, dim=dim,
                                                                              keepdim=keepdim),
    "topk": lambda input_tensor, k=32, dim=-1, largest=True, sorted=True, **_: torch.topk(  # noqa: A002
        input_tensor, k, dim=dim, largest=largest, sorted=sorted),
    "concat": lambda tensors, dim=0, groups=1, **_: torch.cat(tensors, dim),
    "slice": _slice,
    "permute": lambda input_tensor, dims, **_: input_tensor.permute(tuple(dims)),
    "transpose": lambda input_tensor, dim1, dim2, *args, **_: input_tensor.transpose(dim1, dim2),
    "reshape": lambda input_tensor, shape, *args, **_: input_tensor.reshape(tuple(shape)),
    "to_layout": lambda tensor, *args, **_: tensor,
    "clone": lambda tensor, *args, dtype=None, **_: tensor.clone(),
    "typecast": lambda input_tensor, *args, **_: input_tensor,
    "plus_one": _plus_one,
    "fill": lambda input_tensor_a, fill_value, *args, **_: torch.full_like(input_tensor_a, fill_value),
    "scaled_dot_product_attention": _sdpa,
}


def attach(namespace: Any) -> None:
    """Give every op of the namespace (and its transformer/experimental submodules) its golden_function, and the
    python_fully_qualified_name every ttnn operation carries (ttnn.experimental.all_gather_async's is
    "ttnn.experimental.all_gather_async"; tt-metal's CCL tests log it)."""
    for mod, prefix in ((namespace, "ttnn."), (namespace.transformer, "ttnn.transformer."),
                        (namespace.experimental, "ttnn.experimental.")):
        for name in dir(mod):
            op = getattr(mod, name)
            if callable(op) and not isinstance(op, type) and not name.startswith("_"):
                try:
                    op.golden_function = GOLDEN.get(name)
                    if getattr(op, "__module__", "").startswith("ttnn_sim") and \
                            not hasattr(op, "python_fully_qualified_name"):
                        op.python_fully_qualified_name = prefix + name
                except AttributeError:  # builtins and bound methods take no attributes
                    pass
