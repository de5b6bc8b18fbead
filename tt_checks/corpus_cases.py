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
    yield "shard/height/narrow", zeros([1, 1, 64, 64], "BFLOAT16", "TILE", height((32, 32), 4))
    yield "shard/width/short", zeros([1, 1, 64, 576], "BFLOAT16", "TILE", width((32, 32), 18))
    yield "shard/block/two-ranges", zeros([1, 1, 64, 64], "BFLOAT16", "TILE",
                                          mem("BLOCK_SHARDED", "L1", [(0, 0, 1, 0), (0, 1, 1, 1)], (32, 32)))
    yield "shard/block/too-many-cols", zeros([1, 1, 64, 128], "BFLOAT16", "TILE", block((32, 32), 2, 4))
    yield "shard/block/col-major-too-many", zeros([1, 1, 128, 64], "BFLOAT16", "TILE",
                                                  block((32, 32), 2, 4, "COL_MAJOR"))
    yield "shard/block/col-major-too-wide", zeros([1, 1, 64, 128], "BFLOAT16", "TILE",
                                                  block((32, 32), 4, 2, "COL_MAJOR"))
    yield "shard/dram-block/two-rows", zeros([1, 1, 64, 64], "BFLOAT16", "TILE",
                                             mem("BLOCK_SHARDED", "DRAM", [(0, 0, 1, 1)], (32, 32)))
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


def i32(shape: Any, m: dict | None = DRAM, layout: str = "ROW_MAJOR", dtype: str = "INT32") -> dict:
    return T(shape, dtype, layout, m)


