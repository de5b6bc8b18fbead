"""vLLM on the default profile (`performance`: bfloat8_b weights and KV cache, what a device runs by default), not
just the simulator-only `reference`: greedy generations read back through HF, position by position (teacher
forcing on vLLM's own tokens), agree with HF's top-1 at least as often as the profile's accuracy floor
(tests/models/test_accuracy.py: 90% top-1, 98% top-5)."""

import torch
from vllm import LLM, SamplingParams

from tests.models.test_accuracy import FLOORS
from tests.models.tiny import load_hf
from tests.vllm.conftest import shutdown

PROMPTS = ["The capital of France is", "Write a short poem about the ocean:",
           "Once upon a time, in a small village near the mountains, there lived an old clockmaker who",
           "Question: What is 12 times 12?\nAnswer:"]


def test_default_profile_generations_agree_with_hf(smollm2_dir):
    engine = LLM(model=smollm2_dir, max_num_seqs=4, max_model_len=256, block_size=64, seed=0)
    try:
        assert "optimizations=performance" in repr(engine)  # nothing asked for: the default profile
        outs = engine.generate(PROMPTS, SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))
    finally:
        shutdown(engine)
    hf = load_hf(smollm2_dir)
    top1 = top5 = n = 0
    for out in outs:
        ids = list(out.prompt_token_ids) + list(out.outputs[0].token_ids)
        with torch.no_grad():
            logits = hf(torch.tensor([ids])).logits[0]
        start = len(out.prompt_token_ids)
        for pos, tok in enumerate(out.outputs[0].token_ids):
            ref = logits[start + pos - 1].topk(5).indices
            top1 += int(tok == ref[0])
            top5 += int(tok in ref)
            n += 1
    assert n == 96
    floor1, floor5 = FLOORS["performance"]
    assert 100 * top1 / n >= floor1 and 100 * top5 / n >= floor5, (top1, top5, n)
