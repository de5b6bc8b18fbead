"""Async decode on vLLM's async scheduling: an engine whose decode steps are launched before the previous step's
tokens are collected gives the synchronous engine's outputs token for token (greedy, seeded on-device draws, host
sampling with logprobs, structured outputs, requests arriving, stopping, finishing and aborted mid-stream,
preemption), and the overlap really happens: step N+1's execute_model starts before the host waits on step N's
event, which never happens on the synchronous engine."""

import pytest
from vllm import LLM, SamplingParams
from vllm.engine.arg_utils import EngineArgs
from vllm.sampling_params import StructuredOutputsParams

from tests.vllm.conftest import TEST_KV_BLOCKS, shutdown, tt_options
from vllm_patches.tt_config import TTConfig

PROMPTS = ["The capital of France is", "Write a story about a dragon:", "List the planets:", "Explain gravity:",
           "Name three colors:", "The best way to learn is"]


@pytest.mark.parametrize("kw,tt,on", [
    ({}, {"sample_on_device_mode": "decode_only"}, True),
    ({}, {}, False),  # host sampling: every step waits for its logits anyway
    ({}, {"sample_on_device_mode": "decode_only", "async_decode": False}, False),
    ({"async_scheduling": False}, {"sample_on_device_mode": "decode_only"}, False),  # vLLM's --no-async-scheduling
])
def test_async_scheduling_config(smollm2_dir, kw, tt, on):
    cfg = EngineArgs(model=smollm2_dir, max_model_len=1024, max_num_seqs=8, additional_config={"tt": tt},
                     **kw).create_engine_config()
    assert cfg.scheduler_config.async_scheduling is on
    assert cfg.scheduler_config.scheduler_cls == ("vllm_patches.async_scheduler.TTAsyncScheduler" if on else
                                                  "vllm_patches.scheduler.TTScheduler")
    assert cfg.max_concurrent_batches == (2 if on else 1)  # vLLM's batch queue: step N+1 launched before N's output


def test_async_scheduling_needs_the_model_capability(smollm2_dir, monkeypatch):
    from generator_vllm import TTLlamaForCausalLM

    caps = {k: v for k, v in TTLlamaForCausalLM.model_capabilities.items() if k != "supports_async_decode"}
    monkeypatch.setattr(TTLlamaForCausalLM, "model_capabilities", caps)
    cfg = EngineArgs(model=smollm2_dir, max_model_len=1024, max_num_seqs=8,
                     additional_config={"tt": {"sample_on_device_mode": "decode_only"}}).create_engine_config()
    assert not cfg.scheduler_config.async_scheduling


def test_async_decode_flag_must_be_bool():
    with pytest.raises(ValueError, match=r'\["async_decode"\] must be true or false'):
        TTConfig.from_additional_config({"tt": {"async_decode": "yes"}})


def _engine(path, async_decode: bool, profile: str = "reference", **kw):
    import os

    os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # collective_rpc of lambdas reading the worker
    kw.setdefault("num_gpu_blocks_override", TEST_KV_BLOCKS)
    return LLM(model=path, max_num_seqs=4, max_model_len=256, block_size=64, seed=0, **kw,
               additional_config=tt_options(profile, sample_on_device_mode="decode_only", async_decode=async_decode))


@pytest.fixture(scope="module")
def async_llm(short_dir):
    engine = _engine(short_dir, True)
    yield engine
    shutdown(engine)


@pytest.fixture(scope="module")
def sync_llm(short_dir):
    engine = _engine(short_dir, False)
    yield engine
    shutdown(engine)


def _decoder(engine):
    return engine.collective_rpc(lambda w: (w.model_runner.async_decode, w.model_runner.decoder.launched,
                                            dict(w.model_runner.decoder.drains),
                                            list(w.model_runner.decoder.events)))[0]


def overlapped_steps(events) -> int:
    """Decode steps N whose successor's execute_model began before the host waited on N's token ids."""
    where = {tuple(e): i for i, e in enumerate(events)}
    late = len(events)  # a step never followed by another
    return sum(1 for kind, n in events if kind == "wait" and where.get(("execute", n + 1), late) < where[(kind, n)])


