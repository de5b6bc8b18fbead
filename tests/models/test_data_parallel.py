"""tt_data_parallel: replicas on submeshes of a 1x2 mesh serve their own users with their own KV caches. Each
replica computes exactly what one model on a 1x1 device computes for the same users (bit-identical logits), greedy
tokens follow HF, and slots map to replicas for the whole of a request's life."""

import pytest
import torch

from generator_vllm import TTLlamaForCausalLM
from tests.conftest import pcc
from tests.models.tiny import check_greedy_step, hf_config, hf_last_logits, load_hf, make_tiny_model
from tt_models.backend import ttnn
from tt_models.data_parallel import DataParallel
from tt_models.model_args import UnsupportedModelError

PER, BLOCK, NUM_BLOCKS, MAX_SEQ = 4, 32, 96, 256
WIDTH = MAX_SEQ // BLOCK


@pytest.fixture
def mesh_1x2():
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 2), trace_region_size=1 << 24)
    yield dev
    ttnn.close_mesh_device(dev)


def build(path, mesh, batch, dp=1):
    """The model and its KV cache: NUM_BLOCKS blocks on each replica (the pool's ids split among them)."""
    model = TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh, batch, MAX_SEQ, tt_data_parallel=dp,
                                                     optimizations="reference")
    a = model.model.args
    return model, model.allocate_kv_cache((NUM_BLOCKS * dp, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16,
                                          a.n_layers)


def pages(slot: int) -> torch.Tensor:
    """Slot's block ids: its replica's share of the ids (NUM_BLOCKS each, the first unused), WIDTH per slot."""
    replica, local = divmod(slot, PER)
    return torch.arange(WIDTH) + replica * NUM_BLOCKS + 1 + local * WIDTH


def run(model, kv, prompts, slots, steps, batch, enable_trace):
    """Prefill each prompt into its slot (pages(slot)), then decode all together; returns the logits of every step
    per prompt."""
    table = torch.zeros(batch, WIDTH, dtype=torch.int32)
    for s in slots:
        table[s] = pages(s)
    width = max(len(p) for p in prompts)
    tokens = torch.zeros(len(prompts), width, dtype=torch.int32)
    for i, p in enumerate(prompts):
        tokens[i, : len(p)] = torch.tensor(p)
    logits = model.prefill_forward(tokens, table[slots], kv, [len(p) for p in prompts], empty_slots=slots)
    steps_out = [[logits[i, 0]] for i in range(len(prompts))]
    for _ in range(steps):
        tok = torch.zeros(batch, 1, dtype=torch.int32)
        pos = torch.full((batch,), -1, dtype=torch.int32)
        for i, s in enumerate(slots):
            tok[s] = int(steps_out[i][-1].argmax())
            pos[s] = len(prompts[i]) + len(steps_out[i]) - 1
        out = model.decode_forward(tok, pos, table, kv, enable_trace=enable_trace)
        for i, s in enumerate(slots):
            steps_out[i].append(out[s, 0])
    return steps_out


PROMPTS = [list(range(5, 45)), list(range(100, 170)), list(range(300, 331))]


@pytest.mark.parametrize("enable_trace", [False, True])
def test_replicas_equal_single_device_and_follow_hf(mesh_1x2, tiny_root, enable_trace):
    path = make_tiny_model("llama_gqa", tiny_root)
    dp, dp_kv = build(path, mesh_1x2, 2 * PER, dp=2)
    assert isinstance(dp, DataParallel) and dp.max_batch_size == 2 * PER and len(dp_kv) == 2
    # Slots 1 and 6 on replica 0 and 1; slot 2 on replica 0: both replicas serve users at once.
    slots = [1, 6, 2]
    got = run(dp, dp_kv, PROMPTS, slots, 4, 2 * PER, enable_trace)
    # The replicas' caches live on different chips, each holding its share of the block ids, no more.
    assert dp_kv[0][0][0].device().get_device_ids() != dp_kv[1][0][0].device().get_device_ids()
    assert [kv[0][0].shape[0] for kv in dp_kv] == [NUM_BLOCKS, NUM_BLOCKS]

    for i, (prompt, slot) in enumerate(zip(PROMPTS, slots, strict=True)):
        single_dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 24)
        try:
            one, one_kv = build(path, single_dev, PER)
            ref = run(one, one_kv, [prompt], [slot % PER], 4, PER, enable_trace)[0]
        finally:
            ttnn.close_mesh_device(single_dev)
        assert all(torch.equal(a, b) for a, b in zip(got[i], ref, strict=True)), f"prompt {i} (slot {slot})"

    hf = load_hf(path)
    for i, prompt in enumerate(PROMPTS):
        ids = list(prompt)
        for step, logits in enumerate(got[i]):
            ref = hf_last_logits(hf, ids)
            assert pcc(logits, ref) >= 0.999, f"prompt {i} step {step}"
            ids.append(check_greedy_step(logits, ref, f"prompt {i} step {step}"))