def paged_update() -> Iterator[tuple[str, dict]]:
    """paged_update_cache / paged_fused_update_cache: decode rows height-sharded one user per core into an
    interleaved paged cache, and each rule broken next to the valid call."""
    op = "experimental.paged_update_cache"
    users, nkv, hd, bs, nb = 32, 2, 64, 64, 128
    cache = T([nb, nkv, bs, hd], "BFLOAT8_B")
    x = T([1, users, nkv, hd], m=height((TILE, hd), users))
    pt, pos = i32([users, 4]), i32([users])

    def upd(c: dict = cache, inp: dict = x, **kw: Any) -> dict:
        kw = {"update_idxs_tensor": pos, "page_table": pt, **kw}
        return call(op, c, inp, **{k: v for k, v in kw.items() if v is not None})

    yield "update/ok", upd()
    yield "update/input-row-major", upd(inp={**x, "layout": "ROW_MAJOR"})
    yield "update/cache-row-major", upd(c=T([nb, nkv, bs, hd], layout="ROW_MAJOR"))
    yield "update/cache-uint32", upd(c=T([nb, nkv, bs, hd], "UINT32"))
    yield "update/cache-bfp4", upd(c=T([nb, nkv, bs, hd], "BFLOAT4_B"))
    yield "update/cache-fp32", upd(c=T([nb, nkv, bs, hd], "FLOAT32"))
    yield "update/input-dim0-2", upd(inp=T([2, users, nkv, hd], m=height((TILE, hd), 2 * users)))
    yield "update/cache-sharded", upd(c=T([nb, nkv, bs, hd], m=height((nb * nkv * bs // 64, hd), 64)))
    yield "update/cache-l1", upd(c=T([nb, nkv, bs, hd], m=L1))
    yield "update/input-hd-32", upd(inp=T([1, users, nkv, 32], m=height((TILE, 32), users)))
    yield "update/input-fewer-heads", upd(inp=T([1, users, 1, hd], m=height((TILE, hd), users)))
    unpaged = T([users, nkv, 256, hd], "BFLOAT16")
    yield "update/unpaged-ok", call(op, unpaged, x, update_idxs=[0] * users)
    yield "update/unpaged-hd-32", call(op, unpaged, T([1, users, nkv, 32], m=height((TILE, 32), users)),
                                       update_idxs=[0] * users)
    yield "update/unpaged-share-cache", call(op, unpaged, x, update_idxs=[0] * users, share_cache=True)
    yield "update/unpaged-batch-16", call(op, T([16, nkv, 256, hd]), x, update_idxs=[0] * users)
    yield "update/unpaged-no-idx", call(op, unpaged, x)
    yield "update/unpaged-list-16", call(op, unpaged, x, update_idxs=[0] * 16)
    for k, v in (("block_size", 32), ("num_kv_heads", 1), ("cache_position_modulo", 128)):
        yield f"update/unpaged-{k}", call(op, unpaged, x, update_idxs=[0] * users, **{k: v})
    yield "update/paged-share-cache", upd(share_cache=True)
    yield "update/paged-idx-list", call(op, cache, x, update_idxs=[0] * users, page_table=pt)
    yield "update/page-table-uint32", upd(page_table=i32([users, 4], dtype="UINT32"))
    yield "update/page-table-tile", upd(page_table=i32([users, 4], layout="TILE"))
    yield "update/page-table-16-rows", upd(page_table=i32([16, 4]))
    yield "update/page-table-too-wide", upd(page_table=i32([users, nb + 1]))
    yield "update/idx-uint32", upd(update_idxs_tensor=i32([users], dtype="UINT32"))
    yield "update/idx-tile", upd(update_idxs_tensor=i32([users], layout="TILE"))
    yield "update/idx-width-sharded", upd(update_idxs_tensor=i32([1, users], m=width((1, 16), 2)))
    yield "update/idx-height-sharded", upd(update_idxs_tensor=i32([1, users], m=height((1, users), 1)))
    yield "update/idx-height-sharded-2-cores", upd(update_idxs_tensor=i32([2, 16], m=height((1, 16), 2)))
    yield "update/idx-height-sharded-1-core-2-rows", upd(update_idxs_tensor=i32([2, users], m=height((2, users), 1)))
    yield "update/idx-l1", upd(update_idxs_tensor=i32([users], m=L1))
    yield "update/idx-16", upd(update_idxs_tensor=i32([16]))
    yield "update/input-interleaved", upd(inp=T([1, users, nkv, hd]))
    yield "update/input-l1-interleaved", upd(inp=T([1, users, nkv, hd], m=L1))
    yield "update/input-width-sharded", upd(inp=T([1, users, nkv, hd], m=width((users * TILE, TILE), 2)))
    yield "update/input-col-major", upd(inp=T([1, users, nkv, hd], m=mem("HEIGHT_SHARDED", "L1", rows(users),
                                                                          (TILE, hd), "COL_MAJOR")))
    yield "update/input-8-cores", upd(inp=T([1, users, nkv, hd], m=height((4 * TILE, hd), 8)))
    yield "update/input-offset-grid", upd(inp=T([1, users, nkv, hd], m=mem("HEIGHT_SHARDED", "L1",
                                                                           [(1, 0, 7, 3), (0, 4, 3, 4)], (TILE, hd))))
    yield "update/input-bfp8", upd(inp=T([1, users, nkv, hd], "BFLOAT8_B", m=height((TILE, hd), users)))
    yield "update/input-fp32-into-bfp8", upd(inp=T([1, users, nkv, hd], "FLOAT32", m=height((TILE, hd), users)))
    yield "update/batch-offset-1", upd(batch_offset=1)
    # The program's circular buffers (each core holds every user's cache tiles of the row): a 576-wide bf16 row
    # (DeepSeek-V3's latent) outgrows a core's L1; a 544-wide one fits, unless a wider (fp32) input shard sits lower.
    for w, dt in ((576, "BFLOAT16"), (576, "BFLOAT8_B"), (544, "BFLOAT16")):
        yield f"update/w{w}-{dt.lower()}", upd(c=T([nb, 1, bs, w], dt), inp=T([1, users, 1, w], m=height((TILE, w),
                                                                                                      users)))
    yield "update/w544-fp32-input", upd(c=T([nb, 1, bs, 544]), inp=T([1, users, 1, 544], "FLOAT32",
                                                                      m=height((TILE, 544), users)))

    fop = "experimental.paged_fused_update_cache"
    x1 = T([1, users, nkv, hd], m=height((TILE, hd), users))
    x2 = T([1, users, nkv, hd], m=mem("HEIGHT_SHARDED", "L1", [(0, 4, 7, 7)], (TILE, hd)))

    def fused(a: dict = x1, b: dict = x2, **kw: Any) -> dict:
        return call(fop, cache, a, cache, b, **{"update_idxs_tensor": pos, "page_table": pt, **kw})

    yield "fused/ok", fused()
    yield "fused/mixed-layouts", fused(b={**x2, "layout": "ROW_MAJOR"})
    yield "fused/row-major-hd64", fused(a={**x1, "layout": "ROW_MAJOR"}, b={**x2, "layout": "ROW_MAJOR"})
    yield "fused/input-bfp8", fused(a={**x1, "dtype": "BFLOAT8_B"})
    yield "fused/input-hd-32", fused(a=T([1, users, nkv, 32], m=height((TILE, 32), users)))
    yield "fused/same-grid", fused(b=x1)
    yield "fused/cores-32-vs-8", fused(b=T([1, users, nkv, hd], m=mem("HEIGHT_SHARDED", "L1", [(0, 4, 7, 4)],
                                                                      (4 * TILE, hd))))
    yield "fused/four-users-per-core", fused(a=T([1, users, nkv, hd], m=height((4 * TILE, hd), 8)),
                                             b=T([1, users, nkv, hd], m=mem("HEIGHT_SHARDED", "L1", [(0, 4, 7, 4)],
                                                                            (4 * TILE, hd))))

    def wide(w: int, dtype: str = "BFLOAT16") -> dict:
        c = T([nb, 1, bs, w])
        a_ = T([1, users, 1, w], dtype, m=height((TILE, w), users))
        b_ = T([1, users, 1, w], dtype, m=mem("HEIGHT_SHARDED", "L1", [(0, 4, 7, 7)], (TILE, w)))
        return call(fop, c, a_, c, b_, update_idxs_tensor=pos, page_table=pt)

    yield "fused/w576", wide(576)
    yield "fused/w544", wide(544)
    yield "fused/w544-fp32-inputs", wide(544, "FLOAT32")


def paged_fill() -> Iterator[tuple[str, dict]]:
    op = "experimental.paged_fill_cache"
    nkv, hd, bs, nb = 2, 64, 64, 128
    cache = T([nb, nkv, bs, hd], "BFLOAT8_B")
    x = T([1, nkv, 128, hd], "BFLOAT8_B")
    pt = i32([8, 4])

    def fill(c: dict = cache, inp: dict = x, table: dict = pt, **kw: Any) -> dict:
        return call(op, c, inp, table, **kw)

    yield "fill/ok", fill(batch_idx=3)
    yield "fill/bfp8", fill()
    yield "fill/bfp4", fill(c={**cache, "dtype": "BFLOAT4_B"}, inp={**x, "dtype": "BFLOAT4_B"})
    yield "fill/input-host", fill(inp=host([1, nkv, 128, hd], "BFLOAT8_B", "TILE"))
    yield "fill/input-batch-2", fill(inp=T([2, nkv, 128, hd], "BFLOAT8_B"))
    yield "fill/cache-uint32", fill(c=T([nb, nkv, bs, hd], "UINT32"), inp=T([1, nkv, 128, hd], "UINT32"))
    yield "fill/bf16-into-bfp8", fill(inp={**x, "dtype": "BFLOAT16"})
    yield "fill/input-sharded", fill(inp=T([1, nkv, 128, hd], "BFLOAT8_B", m=height((TILE, hd), 8)))
    yield "fill/input-l1", fill(inp=T([1, nkv, 128, hd], "BFLOAT8_B", m=L1))
    yield "fill/page-table-sharded", fill(table=i32([8, 4], m=height((1, 4), 8)))
    yield "fill/page-table-l1", fill(table=i32([8, 4], m=L1))
    yield "fill/page-table-l1-8-wide", fill(table=i32([8, 8], m=L1))
    yield "fill/page-table-uint32", fill(table=i32([8, 4], dtype="UINT32"))
    yield "fill/page-table-tile", fill(table=i32([8, 4], layout="TILE"))
    yield "fill/batch-idx-32", fill(table=i32([32, 4]), batch_idx=32)
    yield "fill/batch-idx-31", fill(table=i32([32, 4]), batch_idx=31)
    yield "fill/input-hd-32", fill(inp=T([1, nkv, 128, 32], "BFLOAT8_B"))
    yield "fill/input-16-heads", fill(inp=T([1, 16, 128, hd], "BFLOAT8_B"))
    yield "fill/input-too-long", fill(inp=T([1, nkv, 512, hd], "BFLOAT8_B"))
    yield "fill/input-seq-100", fill(inp=T([1, nkv, 100, hd], "BFLOAT8_B"))
    yield "fill/batch-idx-tensor", fill(batch_idx_tensor=i32([1]))
    yield "fill/batch-idx-tensor-2-for-1", fill(batch_idx_tensor=i32([2]))
    yield "fill/batch-idx-tensor-bf16", fill(batch_idx_tensor=T([1], "BFLOAT16", "ROW_MAJOR"))
    yield "fill/batch-idx-tensor-uint32", fill(batch_idx_tensor=i32([1], dtype="UINT32"))
    yield "fill/batch-idx-tensor-l1", fill(batch_idx_tensor=i32([1], m=L1))


def sdpa_decode() -> Iterator[tuple[str, dict]]:
    op = "transformer.paged_scaled_dot_product_attention_decode"
    users, nh, nkv, hd, bs, nb = 32, 8, 2, 64, 64, 128
    q = T([1, users, nh, hd])
    kc = T([nb, nkv, bs, hd], "BFLOAT8_B")
    pt, pos = i32([users, 4]), i32([users])

    def sd(qq: dict = q, k: dict = kc, v: dict = kc, table: dict = pt, **kw: Any) -> dict:
        kw = {"cur_pos_tensor": pos, **kw}
        return call(op, qq, k, v, table, **{k2: v2 for k2, v2 in kw.items() if v2 is not None})

    def pc(k_chunk: int = 0, gx: int = 8, gy: int = 8) -> dict:
        return obj("SDPAProgramConfig", compute_with_storage_grid_size=coord(gx, gy), q_chunk_size=32,
                   k_chunk_size=k_chunk, exp_approx_mode=False)

    yield "sdpa-decode/ok", sd()
    yield "sdpa-decode/q-fp32", sd(qq={**q, "dtype": "FLOAT32"})
    yield "sdpa-decode/k-fp32", sd(k={**kc, "dtype": "FLOAT32"})
    yield "sdpa-decode/v-row-major", sd(v={**kc, "dtype": "BFLOAT16", "layout": "ROW_MAJOR"})
    yield "sdpa-decode/q-row-major-dram", sd(qq={**q, "layout": "ROW_MAJOR"})
    rm_q = T([1, users, nh, hd], layout="ROW_MAJOR", m=height((nh, hd), users))
    yield "sdpa-decode/q-row-major-sharded", sd(qq=rm_q)
    mqa = T([nb, 1, bs, hd], "BFLOAT8_B")
    yield "sdpa-decode/mqa-q-row-major-sharded-output", sd(qq=rm_q, k=mqa, v=mqa,
                                                           memory_config=height((nh, hd), users))
    yield "sdpa-decode/mqa-q-row-major-32-heads-sharded-output", sd(
        qq=T([1, users, TILE, hd], layout="ROW_MAJOR", m=height((TILE, hd), users)), k=mqa, v=mqa,
        memory_config=height((TILE, hd), users))
    yield "sdpa-decode/q-width-sharded", sd(qq=T([1, users, nh, hd], m=width((users * TILE, TILE), 2)))
    yield "sdpa-decode/q-height-sharded", sd(qq=T([1, users, nh, hd], m=height((TILE, hd), users)))
    yield "sdpa-decode/q-l1", sd(qq={**q, "mem": L1})
    yield "sdpa-decode/k-l1", sd(k={**kc, "mem": L1})
    yield "sdpa-decode/output-width-sharded", sd(memory_config=width((users * TILE, TILE), 2))
    yield "sdpa-decode/output-l1", sd(memory_config=L1)
    yield "sdpa-decode/causal-with-mask", sd(attn_mask=T([1, users, nh, 4 * bs]))
    yield "sdpa-decode/no-cur-pos", sd(cur_pos_tensor=None)
    yield "sdpa-decode/cur-pos-uint32", sd(cur_pos_tensor=i32([users], dtype="UINT32"))
    yield "sdpa-decode/cur-pos-tile", sd(cur_pos_tensor=i32([1, users], layout="TILE"))
    yield "sdpa-decode/cur-pos-1xB", sd(cur_pos_tensor=i32([1, users]))
    yield "sdpa-decode/cur-pos-16", sd(cur_pos_tensor=i32([16]))
    yield "sdpa-decode/page-table-uint32", sd(table=i32([users, 4], dtype="UINT32"))
    yield "sdpa-decode/page-table-l1", sd(table=i32([users, 4], m=L1))
    yield "sdpa-decode/page-table-tile", sd(table=i32([users, 4], layout="TILE"))
    yield "sdpa-decode/v-block-32", sd(v=T([nb, nkv, 32, hd], "BFLOAT8_B"))
    yield "sdpa-decode/q-hd-64-cache-128", sd(k=T([nb, nkv, bs, 128], "BFLOAT8_B"), v=T([nb, nkv, bs, 128],
                                                                                        "BFLOAT8_B"))
    yield "sdpa-decode/k-chunk-48", sd(program_config=pc(48))
    yield "sdpa-decode/k-chunk-16", sd(program_config=pc(16))
    yield "sdpa-decode/k-chunk-128", sd(program_config=pc(128))
    yield "sdpa-decode/v-4-heads", sd(v=T([nb, 4, bs, hd], "BFLOAT8_B"))
    yield "sdpa-decode/gqa-sharded-output", sd(memory_config=height((TILE, hd), users))
    yield "sdpa-decode/mqa-sharded-output", sd(k=mqa, v=mqa, memory_config=height((TILE, hd), users))
    yield "sdpa-decode/gqa-q-bfp8", sd(qq={**q, "dtype": "BFLOAT8_B"})
    yield "sdpa-decode/mqa-q-bfp8", sd(qq={**q, "dtype": "BFLOAT8_B"}, k=mqa, v=mqa)
    yield "sdpa-decode/9q-2kv", sd(qq=T([1, users, 9, hd]))
    yield "sdpa-decode/9q-3kv", sd(qq=T([1, users, 9, hd]), k=T([nb, 3, bs, hd], "BFLOAT8_B"),
                                   v=T([nb, 3, bs, hd], "BFLOAT8_B"))
    yield "sdpa-decode/grid-9x9", sd(program_config=pc(0, 9, 9))
    yield "sdpa-decode/grid-8x8", sd(program_config=pc(0, 8, 8))
    yield "sdpa-decode/grid-4x4", sd(program_config=pc(0, 4, 4))
    yield "sdpa-decode/grid-8x4", sd(program_config=pc(0, 8, 4))
    yield "sdpa-decode/bf16-cache-window", sd(k={**kc, "dtype": "BFLOAT16"}, v={**kc, "dtype": "BFLOAT16"},
                                              sliding_window_size=128)


def matmul() -> Iterator[tuple[str, dict]]:
    """matmul/linear: the general rules, the program configs' common rules, 2-D multicast and DRAM-sharded
    configs (the decode and prefill forms the models use), with each rule broken next to its valid call."""
    a, b = T([1, 1, 32, 64]), T([64, 128])
    yield "matmul/ok", call("matmul", a, b)
    yield "matmul/a-host", call("matmul", host([1, 1, 32, 64], layout="TILE"), b)
    yield "matmul/a-row-major", call("matmul", T([1, 1, 32, 64], layout="ROW_MAJOR"), b)
    yield "matmul/a-int32", call("matmul", T([1, 1, 32, 64], "INT32"), b)
    yield "matmul/a-bfp8", call("matmul", T([1, 1, 32, 64], "BFLOAT8_B"), b)
    yield "matmul/b-uint16", call("matmul", a, T([64, 128], "UINT16"))
    yield "matmul/b-bfp4", call("matmul", a, T([64, 128], "BFLOAT4_B"))
    yield "matmul/k-mismatch", call("matmul", a, T([96, 128]))
    yield "matmul/k-unaligned", call("matmul", T([1, 1, 32, 100]), T([100, 128]))
    yield "matmul/b-batched-rank-up", call("matmul", T([64, 128]), T([4, 128, 256]))
    yield "matmul/a-rank2-b-rank2", call("matmul", T([64, 128]), T([128, 256]))
    yield "matmul/batched-b-rank-3-vs-4", call("matmul", T([1, 2, 64, 128]), T([2, 128, 64]))
    yield "matmul/batched-equal", call("matmul", T([1, 2, 64, 128]), T([1, 2, 128, 64]))
    yield "matmul/batched-2-vs-3", call("matmul", T([1, 2, 64, 128]), T([1, 3, 128, 64]))
    yield "matmul/l1-inputs", call("matmul", {**a, "mem": L1}, {**b, "mem": L1})
    yield "matmul/dtype-bfp8-out", call("linear", a, b, dtype=enum("DataType.BFLOAT8_B"))
    yield "matmul/bias", call("linear", a, b, bias=T([1, 1, 1, 128]))

    def pc2d(gx: int = 8, gy: int = 2, in0: int = 2, sub_h: int = 1, sub_w: int = 1, m: int = 1, n: int = 1,
             transpose: bool = False) -> dict:
        return obj("MatmulMultiCoreReuseMultiCastProgramConfig", compute_with_storage_grid_size=coord(gx, gy),
                   in0_block_w=in0, out_subblock_h=sub_h, out_subblock_w=sub_w, per_core_M=m, per_core_N=n,
                   transpose_mcast=transpose, fused_activation=None, fuse_batch=True)

    x2, w2 = T([1, 1, 64, 256]), T([1, 1, 256, 256], "BFLOAT8_B")
    yield "matmul/2d/ok", call("linear", x2, w2, program_config=pc2d())
    yield "matmul/2d/subblock-2x8", call("linear", x2, w2, program_config=pc2d(sub_h=2, sub_w=8, m=2, n=8, gx=1,
                                                                               gy=1))
    yield "matmul/2d/grid-9x8", call("linear", x2, w2, program_config=pc2d(gx=9, gy=8))
    yield "matmul/2d/in0-block-w-3", call("linear", x2, w2, program_config=pc2d(in0=3))
    yield "matmul/2d/too-many-x", call("linear", x2, w2, program_config=pc2d(gx=4))
    yield "matmul/2d/too-many-y", call("linear", x2, w2, program_config=pc2d(gy=1))
    yield "matmul/2d/per-core-m-too-big", call("linear", x2, w2, program_config=pc2d(m=4))
    yield "matmul/2d/dram-sharded-weight", call("linear", x2, T([1, 1, 256, 256], "BFLOAT8_B", m=mem(
        "WIDTH_SHARDED", "DRAM", [(0, 0, 11, 0)], (256, 32))), program_config=pc2d())
    yield "matmul/2d/block-sharded-out", call("linear", x2, w2, program_config=pc2d(), memory_config=mem(
        "BLOCK_SHARDED", "L1"))
    yield "matmul/core-grid-and-pc", call("linear", x2, w2, program_config=pc2d(),
                                          core_grid=obj("CoreGrid", x=8, y=2))

    # DRAM-sharded decode GEMM: [32, 576] width-sharded on 18 cores, weight width-sharded over the 12 DRAM banks
    def pcd(in0: int = 1, n: int = 2, m: int = 1) -> dict:
        return obj("MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig", in0_block_w=in0, per_core_M=m,
                   per_core_N=n, fused_activation=None)

    xd = T([1, 1, 32, 576], m=mem("WIDTH_SHARDED", "L1", rows(18, width=6), (32, 32)))
    wd = T([1, 1, 576, 960], "BFLOAT8_B", m=mem("WIDTH_SHARDED", "DRAM", [(0, 0, 11, 0)], (576, 96)))
    ws = mem("WIDTH_SHARDED", "L1")
    yield "matmul/dram-sharded/ok", call("linear", xd, wd, program_config=pcd(), memory_config=ws,
                                         dtype=enum("DataType.BFLOAT16"))
    yield "matmul/dram-sharded/a-interleaved", call("linear", T([1, 1, 32, 576], m=L1), wd, program_config=pcd(),
                                                    memory_config=ws)
    yield "matmul/dram-sharded/out-dram", call("linear", xd, wd, program_config=pcd())
    yield "matmul/dram-sharded/a-col-major", call("linear", T([1, 1, 32, 576], m=mem(
        "WIDTH_SHARDED", "L1", rows(18, width=6), (32, 32), "COL_MAJOR")), wd, program_config=pcd(), memory_config=ws)
    yield "matmul/dram-sharded/m-64", call("linear", T([1, 1, 64, 576], m=mem(
        "WIDTH_SHARDED", "L1", rows(18, width=6), (64, 32))), wd, program_config=pcd(m=2), memory_config=ws)
    yield "matmul/dram-sharded/in0-block-w-3", call("linear", T([1, 1, 32, 576], m=mem(
        "WIDTH_SHARDED", "L1", rows(9), (32, 64))), wd, program_config=pcd(in0=4), memory_config=ws)
    yield "matmul/dram-sharded/b-interleaved", call("linear", xd, T([1, 1, 576, 960], "BFLOAT8_B"),
                                                    program_config=pcd(), memory_config=ws)
    yield "matmul/dram-sharded/uneven-k", call("linear", T([1, 1, 32, 640], m=mem(
        "WIDTH_SHARDED", "L1", rows(7), (32, 96))), T([1, 1, 640, 960], "BFLOAT8_B", m=mem(
            "WIDTH_SHARDED", "DRAM", [(0, 0, 11, 0)], (640, 96))), program_config=pcd(in0=1), memory_config=ws)
    yield "matmul/pc-in0-block-w-0", call("linear", xd, wd, program_config=pcd(in0=0), memory_config=ws)

    # Activations by name (fused in the kernel with a core grid or program config, else a unary op afterwards) and
    # the optional output tensor (its dtype and place; an explicit dtype must agree, its volume must be the output's).
    grid = obj("CoreGrid", x=8, y=1)
    yield "matmul/fused-mish-core-grid", call("linear", a, b, activation="mish", core_grid=grid)
    yield "matmul/mish-unfused", call("linear", a, b, activation="mish")
    for act in ("relu6", "hardsigmoid", "tanh", "gelu_approx"):
        yield f"matmul/fused-{act}-core-grid", call("linear", a, b, activation=act, core_grid=grid)
    yield "matmul/optional-out", call("linear", a, b, optional_output_tensor=T([1, 1, 32, 128]))
    yield "matmul/optional-out-shape", call("linear", a, b, optional_output_tensor=T([1, 1, 64, 128]))
    yield "matmul/optional-out-rank2", call("matmul", a, b, optional_output_tensor=T([32, 128]))
    yield "matmul/optional-out-l1", call("linear", a, b, optional_output_tensor=T([1, 1, 32, 128], m=L1))
    yield "matmul/optional-out-bfp8", call("linear", a, b, optional_output_tensor=T([1, 1, 32, 128], "BFLOAT8_B"))
    yield "matmul/optional-out-dtype-mismatch", call("linear", a, b, dtype=enum("DataType.BFLOAT16"),
                                                     optional_output_tensor=T([1, 1, 32, 128], "BFLOAT8_B"))


def heads() -> Iterator[tuple[str, dict]]:
    """Splitting QKV into heads and concatenating heads, decode (height-sharded one user per core) and prefill."""
    dec, cat = "experimental.nlp_create_qkv_heads_decode", "experimental.nlp_concat_heads_decode"
    hs = mem("HEIGHT_SHARDED", "L1")

    def qkv(users: int = 32, width: int = 12 * 64, dtype: str = "BFLOAT16", m: dict = L1, layout: str = "TILE",
            dim1: int = 1) -> dict:
        return T([1, dim1, users, width], dtype, layout, m)

    def dd(x: dict = None, nh: int = 8, nkv: int = 2, **kw: Any) -> dict:
        return call(dec, x or qkv(), num_heads=nh, num_kv_heads=nkv, **{"memory_config": hs, **kw})

    yield "heads-decode/ok", dd()
    yield "heads-decode/smollm2", dd(qkv(width=15 * 64), nh=9, nkv=3)
    yield "heads-decode/4-users", dd(qkv(users=4, width=8 * 32), nh=4, nkv=2)
    yield "heads-decode/width-6176", dd(qkv(width=6176), nh=32, nkv=8)
    yield "heads-decode/bfp8", dd(qkv(dtype="BFLOAT8_B"))
    yield "heads-decode/fp32", dd(qkv(dtype="FLOAT32"))
    yield "heads-decode/row-major", dd(qkv(layout="ROW_MAJOR"))
    yield "heads-decode/64-users", dd(qkv(users=64))
    yield "heads-decode/dim1-2", dd(qkv(dim1=2))
    yield "heads-decode/height-sharded-input", dd(qkv(m=height((32, 12 * 64), 1)))
    yield "heads-decode/width-sharded-input", dd(qkv(m=width((32, 64), 12)))
    yield "heads-decode/width-sharded-no-overlap", dd(qkv(m=width((32, 64), 12)), overlap_qk_coregrid=False)
    yield "heads-decode/col-major-input", dd(qkv(m=mem("WIDTH_SHARDED", "L1", rows(12), (32, 64), "COL_MAJOR")))
    yield "heads-decode/4q-8kv", dd(qkv(width=20 * 64), nh=4, nkv=8)
    yield "heads-decode/12q-8kv", dd(qkv(width=28 * 64), nh=12, nkv=8)
    yield "heads-decode/output-grid-16", dd(memory_config=height((32, 64), 16))
    yield "heads-decode/output-grid-64", dd(memory_config=height((32, 64), 64))
    yield "heads-decode/dram-output-config", dd(memory_config=DRAM)

    def hs_in(users: int = 32, padded: int = 32, hd: int = 64, per_core: int = 1, dtype: str = "BFLOAT16",
              m: dict | None = None) -> dict:
        return T([1, users, padded, hd], dtype, m=m or height((padded * per_core, hd), users // per_core))

    yield "concat-decode/ok", call(cat, hs_in(), num_heads=9)
    yield "concat-decode/8-heads", call(cat, hs_in(), num_heads=8)
    yield "concat-decode/8-users", call(cat, hs_in(users=8), num_heads=8)
    yield "concat-decode/bfp8", call(cat, hs_in(dtype="BFLOAT8_B"), num_heads=8)
    yield "concat-decode/fp32", call(cat, hs_in(dtype="FLOAT32"), num_heads=8)
    yield "concat-decode/64-users", call(cat, hs_in(users=64), num_heads=8)
    yield "concat-decode/33-heads", call(cat, hs_in(), num_heads=33)
    yield "concat-decode/interleaved", call(cat, T([1, 32, 32, 64], m=L1), num_heads=8)
    yield "concat-decode/width-sharded", call(cat, T([1, 32, 32, 64], m=width((1024, 32), 2)), num_heads=8)
    yield "concat-decode/two-users-per-core", call(cat, hs_in(per_core=2), num_heads=8)
    yield "concat-decode/dram-config", call(cat, hs_in(), num_heads=8, memory_config=DRAM)
    offset = mem("HEIGHT_SHARDED", "L1", [(1, 0, 7, 3), (0, 4, 3, 4)], (32, 64))
    yield "concat-decode/offset-grid", call(cat, hs_in(m=offset), num_heads=8)
    yield "concat-decode/offset-grid-with-subgrids", call(
        cat, hs_in(m=offset), num_heads=8, sub_core_grids=obj("CoreRangeSet", ranges=[[0, 0, 7, 7]]))

    pre, pcat = "experimental.nlp_create_qkv_heads", "experimental.nlp_concat_heads"

    def pd(x: dict = None, **kw: Any) -> dict:
        return call(pre, x or T([1, 1, 128, 12 * 64]), num_heads=8, num_kv_heads=2, **{"transpose_k_heads": False,
                                                                                        **kw})

    yield "heads/ok", pd()
    yield "heads/transpose-k", pd(transpose_k_heads=True)
    yield "heads/width-6176", pd(T([1, 1, 128, 6176]))
    yield "heads/bfp4", pd(T([1, 1, 128, 768], "BFLOAT4_B"))
    yield "heads/bfp8", pd(T([1, 1, 128, 768], "BFLOAT8_B"))
    yield "heads/row-major", pd(T([1, 1, 128, 768], layout="ROW_MAJOR"))
    yield "heads/dim1-2", pd(T([1, 2, 128, 768]))
    yield "heads/seq-100", pd(T([1, 1, 100, 768]))
    yield "heads/l1-output", pd(memory_config=L1)
    yield "concat/ok", call(pcat, T([1, 8, 128, 64]))
    yield "concat/bfp8", call(pcat, T([1, 8, 128, 64], "BFLOAT8_B"))
    yield "concat/bfp4", call(pcat, T([1, 8, 128, 64], "BFLOAT4_B"))
    yield "concat/row-major", call(pcat, T([1, 8, 128, 64], layout="ROW_MAJOR"))
    yield "concat/l1", call(pcat, T([2, 32, 64, 64], m=L1))


def cases() -> Iterator[tuple[str, dict]]:
    """(name, call) for every hand-written case; names are the fixture's keys, so a repeat is refused."""
    seen: set[str] = set()
    for name, case in _all_cases():
        if name in seen:
            raise ValueError(f"corpus case {name!r} is defined twice")
        seen.add(name)
        yield name, case


def _all_cases() -> Iterator[tuple[str, dict]]:
    yield from placement()
    yield from rope()
    yield from paged_update()
    yield from paged_fill()
    yield from sdpa_decode()
    yield from matmul()
    yield from heads()
    from tt_checks import (
        cases_all_to_all,
        cases_clamp,
        cases_data_movement,
        cases_distributed_norm,
        cases_eltwise,
        cases_heads_prefill,
        cases_misc,
        cases_mla,
        cases_moe,
        cases_options,
        cases_penalties,
        cases_sampling,
        cases_sdpa_decode_unpaged,
        cases_sdpa_prefill,
        cases_widths,
    )

    yield from cases_eltwise.cases()
    yield from cases_data_movement.cases()
    yield from cases_sdpa_prefill.cases()
    yield from cases_sdpa_decode_unpaged.cases()
    yield from cases_heads_prefill.cases()
    yield from cases_misc.cases()
    yield from cases_options.cases()
    yield from cases_sampling.cases()
    yield from cases_penalties.cases()
    yield from cases_distributed_norm.cases()
    yield from cases_widths.cases()
    yield from cases_moe.cases()
    yield from cases_clamp.cases()
    yield from cases_all_to_all.cases()
    yield from cases_mla.cases()