def test_async_scheduling_on_and_steps_overlap(async_llm, sync_llm):
    assert async_llm.llm_engine.vllm_config.scheduler_config.async_scheduling
    assert not sync_llm.llm_engine.vllm_config.scheduler_config.async_scheduling  # tt.async_decode=false
    params = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    on, _, _, before = _decoder(async_llm)
    assert on
    a = [list(o.outputs[0].token_ids) for o in async_llm.generate(PROMPTS[:4], params)]
    s = [list(o.outputs[0].token_ids) for o in sync_llm.generate(PROMPTS[:4], params)]
    assert a == s
    _, launched, drains, events = _decoder(async_llm)
    events = events[len(before):]
    # 4 prompts x 16 tokens: 15 decode steps of one unchanged batch, all but the first overlapping the previous.
    assert launched >= 15 and drains.get("steady", 0) >= 14
    assert overlapped_steps(events) >= 14
    off, sync_launched, _, sync_events = _decoder(sync_llm)
    assert not off and sync_launched == 0 and overlapped_steps(sync_events) == 0


def _run(engine, arrivals: dict, abort_at: int | None = None) -> tuple[dict, dict]:
    """Adds each step's arrivals ({engine step: [(request id, prompt, params)]}) while the others decode, aborts
    the request "abort" at step abort_at, and returns each finished request's tokens and logprobs."""
    llm = engine.llm_engine
    tokens, logprobs, step = {}, {}, 0
    while llm.has_unfinished_requests() or step <= max(arrivals):
        for rid, prompt, params in arrivals.get(step, []):
            llm.add_request(rid, prompt, params)
        if step == abort_at:
            llm.abort_request(["abort"])
        for out in llm.step():
            if out.finished and out.request_id != "abort":
                tokens[out.request_id] = list(out.outputs[0].token_ids)
                if out.outputs[0].logprobs:
                    logprobs[out.request_id] = [{t: lp.logprob for t, lp in d.items()} for d in out.outputs[0].logprobs]
        step += 1
    return tokens, logprobs


SEEDED = dict(top_k=20, top_p=0.9, ignore_eos=True)


@pytest.fixture
def performance_pair(short_dir):
    """The async and the synchronous engine on the performance profile (bfloat8_b weights and KV cache); one test
    uses them, so they are shut down after it rather than held beside the reference pair."""
    a, s = _engine(short_dir, True, "performance"), _engine(short_dir, False, "performance")
    yield a, s
    shutdown(a)
    shutdown(s)


@pytest.mark.parametrize("profile", ["reference", "performance"])
def test_device_sampled_requests_arriving_finishing_aborted_equal_sync(profile, request):
    """Greedy and seeded on-device draws; requests arrive while others decode (prefills), finish at different
    lengths or on a stop token, and one is aborted mid-stream. On both profiles: the async engine's tokens equal the
    synchronous engine's exactly (the same device computation, only launched earlier)."""
    if profile == "reference":
        async_llm, sync_llm = request.getfixturevalue("async_llm"), request.getfixturevalue("sync_llm")
    else:
        async_llm, sync_llm = request.getfixturevalue("performance_pair")
    # The "stop" request's stop token: the first token of its greedy continuation that does not repeat an earlier
    # one (after the first), so the request must stop on it mid-stream.
    probe = list(sync_llm.generate([PROMPTS[5]], SamplingParams(temperature=0, max_tokens=30, ignore_eos=True))[0]
                 .outputs[0].token_ids)
    stop_at = next(i for i in range(1, 29) if probe[i] not in probe[:i])
    arrivals = {
        0: [("g", PROMPTS[0], SamplingParams(temperature=0, max_tokens=20, ignore_eos=True)),
            ("s1", PROMPTS[1], SamplingParams(temperature=0.8, seed=11, max_tokens=14, **SEEDED)),
            ("s2", PROMPTS[2], SamplingParams(temperature=1.1, seed=5, max_tokens=6, **SEEDED)),
            ("abort", PROMPTS[3], SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))],
        4: [("s3", PROMPTS[4], SamplingParams(temperature=0.9, seed=3, max_tokens=10, **SEEDED))],
        9: [("stop", PROMPTS[5], SamplingParams(temperature=0, max_tokens=30, stop_token_ids=[probe[stop_at]]))],
    }
    _, launched0, drains0, _ = _decoder(async_llm)
    a_tokens, _ = _run(async_llm, arrivals, abort_at=6)
    s_tokens, _ = _run(sync_llm, arrivals, abort_at=6)
    assert set(a_tokens) == {"g", "s1", "s2", "s3", "stop"}
    assert a_tokens == s_tokens
    assert s_tokens["stop"] == probe[:stop_at + 1]  # stopped mid-stream on its token
    _, launched, drains, _ = _decoder(async_llm)
    assert launched > launched0
    # Late arrivals' prefills and finished or aborted requests drained the step in flight.
    for reason in ("steady", "layout", "prefill"):
        assert drains.get(reason, 0) > drains0.get(reason, 0), reason


