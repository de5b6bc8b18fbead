"""Prefill matmuls over long inputs: a PrefillMatmul whose rows are fewer than the input's runs the input as a
batch of row blocks (a view, no copy), so one core's circular buffers hold a block of the output, not all of it."""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.layouts import PrefillMatmul


def prefill_linear(x: Any, w: Any, mm: PrefillMatmul, **kwargs: Any) -> Any:
    """ttnn.linear of x [1, 1, m, k] and w [k, n] with mm's program config; returns [1, 1, m, n]."""
    m, k = x.shape[-2], x.shape[-1]
    batched = mm.rows < m
    if batched:
        x = ttnn.reshape(x, (1, m // mm.rows, mm.rows, k))
    out = ttnn.linear(x, w, program_config=mm.program, **kwargs)
    return ttnn.reshape(out, (1, 1, m, out.shape[-1])) if batched else out
