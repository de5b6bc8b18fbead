"""Corpus cases: all_to_all_dispatch / all_to_all_combine, the expert-parallel token exchange of tt-metal's MoE models
(models/demos/gpt_oss experts_throughput, DeepSeek): dispatch sends each token to the chips that hold one of its
top-k experts (the expert mapping [1, 1, E, D] one-hot, replicated) and gathers every chip's indices as metadata;
combine sends each expert's output rows back to the token's home chip, one slice per top-k slot.

Both are collectives: on one chip (N150, no fabric) the real ttnn refuses them before any check of the arguments, so
the single-chip corpus (tests/fixtures/ttnn_corpus_0.81.1.json, `cases()`) holds a few such calls; the rules are
recorded on mock meshes opened as the vLLM worker opens them (1-D fabric): N300 (1x2), T3K (1x8) and T3K as 2x4.
moe_expert_token_remap, a local op, is recorded on one chip (N150) as well.

    ./scripts/check_real_ttnn.sh --python -m tt_checks.cases_all_to_all N150 N300 T3K T3K:2x4   # records the meshes
    ./scripts/check_real_ttnn.sh --python -m tt_checks.cases_all_to_all --only remap/   # just those cases
    -> tests/fixtures/all_to_all_0.81.1.json, replayed on the simulator by tests/sim/test_all_to_all.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tt_checks.corpus_cases import L1, T, call, enum, width

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "all_to_all_0.81.1.json"
H, K = 256, 2


def _rm(shape: Any, dtype: str = "BFLOAT16", m: dict | None = None) -> dict:
    return T(shape, dtype, "ROW_MAJOR", **({} if m is None else {"m": m}))


def dispatch_cases(rows: int, cols: int) -> Iterator[tuple[str, dict]]:
    """Dispatch along the mesh's longer axis (the one tt-metal's models dispatch along), with each rule broken."""
    op = "ttnn.all_to_all_dispatch"
    d = rows * cols
    axis = 1 if cols > 1 else 0
    e = 4 * d
    tok, idx, mp = [1, 1, 32, H], [1, 1, 32, K], [1, 1, e, d]

    def disp(x: Any = None, i: Any = None, m: Any = None, **kw: Any) -> dict:
        kw.setdefault("cluster_axis", axis)
        return call(op, x or _rm(tok), i or _rm(idx, "UINT16"), m or _rm(mp, "UINT16"), **kw)

    p = "a2a-dispatch"
    yield f"{p}/ok", disp()
    yield f"{p}/concat-2", disp(output_concat_dim=2)
    yield f"{p}/concat-0", disp(output_concat_dim=0)
    yield f"{p}/concat-3", disp(output_concat_dim=3)
    yield f"{p}/bsh", disp(_rm([32, 1, 1, H]), _rm([32, 1, 1, K], "UINT16"))
    yield f"{p}/bsh-concat-2", disp(_rm([32, 1, 1, H]), _rm([32, 1, 1, K], "UINT16"), output_concat_dim=2)
    yield f"{p}/b4-s8", disp(_rm([4, 8, 1, H]), _rm([4, 8, 1, K], "UINT16"))
    yield f"{p}/b4-s8-concat-2", disp(_rm([4, 8, 1, H]), _rm([4, 8, 1, K], "UINT16"), output_concat_dim=2)
    yield f"{p}/tokens-64", disp(_rm([1, 1, 64, H]), _rm([1, 1, 64, K], "UINT16"), output_concat_dim=2)
    yield f"{p}/tokens-5", disp(_rm([1, 1, 5, H]), _rm([1, 1, 5, K], "UINT16"), output_concat_dim=2)
    yield f"{p}/k-8", disp(i=_rm([1, 1, 32, 8], "UINT16"), output_concat_dim=2)
    yield f"{p}/k-1", disp(i=_rm([1, 1, 32, 1], "UINT16"), output_concat_dim=2)
    yield f"{p}/hidden-100", disp(_rm([1, 1, 32, 100]), output_concat_dim=2)
    yield f"{p}/hidden-2880", disp(_rm([1, 1, 32, 2880]), output_concat_dim=2)
    yield f"{p}/axis-none", disp(cluster_axis=None)
    yield f"{p}/axis-other", disp(cluster_axis=1 - axis)
    yield f"{p}/axis-2", disp(cluster_axis=2)
    yield f"{p}/input-tile", disp(T(tok))
    yield f"{p}/input-fp32", disp(_rm(tok, "FLOAT32"))
    yield f"{p}/input-bfp8", disp(T(tok, "BFLOAT8_B"))
    yield f"{p}/input-l1", disp(_rm(tok, m=L1))
    yield f"{p}/indices-uint32", disp(i=_rm(idx, "UINT32"))
    yield f"{p}/indices-int32", disp(i=_rm(idx, "INT32"))
    yield f"{p}/indices-tile", disp(i=T(idx, "UINT16"))
    yield f"{p}/indices-bf16", disp(i=_rm(idx))
    yield f"{p}/mapping-uint32", disp(m=_rm(mp, "UINT32"))
    yield f"{p}/mapping-tile", disp(m=T(mp, "UINT16"))
    yield f"{p}/mapping-bf16", disp(m=_rm(mp))
    yield f"{p}/mapping-fewer-devices", disp(m=_rm([1, 1, e, max(d - 1, 1)], "UINT16"))
    yield f"{p}/mapping-more-devices", disp(m=_rm([1, 1, e, d + 1], "UINT16"))
    yield f"{p}/mapping-experts-odd", disp(m=_rm([1, 1, e + 1, d], "UINT16"))
    yield f"{p}/mapping-rank-2", disp(m=_rm([e, d], "UINT16"))
    yield f"{p}/input-rank-3", disp(_rm([1, 32, H]), _rm([1, 32, K], "UINT16"))
    yield f"{p}/indices-rank-3", disp(i=_rm([1, 32, K], "UINT16"))
    yield f"{p}/indices-other-tokens", disp(i=_rm([1, 1, 64, K], "UINT16"))
    yield f"{p}/indices-other-batch", disp(i=_rm([2, 1, 32, K], "UINT16"))
    yield f"{p}/to-l1", disp(memory_config=L1)
    yield f"{p}/to-sharded", disp(memory_config=width((32, 32), 8))
    yield f"{p}/to-sharded-fit", disp(memory_config=width((64 if axis == 1 else 32 * rows, 32), 8))
    yield f"{p}/links-0", disp(num_links=0)
    yield f"{p}/links-2", disp(num_links=2)
    yield f"{p}/links-1", disp(num_links=1)
    yield f"{p}/links-4", disp(num_links=4)
    yield f"{p}/ring", disp(topology=enum("Topology.Ring"))
    yield f"{p}/linear", disp(topology=enum("Topology.Linear"))
    yield f"{p}/out-given", disp(output_tensors={"t": "list", "v": [_rm([1, d if axis == 1 else rows, 32, H]),
                                                                     _rm([1, d if axis == 1 else rows, 32, K],
                                                                         "UINT16")]},
                                 output_concat_dim=1)
    yield f"{p}/out-given-wrong", disp(output_tensors={"t": "list", "v": [_rm([1, 1, 32, H]),
                                                                           _rm([1, 1, 32, K], "UINT16")]})


def combine_cases(rows: int, cols: int) -> Iterator[tuple[str, dict]]:
    """Combine of the dispatched rows: [experts per chip, 1, tokens x D[A], H] with the metadata dispatch returned."""
    op = "ttnn.all_to_all_combine"
    d = rows * cols
    axis = 1 if cols > 1 else 0
    da = cols if axis == 1 else rows
    e = 4 * d
    el = e // d
    x, meta, mp = [el, 1, 32 * da, H], [1, 1, 32 * da, K], [1, 1, e, d]

    def comb(a: Any = None, md: Any = None, m: Any = None, **kw: Any) -> dict:
        kw.setdefault("cluster_axis", axis)
        kw.setdefault("output_shard_dim", 2)
        return call(op, a or _rm(x), md or _rm(meta, "UINT16"), m or _rm(mp, "UINT16"), **kw)

    p = "a2a-combine"
    yield f"{p}/ok", comb()
    yield f"{p}/shard-1", comb(_rm([el, 32 * da, 1, H]), _rm([1, 32 * da, 1, K], "UINT16"), output_shard_dim=1)
    yield f"{p}/shard-1-on-seq", comb(output_shard_dim=1)
    yield f"{p}/shard-0", comb(output_shard_dim=0)
    yield f"{p}/shard-3", comb(output_shard_dim=3)
    yield f"{p}/b4-s8", comb(_rm([el, 4 * da, 8, H]), _rm([1, 4 * da, 8, K], "UINT16"), output_shard_dim=1)
    yield f"{p}/seq-not-divisible", comb(_rm([el, 1, 32 * da + 1, H]), _rm([1, 1, 32 * da + 1, K], "UINT16"))
    yield f"{p}/batch-not-divisible", comb(_rm([el, 3, 1, H]), _rm([1, 3, 1, K], "UINT16"), output_shard_dim=1)
    yield f"{p}/batch-odd", comb(_rm([el, 3 * da, 1, H]), _rm([1, 3 * da, 1, K], "UINT16"), output_shard_dim=1)
    yield f"{p}/seq-5", comb(_rm([el, 1, 5, H]), _rm([1, 1, 5, K], "UINT16"))
    yield f"{p}/k-8", comb(md=_rm([1, 1, 32 * da, 8], "UINT16"))
    yield f"{p}/hidden-100", comb(_rm([el, 1, 32 * da, 100]))
    yield f"{p}/axis-none", comb(cluster_axis=None)
    yield f"{p}/axis-other", comb(cluster_axis=1 - axis)
    yield f"{p}/axis-2", comb(cluster_axis=2)
    yield f"{p}/local-reduce", comb(_rm([1, 1, 32 * da, H]), local_reduce=True)
    yield f"{p}/local-reduce-experts", comb(local_reduce=True)
    yield f"{p}/local-reduce-devices", comb(_rm([d, 1, 32 * da, H]), local_reduce=True)
    yield f"{p}/experts-wrong", comb(_rm([el + 1, 1, 32 * da, H]))
    yield f"{p}/experts-all", comb(_rm([e, 1, 32 * da, H]))
    yield f"{p}/mapping-experts-odd", comb(m=_rm([1, 1, e + 1, d], "UINT16"))
    yield f"{p}/mapping-fewer-devices", comb(m=_rm([1, 1, e, max(d - 1, 1)], "UINT16"))
    yield f"{p}/input-tile", comb(T(x))
    yield f"{p}/input-fp32", comb(_rm(x, "FLOAT32"))
    yield f"{p}/input-l1", comb(_rm(x, m=L1))
    yield f"{p}/metadata-uint32", comb(md=_rm(meta, "UINT32"))
    yield f"{p}/metadata-tile", comb(md=T(meta, "UINT16"))
    yield f"{p}/mapping-uint32", comb(m=_rm(mp, "UINT32"))
    yield f"{p}/mapping-tile", comb(m=T(mp, "UINT16"))
    yield f"{p}/input-rank-3", comb(_rm([el, 32 * da, H]))
    yield f"{p}/metadata-rank-3", comb(md=_rm([1, 32 * da, K], "UINT16"))
    yield f"{p}/mapping-rank-3", comb(m=_rm([1, e, d], "UINT16"))
    yield f"{p}/metadata-other-tokens", comb(md=_rm([1, 1, 64 * da, K], "UINT16"))
    yield f"{p}/to-l1", comb(memory_config=L1)
    yield f"{p}/to-sharded", comb(memory_config=width((32, 32), 8))
    yield f"{p}/to-sharded-fit", comb(memory_config=width((64, 32), 8))
    yield f"{p}/links-0", comb(num_links=0)
    yield f"{p}/links-2", comb(num_links=2)
    yield f"{p}/links-4", comb(num_links=4)
    yield f"{p}/links-1", comb(num_links=1)
    yield f"{p}/ring", comb(topology=enum("Topology.Ring"))
    yield f"{p}/linear", comb(topology=enum("Topology.Linear"))
    yield f"{p}/out-given", comb(output_tensor=_rm([K, 1, 32, H]))
    yield f"{p}/out-given-wrong", comb(output_tensor=_rm([K, 1, 64, H]))
    yield f"{p}/out-given-tile", comb(output_tensor=T([K, 1, 32, H]))


def remap_cases(rows: int, cols: int) -> Iterator[tuple[str, dict]]:
    """moe_expert_token_remap of the dispatched metadata, as tt-metal's MoE models call it: a dense [1, B, S, E]
    score row per dispatched token (their constant ones mask), the expert mapping [1, 1, E, chips] and the metadata
    [1, B, S, K] dispatch returned; reduction_size 32 (one sparse_matmul block of rows)."""
    op = "ttnn.moe_expert_token_remap"
    d = rows * cols
    da = cols if cols > 1 else rows
    e = 4 * d
    n = 32 * da
    tk, meta, mp = [1, 1, n, e], [1, 1, n, K], [1, 1, e, d]

    def remap(t: Any = None, m: Any = None, md: Any = None, **kw: Any) -> dict:
        return call(op, t or _rm(tk), m or _rm(mp, "UINT16"), md or _rm(meta, "UINT16"), **kw)

    p = "remap"
    yield f"{p}/ok", remap(reduction_size=32)
    yield f"{p}/default-reduction", remap()
    yield f"{p}/reduction-1", remap(reduction_size=1)
    yield f"{p}/reduction-all", remap(reduction_size=n)
    yield f"{p}/reduction-0", remap(reduction_size=0)
    yield f"{p}/reduction-24", remap(reduction_size=24)
    yield f"{p}/reduction-twice", remap(reduction_size=2 * n)
    yield f"{p}/batch-dim", remap(_rm([1, n, 1, e]), md=_rm([1, n, 1, K], "UINT16"), reduction_size=32)
    yield f"{p}/b4-s8", remap(_rm([1, 4, 8 * da, e]), md=_rm([1, 4, 8 * da, K], "UINT16"), reduction_size=32)
    yield f"{p}/k-8", remap(md=_rm([1, 1, n, 8], "UINT16"), reduction_size=32)
    yield f"{p}/topk-fp32", remap(_rm(tk, "FLOAT32"), reduction_size=32)
    yield f"{p}/topk-uint16", remap(_rm(tk, "UINT16"), reduction_size=32)
    yield f"{p}/topk-tile", remap(T(tk), reduction_size=32)
    yield f"{p}/topk-bfp8", remap(T(tk, "BFLOAT8_B"), reduction_size=32)
    yield f"{p}/topk-l1", remap(_rm(tk, m=L1), reduction_size=32)
    yield f"{p}/topk-experts-other", remap(_rm([1, 1, n, e + d]), reduction_size=32)
    yield f"{p}/topk-batch-other", remap(_rm([1, 2, n, e]), reduction_size=32)
    yield f"{p}/topk-rows-fewer", remap(_rm([1, 1, 32, e]), reduction_size=32)
    yield f"{p}/topk-one-row", remap(_rm([1, 1, 1, e]), reduction_size=32)
    yield f"{p}/topk-rank-3", remap(_rm([1, n, e]), reduction_size=32)
    yield f"{p}/meta-tile", remap(md=T(meta, "UINT16"), reduction_size=32)
    yield f"{p}/meta-uint32", remap(md=_rm(meta, "UINT32"), reduction_size=32)
    yield f"{p}/meta-bf16", remap(md=_rm(meta), reduction_size=32)
    yield f"{p}/meta-batch-other", remap(md=_rm([1, 2, n // 2, K], "UINT16"), reduction_size=32)
    yield f"{p}/meta-dim0-2", remap(md=_rm([2, 1, n, K], "UINT16"), reduction_size=32)
    yield f"{p}/meta-rank-3", remap(md=_rm([1, n, K], "UINT16"), reduction_size=32)
    yield f"{p}/mapping-uint32", remap(m=_rm(mp, "UINT32"), reduction_size=32)
    yield f"{p}/mapping-bf16", remap(m=_rm(mp), reduction_size=32)
    yield f"{p}/mapping-tile", remap(m=T(mp, "UINT16"), reduction_size=32)
    yield f"{p}/mapping-line-devices", remap(m=_rm([1, 1, e, da], "UINT16"), reduction_size=32)
    yield f"{p}/mapping-more-devices", remap(m=_rm([1, 1, e, d + 1], "UINT16"), reduction_size=32)
    yield f"{p}/mapping-experts-other", remap(m=_rm([1, 1, e + d, d], "UINT16"), reduction_size=32)
    yield f"{p}/experts-odd", remap(_rm([1, 1, n, e + 1]), _rm([1, 1, e + 1, d], "UINT16"), reduction_size=32)
    yield f"{p}/experts-fewer-than-chips", remap(_rm([1, 1, n, d // 2]), _rm([1, 1, d // 2, d], "UINT16"),
                                                 reduction_size=32)
    yield f"{p}/mapping-rank-2", remap(m=_rm([e, d], "UINT16"), reduction_size=32)
    yield f"{p}/to-l1", remap(memory_config=L1, reduction_size=32)
    yield f"{p}/to-sharded", remap(memory_config=width((32, 32), 8), reduction_size=32)
    el = e // d
    yield f"{p}/out-given", remap(optional_output_mapping_tensor=_rm([1, 1, n, el]),
                                  optional_output_reduced_tensor=_rm([1, 1, n // 32, el], "UINT16"), reduction_size=32)
    yield f"{p}/out-given-wrong", remap(optional_output_mapping_tensor=_rm([1, 1, 32, e]),
                                        optional_output_reduced_tensor=_rm([1, 1, 1, 1], "UINT16"), reduction_size=32)
    yield f"{p}/out-given-tile", remap(optional_output_mapping_tensor=T([1, 1, n, 32]), reduction_size=32)
    yield f"{p}/reduced-given-only", remap(optional_output_reduced_tensor=_rm([1, 1, n // 32, el], "UINT16"),
                                           reduction_size=32)


def mesh_cases(rows: int, cols: int) -> Iterator[tuple[str, dict]]:
    """One chip (N150) records the remap only: it is a local op (tt-metal's MoE runs it on each chip of the mesh),
    and the two collectives are refused there before their arguments are read (`cases()`)."""
    if rows * cols > 1:
        yield from dispatch_cases(rows, cols)
        yield from combine_cases(rows, cols)
    yield from remap_cases(rows, cols)


def cases() -> Iterator[tuple[str, dict]]:
    """The single-chip corpus (mock N150, no fabric): the collectives are refused before their arguments are read."""
    yield "a2a-dispatch/one-chip", call("ttnn.all_to_all_dispatch", _rm([1, 1, 32, H]), _rm([1, 1, 32, K], "UINT16"),
                                        _rm([1, 1, 8, 1], "UINT16"), cluster_axis=1, output_concat_dim=2)
    yield "a2a-dispatch/one-chip-no-axis", call("ttnn.all_to_all_dispatch", _rm([1, 1, 32, H]),
                                                _rm([1, 1, 32, K], "UINT16"), _rm([1, 1, 8, 1], "UINT16"))
    yield "a2a-dispatch/one-chip-tile", call("ttnn.all_to_all_dispatch", T([1, 1, 32, H]), T([1, 1, 32, K], "UINT16"),
                                             _rm([1, 1, 8, 1], "UINT16"), cluster_axis=1)
    yield "a2a-combine/one-chip", call("ttnn.all_to_all_combine", _rm([8, 1, 32, H]), _rm([1, 1, 32, K], "UINT16"),
                                       _rm([1, 1, 8, 1], "UINT16"), cluster_axis=1, output_shard_dim=2)
    yield "a2a-combine/one-chip-no-axis", call("ttnn.all_to_all_combine", _rm([8, 1, 32, H]),
                                               _rm([1, 1, 32, K], "UINT16"), _rm([1, 1, 8, 1], "UINT16"))


# Calls that kill the real 0.81.1 process (a division by zero in the host code, SIGFPE) rather than raise: no verdict
# to record. The simulator refuses them (tests/sim/test_all_to_all.py).
CRASHES: dict[str, str] = {"a2a-dispatch/links-0": "SIGFPE",
                           # fewer experts than chips: 0 local experts, a circular buffer of 0 bytes (SIGFPE)
                           "remap/experts-fewer-than-chips": "SIGFPE"}
MESHES = {"N150": ("N150", (1, 1)), "N300": ("N300", (1, 2)), "T3K": ("T3K", (1, 8)), "T3K:2x4": ("T3K", (2, 4))}


def record_one(name: str, only: str = "") -> list[dict]:
    """Runs in its own process: the mock cluster is read once per process."""
    from tt_checks.corpus import run_call
    from tt_checks.mock import open_mock_device

    device, shape = MESHES[name]
    ttnn, mesh, _ = open_mock_device(device, ROOT / "tt_checks" / "mock_device" / "clusters", shape)
    rows = []
    for n, c in mesh_cases(*shape):
        if n in CRASHES or not n.startswith(only):
            continue
        print(f"case {n}", file=sys.stderr, flush=True)
        rows.append({"name": n, "call": c, "verdict": run_call(ttnn, mesh, c)})
    ttnn.close_mesh_device(mesh)
    return rows


def main(argv: list[str]) -> int:
    """Records the named meshes (all by default); `--only PREFIX` re-records just the cases whose names start with
    it and keeps the mesh's other recorded cases (e.g. --only remap/ after adding moe_expert_token_remap's)."""
    if argv and argv[0] == "--one":
        Path(argv[2]).write_text(json.dumps(record_one(argv[1], argv[3] if len(argv) > 3 else "")))
        return 0
    only = ""
    if argv[:1] == ["--only"]:
        only, argv = argv[1], argv[2:]
    data = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {"ttnn_version": "0.81.1", "meshes": {}}
    for name in argv or list(MESHES):
        out = Path(f"/tmp/a2a_{os.getpid()}_{name.replace(':', '_')}.json")
        env = {**os.environ, "TT_METAL_MOCK_CLUSTER_DESC_PATH": str(ROOT / "tt_checks" / "mock_device" / "clusters"
                                                                        / f"{MESHES[name][0]}.yaml")}
        subprocess.run([sys.executable, "-m", "tt_checks.cases_all_to_all", "--one", name, str(out), only], env=env,
                       check=True)
        rows = json.loads(out.read_text())
        out.unlink()
        if only:
            order = [n for n, _ in mesh_cases(*MESHES[name][1])]
            kept = {r["name"]: r for r in data["meshes"][name]["cases"] if not r["name"].startswith(only)}
            kept.update({r["name"]: r for r in rows})
            rows_all = [kept[n] for n in order if n in kept]
        else:
            rows_all = rows
        data["meshes"][name] = {"shape": list(MESHES[name][1]), "device": MESHES[name][0], "cases": rows_all}
        ok = sum(r["verdict"]["ok"] for r in rows)
        print(f"{name}: {len(rows)} cases, real ttnn accepts {ok}, rejects {len(rows) - ok}")
        for r in rows:
            v = r["verdict"]
            print(f"  {r['name']}: " + (f"ok {json.dumps(v['out'])[:300]} {v.get('alloc')}" if v["ok"]
                                         else f"REJECTS {v['error'][:300]}"))
    FIXTURE.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