def test_host_sampled_requests_joining_device_batch_equal_sync(async_llm, sync_llm):
    """Requests the device cannot sample (logprobs, top_k beyond 32) join a greedy batch decoding on the device:
    while they run every step samples on the host (synchronously), before and after the batch goes async.
    (A seeded request sampled on the device in some steps and by vLLM's sampler in others draws from two
    generators, so its tokens depend on which of its steps shared the batch with a host-only request; async
    scheduling runs vLLM's scheduler one step ahead, which moves arrivals by a step. Such requests are left out.)"""
    arrivals = {
        0: [("g0", PROMPTS[0], SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)),
            ("g1", PROMPTS[1], SamplingParams(temperature=0, max_tokens=18, ignore_eos=True))],
        5: [("lp", PROMPTS[5], SamplingParams(temperature=0.7, seed=2, max_tokens=6, logprobs=2))],
        8: [("k50", PROMPTS[2], SamplingParams(temperature=0.9, top_k=50, seed=4, max_tokens=5, ignore_eos=True))],
    }
    _, launched0, _, _ = _decoder(async_llm)
    a_tokens, a_logprobs = _run(async_llm, arrivals)
    s_tokens, s_logprobs = _run(sync_llm, arrivals)
    assert set(a_tokens) == {"g0", "g1", "lp", "k50"}
    assert a_tokens == s_tokens
    assert a_logprobs == s_logprobs and len(a_logprobs["lp"]) == 6
    assert _decoder(async_llm)[1] > launched0


def test_structured_output_equal_sync(async_llm, sync_llm):
    params = [SamplingParams(temperature=0, max_tokens=8,
                             structured_outputs=StructuredOutputsParams(choice=["Paris", "London", "Rome"])),
              SamplingParams(temperature=0.8, top_k=20, seed=9, max_tokens=12, ignore_eos=True)]
    _, launched0, _, _ = _decoder(async_llm)
    a_outs = async_llm.generate(PROMPTS[:2], params)
    a = [list(o.outputs[0].token_ids) for o in a_outs]
    s = [list(o.outputs[0].token_ids) for o in sync_llm.generate(PROMPTS[:2], params)]
    assert a == s
    assert a_outs[0].outputs[0].text in ("Paris", "London", "Rome")
    # The grammar's steps sample on the host; once it is done the other request's steps are launched async.
    assert _decoder(async_llm)[1] > launched0


def test_preemption_equal_sync(sync_llm, short_dir):
    params = SamplingParams(temperature=0, max_tokens=80, ignore_eos=True)
    reference = [list(o.outputs[0].token_ids) for o in sync_llm.generate(PROMPTS[:4], params)]
    # 6 usable blocks of 64 tokens for 4 requests that each grow to 2 blocks: some must be preempted.
    small = _engine(short_dir, True, num_gpu_blocks_override=7, enable_prefix_caching=False,
                    disable_log_stats=False)
    try:
        outs = [list(o.outputs[0].token_ids) for o in small.generate(PROMPTS[:4], params)]
        preemptions = sum(getattr(m, "value", 0) for m in small.get_metrics() if "num_preemptions" in m.name)
        _, launched, _, events = _decoder(small)
    finally:
        shutdown(small)
    assert preemptions > 0 and launched > 0 and overlapped_steps(events) > 0
    assert outs == reference
