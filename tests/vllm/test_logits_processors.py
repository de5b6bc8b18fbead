"""LLM(logits_processors=...) reaches the TT runner's sampler: a request asking the custom processor for a target
token gets only that token (greedy, so the device would otherwise pick the model's own argmax), and a request that
does not ask is untouched."""

import torch
from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

from tests.vllm.conftest import TEST_KV_BLOCKS, shutdown, tt_options


class ForceToken(AdapterLogitsProcessor):
    """Per request: with extra_args {"force_token": t}, every logit but t's becomes -inf."""

    def is_argmax_invariant(self) -> bool:
        return False

    def new_req_logits_processor(self, params):
        target = (params.extra_args or {}).get("force_token")
        if target is None:
            return None

        def force(output_ids, logits: torch.Tensor) -> torch.Tensor:
            keep = logits[target].clone()
            logits.fill_(float("-inf"))
            logits[target] = keep
            return logits

        return force


def test_custom_logits_processor_applies_per_request(short_dir, short_llm):
    from vllm import LLM, SamplingParams

    prompt = "The capital of France is"
    plain = short_llm.generate([prompt], SamplingParams(temperature=0.0, max_tokens=6))[0].outputs[0].token_ids
    engine = LLM(model=short_dir, max_num_seqs=4, max_model_len=512, block_size=64, seed=0,
                 num_gpu_blocks_override=TEST_KV_BLOCKS,
                 additional_config=tt_options(short_llm.tt_profile), logits_processors=[ForceToken])
    try:
        target = 42 if plain[0] != 42 else 43
        forced, free = engine.generate(
            [prompt, prompt],
            [SamplingParams(temperature=0.0, max_tokens=6, extra_args={"force_token": target}),
             SamplingParams(temperature=0.0, max_tokens=6)])
    finally:
        shutdown(engine)
    assert list(forced.outputs[0].token_ids) == [target] * 6
    # The request that did not ask is untouched: the same greedy tokens as the engine without the processor.
    assert list(free.outputs[0].token_ids) == list(plain)
