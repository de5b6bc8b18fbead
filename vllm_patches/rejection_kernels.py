"""Host versions of the four kernels vLLM's RejectionSampler launches, registered in their place.

vLLM writes them in Triton and ships C++ versions for its CPU platform (vllm._C); the CUDA wheel this package runs
on has neither Triton on a CPU nor vllm._C, and the TT runner's host work runs on the CPU. These follow the Triton
kernels in vllm/v1/sample/rejection_sampler.py step for step (same arguments as vllm.utils.cpu_triton_utils'
versions, which the dispatcher calls the same way), so the rest of vLLM's RejectionSampler (sampling constraints,
penalties, uniform draws, logprobs, output parsing) runs unchanged. Synthetic acceptance is not supported, as in
vLLM's CPU versions.
"""

from __future__ import annotations

from typing import Any

import torch


def _spans(cu: torch.Tensor) -> list[tuple[int, int]]:
    ends = cu.tolist()
    return list(zip([0, *ends[:-1]], ends, strict=True))


def rejection_greedy_sample(output_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                            draft_token_ids: torch.Tensor, target_argmax: torch.Tensor,
                            bonus_token_ids: torch.Tensor, is_greedy: torch.Tensor | None, max_spec_len: int,
                            uniform_probs: Any = None, synthetic_conditional_rates: Any = None,
                            SYNTHETIC_MODE: bool = False) -> None:  # noqa: N803 (the kernel's name)
    assert not SYNTHETIC_MODE, "synthetic acceptance is not supported on the host"
    drafts, argmax = draft_token_ids.tolist(), target_argmax.tolist()
    for req, (start, end) in enumerate(_spans(cu_num_draft_tokens)):
        if is_greedy is not None and not bool(is_greedy[req]):
            continue
        rejected = False
        for pos in range(end - start):
            output_token_ids[req, pos] = argmax[start + pos]
            if drafts[start + pos] != argmax[start + pos]:
                rejected = True
                break
        if not rejected:
            output_token_ids[req, end - start] = bonus_token_ids.reshape(-1)[req]


def rejection_random_sample(output_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                            draft_token_ids: torch.Tensor, draft_probs: torch.Tensor | None,
                            target_probs: torch.Tensor, bonus_token_ids: torch.Tensor,
                            recovered_token_ids: torch.Tensor, uniform_probs: torch.Tensor, is_greedy: torch.Tensor,
                            max_spec_len: int, vocab_size: int, synthetic_conditional_rates: Any = None,
                            NO_DRAFT_PROBS: bool = False, SYNTHETIC_MODE: bool = False) -> None:  # noqa: N803
    assert not SYNTHETIC_MODE, "synthetic acceptance is not supported on the host"
    drafts = draft_token_ids.tolist()
    for req, (start, end) in enumerate(_spans(cu_num_draft_tokens)):
        if bool(is_greedy[req]):
            continue
        rejected = False
        for pos in range(end - start):
            t, draft = start + pos, drafts[start + pos]
            if draft < 0:
                accepted = False
            else:
                q = 1.0 if NO_DRAFT_PROBS else float(draft_probs[t, draft])
                # The same comparison as the kernel's, in float64 as uniform_probs is.
                accepted = q > 0 and float(target_probs[t, draft]) / q >= float(uniform_probs[t])
            if accepted:
                output_token_ids[req, pos] = draft
            else:
                output_token_ids[req, pos] = recovered_token_ids[t]
                rejected = True
                break
        if not rejected:
            output_token_ids[req, end - start] = bonus_token_ids.reshape(-1)[req]


def expand(output: torch.Tensor, input_val: torch.Tensor, cu_num_tokens: torch.Tensor, replace_from: Any,
           replace_to: Any, MAX_NUM_TOKENS: Any = None) -> None:  # noqa: N803
    for req, (start, end) in enumerate(_spans(cu_num_tokens)):
        value = input_val[req]
        output[start:end] = replace_to if bool(value == replace_from) else value


def sample_recovered_tokens(output_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                            draft_token_ids: torch.Tensor, draft_probs: torch.Tensor | None,
                            target_probs: torch.Tensor, inv_q: torch.Tensor, vocab_size: int, BLOCK_SIZE: Any = None,
                            NO_DRAFT_PROBS: bool = False, USE_FP64_GUMBEL: bool = False) -> None:  # noqa: N803
    """argmax over the vocabulary of prob / q (q exponential: a draw from prob), prob being the target's with the
    draft token removed (no draft probabilities) or max(target - draft, 0); the lowest id on ties, as the kernel's
    first-maximum scan."""
    for req, (start, end) in enumerate(_spans(cu_num_draft_tokens)):
        for t in range(start, end):
            if NO_DRAFT_PROBS:
                prob = target_probs[t].clone()
                prob[int(draft_token_ids[t])] = 0.0
            else:
                prob = (target_probs[t] - draft_probs[t]).clamp(min=0.0)
            score = prob.to(inv_q.dtype) * inv_q[req]
            output_token_ids[t] = int(torch.argmax(score))


KERNELS = {"rejection_greedy_sample_kernel": rejection_greedy_sample,
           "rejection_random_sample_kernel": rejection_random_sample,
           "expand_kernel": expand,
           "sample_recovered_tokens_kernel": sample_recovered_tokens}


def install() -> None:
    """Registers these in place of the Triton kernels in vLLM's rejection_sampler module: the module attribute, and
    the warmup dispatchers holding it as `kernel` (what vllm.triton_utils.dispatcher.register_kernels rebinds; its
    scan of every loaded module fails in this process on an object whose __dict__ is not a dict)."""
    import vllm.v1.sample.rejection_sampler as rs
    from vllm.triton_utils.dispatcher import KernelOverride

    for attr, impl in KERNELS.items():
        original = getattr(rs, attr)
        if isinstance(original, KernelOverride):
            continue
        wrapper = KernelOverride(original, impl)
        setattr(rs, attr, wrapper)
        for value in list(vars(rs).values()):
            state = getattr(value, "__dict__", None)
            if isinstance(state, dict) and state.get("kernel") is original:
                value.kernel = wrapper
                state.pop("_kernel_arg_names", None)
