"""The simulator's numbers do not move when its code is made faster (issue 20): for every family of tests/models/tiny.py
(dense and mixture-of-experts) and every precision profile, and for tensor parallel on a 1x2 mesh, the logits of a
batched prefill, of a traced decode capture and of its replays, and of an untraced decode step hash (sha256 of the
float32 bytes of the live users' rows) to the values recorded in tests/fixtures/sim_logit_hashes.json.

The hashes were recorded from the simulator before its per-op cost was cut; a change that alters any bit of any
logit fails here. `python -m tests.models.test_bit_identical --record` rewrites the file (only for a change that is
meant to alter the numbers, which then says why).

Bits depend on the CPU's kernels as well as on the simulator: the file holds the hashes per machine fingerprint (torch
version, the CPU features that pick torch's GEMM and vector kernels). On a machine whose fingerprint is not recorded
the test skips, saying so; record it there from the code before a change to guard that change. The computation runs
on one torch thread (reductions may group differently with more)."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import pytest
import torch

from generator_vllm import TT_CLASSES
from tests.models.tiny import FAMILIES, MOE_FAMILIES, hf_config, make_tiny_model, make_wide_model
from tt_models.backend import ttnn
from tt_models.config.schema import CONFIG_ROOT

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_logit_hashes.json"
PROFILES = sorted(p.stem for p in (CONFIG_ROOT / "optimizations").glob("*.yaml"))
USERS, BLOCK, MAX_SEQ, PROMPT, STEPS = 32, 32, 128, 40, 3
LIVE = [0, 2, 5]  # live decode slots: the last one leaves rows out of a traced replay (live rows)
CASES = [(f, p) for f in (*FAMILIES, *MOE_FAMILIES) for p in PROFILES] + [
    ("llama_gqa_wide@1x2", p) for p in ("performance", "accuracy")]


def fingerprint() -> str:
    flags = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    isa = ",".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")
                   if f in flags)
    bf16 = torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    return f"torch {torch.__version__} {platform.machine()} [{isa}] bf16gemm={bf16}"


def _digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.detach().to(torch.float32).contiguous().numpy().tobytes()).hexdigest()[:32]


def run_case(family: str, profile: str, root: Path) -> dict[str, str]:
    """Hashes of every logit the case computes, by step."""
    if "@" in family:
        from tests.models.test_tensor_parallel import open_mesh

        name, shape = family.split("@")
        path = make_wide_model(name.removesuffix("_wide"), root)
        ctx = open_mesh(tuple(int(x) for x in shape.split("x")))
    else:
        from contextlib import contextmanager

        @contextmanager
        def one_chip():
            dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 24)
            try:
                yield dev
            finally:
                ttnn.close_mesh_device(dev)

        path = make_tiny_model(family, root)
        ctx = one_chip()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ctx as dev:
            return _hashes(path, dev, profile)
    finally:
        torch.set_num_threads(threads)


def _hashes(path: Path, dev, profile: str) -> dict[str, str]:
    cfg = hf_config(path)
    tt = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, dev, max_batch_size=USERS, max_seq_len=MAX_SEQ,
                                                                optimizations=profile)
    try:
        a = tt.model.args
        width = MAX_SEQ // BLOCK
        kv = tt.allocate_kv_cache((USERS * width + 1, tt.kv_cache_heads, BLOCK, a.head_dim), torch.bfloat16,
                                  a.n_layers)
        g = torch.Generator().manual_seed(0)
        table = (torch.randperm(USERS * width, generator=g)[: USERS * width] + 1).to(torch.int32).reshape(USERS, width)
        out: dict[str, str] = {}
        prompts = torch.randint(0, cfg.vocab_size, (len(LIVE), PROMPT), generator=g, dtype=torch.int32)
        lens = [PROMPT - 3 * i for i in range(len(LIVE))]  # unequal lengths: padding differs per user
        logits = tt.prefill_forward(prompts, table[LIVE], kv, lens)
        out["prefill"] = _digest(logits)
        tokens = torch.zeros(USERS, 1, dtype=torch.int32)
        pos = torch.full((USERS,), -1, dtype=torch.int32)
        tokens[LIVE, 0] = logits[:, 0].argmax(-1).to(torch.int32)
        pos[LIVE] = torch.tensor(lens, dtype=torch.int32)
        for step in range(STEPS + 1):  # the first call captures, the rest replay
            res = tt.decode_forward(tokens, pos, table, kv, enable_trace=True)
            out[f"traced decode {step}"] = _digest(res[LIVE])
            tokens[LIVE, 0] = res[LIVE, 0].argmax(-1).to(torch.int32)
            pos[LIVE] += 1
        res = tt.decode_forward(tokens, pos, table, kv, enable_trace=False)
        out["eager decode"] = _digest(res[LIVE])
        assert tt.trace_captures == 1
        return out
    finally:
        tt.release()


def _recorded() -> dict:
    return json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}


@pytest.mark.parametrize("family,profile", CASES)
def test_logits_are_bit_identical_to_the_recorded_ones(family, profile, tiny_root):
    table = _recorded().get(fingerprint())
    if table is None:
        pytest.skip(f"no hashes recorded for this machine ({fingerprint()}); see the module docstring")
    expected = table[f"{family}/{profile}"]
    got = run_case(family, profile, tiny_root)
    assert got == expected, f"{family}/{profile}: " + ", ".join(k for k in expected if got.get(k) != expected[k])


def record(root: Path) -> None:
    data = _recorded()
    data[fingerprint()] = {f"{f}/{p}": run_case(f, p, root) for f, p in CASES}
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(CASES)} cases for {fingerprint()} in {FIXTURE}")


if __name__ == "__main__":
    import os
    import tempfile

    os.environ.setdefault("TT_BACKEND", "sim")
    if "--record" not in sys.argv:
        sys.exit("usage: python -m tests.models.test_bit_identical --record")
    with tempfile.TemporaryDirectory() as d:
        record(Path(d))
