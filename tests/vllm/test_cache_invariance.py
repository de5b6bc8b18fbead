"""Cache-state invariance (additional_config tt.cache_invariant_prefill): a prompt's greedy tokens and logprobs are
the same whether it is prefilled cold or continues from a cached prefix. Random-word prompts of 90 to 500 tokens,
each sent cold and then twice more (prefix-cache hits on its whole blocks): identical tokens and identical
logprobs, to the last bit."""

import random

from vllm import LLM, SamplingParams, TokensPrompt

from tests.vllm.conftest import shutdown, tt_options

WORDS = ("river stone apple window quiet orange market silver garden number pencil yellow castle engine forest "
         "letter planet button rabbit mirror candle travel winter bottle").split()


def random_prompts(tokenizer, lengths, seed=5):
    rng = random.Random(seed)
    out = []
    for n in lengths:
        text = " ".join(rng.choice(WORDS) for _ in range(n))  # more tokens than needed, cut to n
        out.append(tokenizer(text).input_ids[:n])
    return out


def test_cold_and_cached_prefills_agree(short_dir):
    engine = LLM(model=short_dir, max_num_seqs=4, max_model_len=1024, block_size=64, seed=0, enable_prefix_caching=True,
                 num_gpu_blocks_override=96, disable_log_stats=False,
                 additional_config=tt_options("performance", cache_invariant_prefill=True))
    try:
        prompts = random_prompts(engine.get_tokenizer(), (90, 171, 253, 330, 417, 500))
        params = SamplingParams(temperature=0, max_tokens=8, logprobs=5, ignore_eos=True)

        def run():
            outs = engine.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params)
            return [(list(o.outputs[0].token_ids),
                     [{t: lp.logprob for t, lp in step.items()} for step in o.outputs[0].logprobs]) for o in outs]

        def hits():
            return sum(int(m.value) for m in engine.get_metrics() if m.name == "vllm:prefix_cache_hits")

        cold = run()
        before = hits()
        again, third = run(), run()
        # Both repeats hit every whole block of their prompt (the last token is always computed).
        assert hits() - before >= 2 * sum((len(p) - 1) // 64 * 64 for p in prompts)
        assert again == cold
        assert third == cold
    finally:
        shutdown(engine)
