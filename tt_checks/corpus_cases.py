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


def rows(n: int, y: int = 0, width: int = 8) -> list[tuple[int, int, int, int]]:
    """The first n cores of a `width`-wide grid, row by row from row y: whole rows as one range, then the rest."""
    full, rest = divmod(n, width)
    out = [(0, y, width - 1, y + full - 1)] if full else []
    if rest:
        out.append((0, y + full, rest - 1, y + full))
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


def rope() -> Iterator[tuple[str, dict]]:
    """rotary_embedding_llama: decode on height-sharded tensors (one user per core), prefill interleaved."""
    op = "experimental.rotary_embedding_llama"

    def decode(users: int = 32, heads: int = 8, hd: int = 64, **over: Any) -> dict:
        ph = -(-heads // TILE) * TILE
        x = T([1, users, heads, hd], m=height((ph, hd), users))
        cs = T([1, users, 1, hd], m=height((TILE, hd), users))
        tm = T([1, 1, TILE * users, TILE], m=height((TILE, TILE), users))
        args = {"x": x, "cos": cs, "sin": dict(cs), "tm": tm, **over}
        kw = {"is_decode_mode": True, **{k: v for k, v in over.items() if k not in ("x", "cos", "sin", "tm")}}
        return call(op, args["x"], args["cos"], args["sin"], args["tm"], **kw)

    def prefill(heads: int = 8, seq: int = 128, hd: int = 64, **over: Any) -> dict:
        args = {"x": T([1, heads, seq, hd]), "cos": T([1, 1, seq, hd]), "sin": T([1, 1, seq, hd]),
                "tm": T([1, 1, TILE, TILE]), **over}
        kw = {k: v for k, v in over.items() if k not in ("x", "cos", "sin", "tm")}
        return call(op, args["x"], args["cos"], args["sin"], args["tm"], **kw)

    yield "rope/decode/ok", decode()
    yield "rope/decode/hd128-9-heads", decode(heads=9, hd=128)
    yield "rope/prefill/ok", prefill()
    for k in ("x", "cos", "sin", "tm"):
        name = {"x": "input", "tm": "trans_mat"}.get(k, k)
        base = decode()
        spec = base["args"][["x", "cos", "sin", "tm"].index(k)]
        yield f"rope/{name}-row-major", decode(**{k: {**spec, "layout": "ROW_MAJOR"}})
        yield f"rope/decode/{name}-interleaved", decode(**{k: {**spec, "mem": DRAM}})
    yield "rope/decode/bfp8-input", decode(x=T([1, 32, 8, 64], "BFLOAT8_B", m=height((32, 64), 32)))
    yield "rope/decode/dram-output", decode(memory_config=DRAM)
    yield "rope/decode/hd48", decode(hd=48)  # (the shard itself is not whole tiles)
    yield "rope/decode/hd48-interleaved", decode(x=T([1, 32, 8, 48]), cos=T([1, 32, 1, 48]), sin=T([1, 32, 1, 48]))
    yield "rope/decode/dim0-2", decode(x=T([2, 16, 8, 64], m=height((32, 64), 32)))
    yield "rope/decode/batch-65", decode(users=65)
    yield "rope/decode/cos-16-users", decode(cos=T([1, 16, 1, 64], m=height((TILE, 64), 16)),
                                             sin=T([1, 16, 1, 64], m=height((TILE, 64), 16)))
    yield "rope/decode/cos-shard-64", decode(cos=T([1, 32, 64, 64], m=height((64, 64), 32)),
                                             sin=T([1, 32, 64, 64], m=height((64, 64), 32)))
    yield "rope/decode/trans-mat-2x", decode(tm=T([1, 2, 512, TILE], m=height((TILE, TILE), 32)))
    yield "rope/decode/trans-shard-64", decode(tm=T([1, 1, 64 * 16, TILE], m=height((64, TILE), 16)))
    yield "rope/decode/trans-mat-one-core", decode(tm=T([1, 1, TILE, TILE], m=height((TILE, TILE), 1)))
    yield "rope/decode/two-users-per-core", decode(x=T([1, 32, 8, 64], m=height((64, 64), 16)))
    yield "rope/prefill/hd256", prefill(hd=256)
    yield "rope/prefill/hd256-fp32-acc", prefill(hd=256, compute_kernel_config=obj(
        "WormholeComputeKernelConfig", math_fidelity=enum("MathFidelity.HiFi4"), fp32_dest_acc_en=True))
    yield "rope/prefill/hd512", prefill(hd=512)
    yield "rope/prefill/hd48", prefill(hd=48)
    yield "rope/prefill/fp32-cos", prefill(cos=T([1, 1, 128, 64], "FLOAT32"))
    yield "rope/prefill/sin-shorter", prefill(sin=T([1, 1, 64, 64]))
    yield "rope/prefill/cos-shorter-than-input", prefill(cos=T([1, 1, 64, 64]), sin=T([1, 1, 64, 64]))
    yield "rope/prefill/input-sharded", prefill(x=T([1, 8, 128, 64], m=height((128, 64), 8)))
    yield "rope/prefill/l1-input", prefill(x=T([1, 8, 128, 64], m=L1))
    yield "rope/prefill/cos-hd-32", prefill(cos=T([1, 1, 128, 32]), sin=T([1, 1, 128, 32]))
    yield "rope/prefill/cos-2-heads", prefill(cos=T([1, 2, 128, 64]), sin=T([1, 2, 128, 64]))
    yield "rope/prefill/cos-per-head", prefill(cos=T([1, 8, 128, 64]), sin=T([1, 8, 128, 64]))
    yield "rope/prefill/cos-width-sharded", prefill(cos=T([1, 1, 128, 64], m=width((128, 32), 2)),
                                                    sin=T([1, 1, 128, 64], m=width((128, 32), 2)))
    yield "rope/prefill/cos-height-sharded", prefill(cos=T([1, 1, 128, 64], m=height((TILE, 64), 4)),
                                                     sin=T([1, 1, 128, 64], m=height((TILE, 64), 4)))
    yield "rope/prefill/cos-sharded-sin-not", prefill(cos=T([1, 1, 128, 64], m=height((TILE, 64), 4)))
    yield "rope/prefill/cos-sharded-per-head", prefill(cos=T([1, 8, 128, 64], m=height((TILE, 64), 32)),
                                                       sin=T([1, 8, 128, 64], m=height((TILE, 64), 32)))
    for k in ("cos", "sin"):
        other = {"cos": "sin", "sin": "cos"}[k]
        ok = T([1, 1, 128, 64], m=height((TILE, 64), 4))
        yield f"rope/prefill/{k}-shard-64", prefill(**{k: T([1, 1, 128, 64], m=height((64, 64), 2)), other: ok})
    yield "rope/prefill/trans-mat-64", prefill(tm=T([1, 1, 64, TILE]))
    yield "rope/prefill/trans-mat-wide", prefill(tm=T([1, 1, TILE, 64]))
    yield "rope/prefill/trans-mat-width-sharded", prefill(tm=T([1, 1, TILE, 64], m=width((TILE, TILE), 2)))
    yield "rope/prefill/trans-mat-height-sharded", prefill(tm=T([1, 1, TILE, TILE], m=height((TILE, TILE), 1)))
    yield "rope/prefill/trans-mat-shard-height", prefill(tm=T([1, 1, 64, TILE], m=height((64, TILE), 1)))
    yield "rope/prefill/trans-mat-shard-width", prefill(tm=T([1, 1, TILE, 64], m=height((TILE, 64), 1)))


def cases() -> Iterator[tuple[str, dict]]:
    """(name, call) for every hand-written case."""
    yield from placement()
    yield from rope()
