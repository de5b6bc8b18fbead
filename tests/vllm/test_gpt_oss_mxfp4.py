"""A GPT-OSS checkpoint as released (MXFP4 experts, the published quantization_config) through vLLM's LLM: vLLM
takes it as its `gpt_oss_mxfp4` quantization, the TT model reads the experts dequantized, and greedy tokens are HF's
(reference profile) through chunked prefill."""

import torch
from vllm import LLM, SamplingParams

from tests.models.tiny import load_hf, make_mxfp4_gpt_oss
from tests.vllm.conftest import check_against_hf, shutdown

_g = torch.Generator().manual_seed(6)
PROMPTS = [torch.randint(2, 512, (n,), generator=_g).tolist() for n in (100, 20)]


def test_an_mxfp4_checkpoint_gives_hfs_greedy_tokens(tmp_path):
    path = str(make_mxfp4_gpt_oss(tmp_path))
    llm = LLM(model=path, skip_tokenizer_init=True, max_num_seqs=4, max_model_len=256, block_size=32, seed=0,
              max_num_batched_tokens=64, num_gpu_blocks_override=32,
              additional_config={"tt": {"optimizations": "reference"}})
    try:
        assert "mxfp4" in str(llm.llm_engine.vllm_config.model_config.quantization)
        outs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS],
                            SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))
    finally:
        shutdown(llm)
    hf = load_hf(path).float()
    for p, out in zip(PROMPTS, outs, strict=True):
        assert len(out.outputs[0].token_ids) == 12
        check_against_hf(hf, p, out.outputs[0].token_ids)
