"""Hand-written corpus cases: for each op the simulator implements, valid calls with interleaved and sharded
inputs, and the violations of each rule next to them. Built directly in the corpus encoding (tt_checks.corpus), so
neither ttnn is needed to list them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

TILE = 32


# ---------------- encoding helpers ----------------
def mem(layout: str = "INTERLEAVED", buffer: str = "DRAM", grid: Any = None, shape: Any = None,
        orientation: str = "ROW_MAJOR") -> dict:
    shard = None
    if grid is not None:
        shard = {"grid": [list(r) for r in grid], "shape": list(shape), "orientation": orientation}
    return {"t": "mem", "layout": layout, "buffer": buffer, "shard": shard}


DRAM = mem()
L1 = mem(buffer="L1")


def rows(n: int, y: int = 0) -> list[tuple[int, int, int, int]]:
    """A grid of n cores filled row by row on an 8-wide grid, as CoreRangeSet ranges."""
    out, y0 = [], y
    while n > 0:
        w = min(n, 8)
        out.append((0, y0, w - 1, y0))
        n -= w
        y0 += 1
    return out


def height(shard: tuple[int, int], ncores: int, buffer: str = "L1") -> dict:
    return mem("HEIGHT_SHARDED", buffer, rows(ncores), shard)


def width(shard: tuple[int, int], ncores: int, buffer: str = "L1") -> dict:
    return mem("WIDTH_SHARDED", buffer, rows(ncores), shard)


def block(shard: tuple[int, int], gx: int, gy: int, orientation: str = "ROW_MAJOR") -> dict:
    return mem("BLOCK_SHARDED", "L1", [(0, 0, gx - 1, gy - 1)], shard, orientation)


def T(shape: Any, dtype: str = "BFLOAT16", layout: str = "TILE", m: dict | None = DRAM) -> dict:  # noqa: N802
    return {"t": "tensor", "shape": list(shape), "dtype": dtype, "layout": layout, "mem": m}


def host(shape: Any, dtype: str = "BFLOAT16", layout: str = "ROW_MAJOR") -> dict:
    return T(shape, dtype, layout, None)


def enum(v: str) -> dict:
    return {"t": "enum", "v": v}


def obj(cls: str, **fields: Any) -> dict:
    return {"t": "obj", "cls": cls, "fields": fields}


def coord(x: int, y: int) -> dict:
    return obj("CoreCoord", x=x, y=y)


def call(op: str, *args: Any, **kwargs: Any) -> dict:
    return {"op": op if op.startswith("ttnn.") else f"ttnn.{op}", "args": list(args), "kwargs": kwargs}


def cases() -> Iterator[tuple[str, dict]]:
    """(name, call) for every hand-written case."""
    yield from ()
