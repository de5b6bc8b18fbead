import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["TT_BACKEND"] = "sim"


@pytest.fixture(scope="session")
def smollm2_dir():
    from tt_models.checkpoint import default_model_dir

    return str(default_model_dir())


@pytest.fixture(scope="session")
def smollm2_hf(smollm2_dir):
    """HF's SmolLM2 on the same (bf16-rounded) weights, fp32."""
    from tests.models.tiny import load_hf

    return load_hf(smollm2_dir)


# The profiles vLLM-level feature tests run on: the simulator-only fp32 `reference` (token-exact with HF), and the
# default `performance` (bfloat8_b weights and KV cache, what a device runs), whose numbers are held to the accuracy
# floors of tests/models/test_accuracy.py where a test compares with HF.
PROFILES = ("reference", "performance")


# KV blocks of the tests' engines (128 x 64 tokens: 16 full-length requests, far more than 4 slots use). The model's
# default token budget (131k tokens) holds gigabytes of simulated KV in host memory (SmolLM2 on `reference`: fp32,
# about 6 GB per engine), which the engine zero-fills at start and the machine then pages.
TEST_KV_BLOCKS = 128


def tt_options(profile: str, **extra) -> dict:
    """vLLM's additional_config for a TT engine on this profile."""
    return {"tt": {"optimizations": profile, **extra}}


@pytest.fixture(scope="session", params=PROFILES)
def llm(smollm2_dir, request):
    """One engine per profile for the tests that need a working server side: 4 sequences at a time. Every test
    using it runs on both profiles; `llm.tt_profile` says which."""
    engine = _session_engine(smollm2_dir, request.param)
    yield engine
    shutdown(engine)


def _session_engine(path: str, profile: str):
    from vllm import LLM

    # performance is the default profile: that engine is started as a user starts one, with no TT options (and the
    # model's own KV budget, bfloat8_b); the simulator-only fp32 reference one holds TEST_KV_BLOCKS.
    options = ({} if profile == "performance" else
               {"additional_config": tt_options(profile), "num_gpu_blocks_override": TEST_KV_BLOCKS})
    engine = LLM(model=path, max_num_seqs=4, max_model_len=512, block_size=64, seed=0, **options)
    engine.tt_profile = profile
    return engine


# Tests that hold one engine configuration to another token for token (preemption against no preemption, async against
# synchronous, chunked against whole prefill, two replicas against one, a cached prefix against a cold one) need a real
# model's confident logits, not all of SmolLM2's 30 layers: the same checkpoint cut to its first SHORT_LAYERS layers
# decodes a step in a third of the time (the 49k-token head stays). Numbers against HF use the whole model (`llm`).
SHORT_LAYERS = 4


@pytest.fixture(scope="session")
def short_dir(smollm2_dir, tmp_path_factory) -> str:
    from tests.models.tiny import first_layers

    return str(first_layers(smollm2_dir, tmp_path_factory.mktemp("short"), SHORT_LAYERS))


@pytest.fixture(scope="session")
def short_hf(short_dir):
    """HF on the cut checkpoint (bf16-rounded weights, fp32), for assert_same_greedy's tie checks."""
    from tests.models.tiny import load_hf

    return load_hf(short_dir)


@pytest.fixture(scope="session", params=PROFILES)
def short_llm(short_dir, request):
    """`llm`'s engine on the cut checkpoint, both profiles (performance started with no TT options, as `llm`)."""
    engine = _session_engine(short_dir, request.param)
    yield engine
    shutdown(engine)


def shutdown(engine) -> None:
    """Stop the engine-core process now, while pytest's output streams are still open."""
    import contextlib

    with contextlib.suppress(Exception):
        engine.llm_engine.engine_core.shutdown()


def hf_agreement_ids(hf, prompt_ids: list[list[int]], generated: list[list[int]]) -> tuple[float, float, int]:
    """Teacher forcing on an engine's own tokens: the share (%) of generated tokens that are HF's top-1, and that are
    among HF's top-5, at each position of each sequence; and how many tokens were compared."""
    import torch

    top1 = top5 = n = 0
    for prompt, toks in zip(prompt_ids, generated, strict=True):
        ids = list(prompt) + list(toks)
        with torch.no_grad():
            logits = hf(torch.tensor([ids])).logits[0]
        for pos, tok in enumerate(toks):
            ref = logits[len(prompt) + pos - 1].topk(5).indices
            top1 += int(tok == ref[0])
            top5 += int(tok in ref)
            n += 1
    return 100 * top1 / n, 100 * top5 / n, n


