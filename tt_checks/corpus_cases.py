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


DEVICE = {"t": "device"}
DTYPES = ("BFLOAT16", "BFLOAT8_B", "BFLOAT4_B", "FLOAT32", "UINT32", "INT32", "UINT16")


def zeros(shape: Any, dtype: str, layout: str, m: dict) -> dict:
    return call("zeros", list(shape), dtype=enum(f"DataType.{dtype}"), layout=enum(f"Layout.{layout}"),
                device=DEVICE, memory_config=m)


def placement() -> Iterator[tuple[str, dict]]:
    """Where tensors can live and how much of each bank they take: interleaved in DRAM and L1 for every dtype and
    layout, height/width/block sharding (even, uneven, too few cores, cores off the grid, unaligned shards),
    DRAM width sharding, and allocations too big for the device."""
    for dtype in DTYPES:
        for shape in ([1, 1, 32, 32], [1, 1, 416, 32], [1, 1, 100, 200], [2, 3, 64, 96], [7, 33]):
            for name, m in (("dram", DRAM), ("l1", L1)):
                yield f"zeros/tile/{dtype}/{shape}/{name}", zeros(shape, dtype, "TILE", m)
    for dtype in ("BFLOAT16", "FLOAT32", "UINT32", "INT32", "BFLOAT8_B"):
        for shape in ([1, 1, 1, 10], [1, 1, 3, 100], [32, 100], [1, 1, 13, 7]):
            for name, m in (("dram", DRAM), ("l1", L1)):
                yield f"zeros/rm/{dtype}/{shape}/{name}", zeros(shape, dtype, "ROW_MAJOR", m)
    # height sharding: 32 users x 64 on 32 cores, uneven last shard, too few cores, a core off the 8x8 grid
    yield "shard/height/32x64", zeros([1, 32, 32, 64], "BFLOAT16", "TILE", height((32, 64), 32))
    yield "shard/height/uneven", zeros([1, 1, 100, 64], "BFLOAT16", "TILE", height((32, 64), 4))
    yield "shard/height/too-few-cores", zeros([1, 1, 100, 64], "BFLOAT16", "TILE", height((32, 64), 2))
    yield "shard/height/bfp8", zeros([1, 1, 256, 128], "BFLOAT8_B", "TILE", height((64, 128), 4))
    yield "shard/height/unaligned-shard", zeros([1, 1, 64, 64], "BFLOAT16", "TILE", height((16, 64), 4))
    yield "shard/height/row-major", zeros([1, 1, 8, 20], "BFLOAT16", "ROW_MAJOR", height((2, 20), 4))
    yield "shard/height/off-grid", zeros([1, 1, 32 * 9, 32], "BFLOAT16", "TILE",
                                         mem("HEIGHT_SHARDED", "L1", [(0, 0, 8, 0)], (32, 32)))
    yield "shard/height/grid-too-big", zeros([1, 1, 32, 32], "BFLOAT16", "TILE", height((32, 32), 4))
    # width sharding: a decode residual of 576 = 18 tiles on 18 cores (rows of 8) and on 9 and 6 cores
    yield "shard/width/18", zeros([1, 1, 32, 576], "BFLOAT16", "TILE", width((32, 32), 18))
    yield "shard/width/9", zeros([1, 1, 32, 576], "BFLOAT16", "TILE", width((32, 64), 9))
    yield "shard/width/6x96", zeros([1, 1, 32, 576], "BFLOAT16", "TILE", width((32, 96), 6))
    yield "shard/width/too-few", zeros([1, 1, 32, 576], "BFLOAT16", "TILE", width((32, 64), 8))
    yield "shard/width/off-grid", zeros([1, 1, 32, 576], "BFLOAT16", "TILE",
                                        mem("WIDTH_SHARDED", "L1", [(0, 0, 8, 1)], (32, 32)))
    # block sharding over a 2-D grid, row and column major, and more shards than the grid has rows
    yield "shard/block/2x2", zeros([1, 1, 64, 128], "BFLOAT16", "TILE", block((32, 64), 2, 2))
    yield "shard/block/4x8", zeros([1, 1, 256, 512], "BFLOAT8_B", "TILE", block((64, 64), 8, 4))
    yield "shard/block/col-major", zeros([1, 1, 128, 64], "BFLOAT16", "TILE", block((64, 32), 2, 2, "COL_MAJOR"))
    yield "shard/block/too-many-rows", zeros([1, 1, 128, 64], "BFLOAT16", "TILE", block((32, 32), 2, 2))
    # DRAM width sharding over the 12 banks, as decode weights are
    yield "shard/dram-width/12", zeros([1, 1, 576, 3072], "BFLOAT8_B", "TILE",
                                       mem("WIDTH_SHARDED", "DRAM", [(0, 0, 11, 0)], (576, 256)))
    yield "shard/dram-width/bank-13", zeros([1, 1, 576, 3328], "BFLOAT8_B", "TILE",
                                            mem("WIDTH_SHARDED", "DRAM", [(0, 0, 12, 0)], (576, 256)))
    # sharded layouts without a shard spec
    yield "shard/no-spec", zeros([1, 1, 32, 64], "BFLOAT16", "TILE", mem("HEIGHT_SHARDED", "L1"))
    # capacity: 16 GiB of DRAM, 128 MiB of L1 interleaved, 2 MiB of one core's L1
    yield "oom/dram-16GiB", zeros([1, 1, 8192 * 1024, 1024], "BFLOAT16", "TILE", DRAM)
    yield "oom/l1-128MiB", zeros([1, 1, 64 * 1024, 1024], "BFLOAT16", "TILE", L1)
    yield "oom/l1-shard-2MiB", zeros([1, 1, 32 * 256 * 8, 128], "BFLOAT16", "TILE", height((32 * 256, 128), 8))
    yield "fit/l1-shard-1MiB", zeros([1, 1, 32 * 128 * 8, 128], "BFLOAT16", "TILE", height((32 * 128, 128), 8))


def cases() -> Iterator[tuple[str, dict]]:
    """(name, call) for every hand-written case."""
    yield from placement()
