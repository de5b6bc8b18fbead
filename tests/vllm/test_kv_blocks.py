"""The KV block count vLLM gets: what the model asks for, never more than the device's DRAM holds after the
weights (read from the device's allocator), and a load that fails with the device's numbers when one max_model_len
request cannot fit."""

import math

import pytest
from vllm import LLM

from tests.vllm.conftest import TEST_KV_BLOCKS, shutdown
from tt_models.capacity import KVCapacity, cache_slots
from vllm_patches.kv_blocks import plan_kv_blocks, wanted_blocks

CAP = KVCapacity(blocks=100, free_per_bank=50 << 20, reserve_per_bank=10 << 20, bytes_per_block_per_bank=4096,
                 banks=12)


def test_wanted_blocks_cover_the_budget_one_block_per_sequence_and_the_null_block():
    assert wanted_blocks(32768, 1024, 64, 8) == 32768 // 64 + 8 + 1
    assert wanted_blocks(100, 1000, 64, 2) == math.ceil((1000 + 128) / 64) + 1  # at least one full-length request


def test_plan_takes_the_smaller_of_wanted_and_device_capacity():
    assert plan_kv_blocks(60, CAP, 2048, 64) == 60
    assert plan_kv_blocks(500, CAP, 2048, 64) == 100


def test_plan_refuses_when_one_full_request_does_not_fit():
    with pytest.raises(ValueError, match=r"max_model_len=8192 request \(129 blocks of 64 tokens\) does not fit.*"
                                         r"at most 100 blocks \(6400 tokens\)"):
        plan_kv_blocks(500, CAP, 8192, 64)


def test_plan_refuses_an_override_beyond_capacity_and_honours_one_within():
    assert plan_kv_blocks(500, CAP, 2048, 64, override=7) == 7
    with pytest.raises(ValueError, match="num_gpu_blocks_override=101 KV blocks do not fit.*at most 100 blocks"):
        plan_kv_blocks(500, CAP, 2048, 64, override=101)


def test_hybrid_groups_draw_on_one_pool_and_sliding_groups_need_only_their_window():
    # vLLM's hybrid KV cache for a 5:1 sliding / global model: one full-context group, five that hold at most 4
    # blocks per request. The pool serves the budget in the full group and 8 sequences' windows in the others.
    held = [16, 4, 4, 4, 4, 4]
    assert wanted_blocks(32768, 1024, 64, 8, held) == (32768 // 64 + 8) + 5 * 8 * 4 + 1
    assert wanted_blocks(32768, 1024, 64, 8, [16]) == wanted_blocks(32768, 1024, 64, 8)  # one group: as before
    assert plan_kv_blocks(500, CAP, 2048, 64, request_blocks=[32, 4, 4, 4, 4, 4]) == 100
    # One max_model_len request needs its whole context in the full group and its window in each sliding one.
    with pytest.raises(ValueError, match=r"max_model_len=6000 request \(115 blocks of 64 tokens\) does not fit"):
        plan_kv_blocks(500, CAP, 6000, 64, request_blocks=[94, 4, 4, 4, 4, 4])


def test_layers_of_different_groups_share_a_tensor_pair():
    # Block ids are unique across groups: the k-th layer of every group uses the k-th K/V pair.
    assert cache_slots([0, 1, 2, 3, 4, 5] * 3, 18) == [0] * 6 + [1] * 6 + [2] * 6
    assert cache_slots([0, 0, 1, 1], 4) == [0, 1, 0, 1]
    assert cache_slots(None, 3) == [0, 1, 2]
    with pytest.raises(ValueError, match="names 2 layers of a 3-layer model"):
        cache_slots([0, 1], 3)


def test_engine_gets_the_models_budget_on_a_device_that_holds_it(llm):
    cfg = llm.llm_engine.vllm_config
    if llm.tt_profile != "performance":  # the tests' reference engine asks for a small cache itself
        assert cfg.cache_config.num_gpu_blocks == TEST_KV_BLOCKS
        return
    # Started as a user starts it: tt_models/configs/models/smollm2.yaml asks for 32768 tokens; the simulated N150
    # holds far more for SmolLM2.
    assert cfg.cache_config.num_gpu_blocks == wanted_blocks(32768, 512, 64, 4)


def test_engine_refuses_at_load_an_override_the_device_cannot_hold(smollm2_dir, monkeypatch):
    # The engine core in this process, so the worker's error arrives as itself.
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    with pytest.raises(ValueError, match=r"num_gpu_blocks_override=10000000 KV blocks do not fit in the device's "
                                         r"DRAM: .* MiB free per DRAM bank x 12 banks after the weights"):
        engine = LLM(model=smollm2_dir, max_num_seqs=4, max_model_len=256, block_size=64,
                     num_gpu_blocks_override=10**7)
        shutdown(engine)
    # The failed start closed the device: this process can open it again (to retry with other options).
    import ttnn_sim as ttnn

    ttnn.close_device(ttnn.open_device(device_id=0))