def test_data_parallel_refusals(mesh_1x2, tiny_root):
    path = make_tiny_model("llama_gqa", tiny_root)
    cfg = hf_config(path)
    with pytest.raises(UnsupportedModelError, match="tt_data_parallel=3 does not divide"):
        TTLlamaForCausalLM.initialize_vllm_model(cfg, mesh_1x2, 6, MAX_SEQ, tt_data_parallel=3)
    with pytest.raises(UnsupportedModelError, match="max_batch_size 7 does not split evenly"):
        TTLlamaForCausalLM.initialize_vllm_model(cfg, mesh_1x2, 7, MAX_SEQ, tt_data_parallel=2)
    with pytest.raises(UnsupportedModelError, match="one device decodes at most 32 users"):
        TTLlamaForCausalLM.initialize_vllm_model(cfg, mesh_1x2, 66, MAX_SEQ, tt_data_parallel=2)
    dp, kv = build(path, mesh_1x2, 2 * PER, dp=2)
    with pytest.raises(ValueError, match=r"empty_slots \[8\] outside 0..7"):
        dp.prefill_forward(torch.ones(1, 8, dtype=torch.int32), torch.ones(1, WIDTH, dtype=torch.int32), kv, [8],
                           empty_slots=[8])
    # A slot of replica 1 given replica 0's blocks (ids 1..NUM_BLOCKS - 1): another replica's DRAM.
    with pytest.raises(ValueError, match=f"slot 5 \\(replica 1\\) names block ids outside replica 1's ids "
                                         f"{NUM_BLOCKS + 1}..{2 * NUM_BLOCKS - 1}"):
        dp.prefill_forward(torch.ones(1, 8, dtype=torch.int32), pages(1)[None], kv, [8], empty_slots=[5])


def test_every_replica_is_launched_before_any_result_is_read(mesh_1x2, tiny_root, monkeypatch):
    """A decode step enqueues each replica's traced step, then reads: were replica 0 read before replica 1 launched,
    the host would wait for replica 0's device and the replicas would run one after another."""
    import tt_models.model as model_mod

    path = make_tiny_model("llama_gqa", tiny_root)
    dp, kv = build(path, mesh_1x2, 2 * PER, dp=2)
    run(dp, kv, PROMPTS[:2], [1, 6], 1, 2 * PER, True)  # prefill, and the first decode step captures the traces
    events = []
    launch, read = ttnn.execute_trace, model_mod.to_host

    def launched(device, *args, **kwargs):
        events.append(("launch", tuple(device.get_device_ids())))
        return launch(device, *args, **kwargs)

    def host(t, plan, device, vocab_sliced):
        events.append(("read", tuple(device.get_device_ids())))
        return read(t, plan, device, vocab_sliced)

    monkeypatch.setattr(ttnn, "execute_trace", launched)
    monkeypatch.setattr(model_mod, "to_host", host)
    out = run(dp, kv, PROMPTS[:2], [1, 6], 2, 2 * PER, True)
    decode_events = events[-4:]  # the last decode step
    assert [e[0] for e in decode_events] == ["launch", "launch", "read", "read"], events
    assert decode_events[0][1] != decode_events[1][1] and decode_events[2][1] == decode_events[0][1]
    assert all(len(steps) == 3 for steps in out)