def hf_agreement(hf, outs) -> tuple[float, float, int]:
    """hf_agreement_ids of vLLM RequestOutputs."""
    return hf_agreement_ids(hf, [o.prompt_token_ids for o in outs], [o.outputs[0].token_ids for o in outs])


def check_against_hf(hf, prompt_ids: list[int], out_ids: list[int]) -> None:
    """Every generated token must be HF's greedy pick; a difference is only excused at a near-tie, after which the
    rest of that sequence cannot be compared (vLLM continued from its own token). One teacher-forced HF pass over
    the prompt and the generated tokens gives every step's logits (HF is causal: position i sees only tokens up to
    i, so these are the logits of each prefix; one pass instead of one per token)."""
    import torch

    from tests.models.tiny import NEAR_TIE

    if not out_ids:
        return
    ids = list(prompt_ids) + list(out_ids)
    with torch.no_grad():
        every = hf(torch.tensor([ids[:-1]])).logits[0]
    for step, tok in enumerate(out_ids):
        logits = every[len(prompt_ids) - 1 + step]
        ref = int(logits.argmax())
        if tok != ref:
            top2 = torch.topk(logits, 2).values
            gap = float(top2[0] - top2[1])
            assert gap < NEAR_TIE * abs(float(top2[0])), f"step {step}: TT {tok} != HF {ref} (gap {gap:.4g})"
            return


def bf16_ulp(x: float) -> float:
    """The spacing of bfloat16 values around x (8 significant bits)."""
    import math

    return 2.0 ** (math.floor(math.log2(abs(x))) - 7) if x else 2.0**-133


def assert_same_greedy(engine, hf, prompt_ids: list[list[int]], got: list[list[int]], want: list[list[int]],
                       profile: str) -> None:
    """Greedy tokens of two engine configurations (e.g. preempted vs not, chunked vs whole) on `profile`. Reference:
    identical. Performance: identical, or each sequence identical up to a position where `engine` (the one `want`
    came from) sees its top two logits at most two bf16 ulps apart (the device's logits are bf16; two ways of
    computing the same step can round such a pair either way), the top logit's size taken from HF's at that prefix.
    The rest of a sequence after such a tie is not compared (each engine continued from its own token)."""
    import torch
    from vllm import SamplingParams

    if profile == "reference" or got == want:
        assert got == want
        return
    for ids, a, b in zip(prompt_ids, got, want, strict=True):
        k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        if k is None:
            assert len(a) == len(b)
            continue
        prefix = list(ids) + list(b[:k])
        lp = engine.generate([{"prompt_token_ids": prefix}],
                             SamplingParams(temperature=0, max_tokens=1, logprobs=2))[0].outputs[0].logprobs[0]
        top = sorted(lp.values(), key=lambda v: v.rank)
        with torch.no_grad():
            top_logit = float(hf(torch.tensor([prefix])).logits[0, -1].max())
        gap = top[0].logprob - top[1].logprob
        assert gap <= 2 * bf16_ulp(top_logit), (f"position {k}: {a[k]} vs {b[k]}, top-2 gap {gap:.4g} > 2 bf16 ulps "
                                                f"of the top logit {top_logit:.4g}")


@contextlib.contextmanager
def vllm_serve(model: str, *flags: str, log: Path, env: dict | None = None) -> Iterator[tuple[Any, int]]:
    """`vllm serve MODEL FLAGS` as a user types it (vLLM's console script next to this Python) on a free port of
    127.0.0.1, its output in `log`. Yields (openai client, port) once the server answers; on exit stops its whole
    process group with Ctrl-C, then SIGKILL if it has not exited in 90 s."""
    import openai

    from tests.vllm.test_server import free_port

    vllm = shutil.which("vllm", path=str(Path(sys.executable).parent))
    assert vllm, "vLLM's console script is not installed next to this Python"
    port = free_port()
    with open(log, "w") as f:
        proc = subprocess.Popen([vllm, "serve", model, "--host", "127.0.0.1", "--port", str(port), *flags],
                                env=env if env is not None else dict(os.environ, TT_BACKEND="sim"), stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=log.parent)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=300, max_retries=0)
    try:
        deadline = time.time() + 600
        while True:
            assert proc.poll() is None, log.read_text()[-4000:]
            assert time.time() < deadline, "did not start: " + log.read_text()[-4000:]
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                time.sleep(2)
        yield client, port
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
