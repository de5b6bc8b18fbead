"""The model runs the checker puts through the real ttnn: per family and optimization profile, the calls vLLM makes
(initialize_vllm_model, allocate_kv_cache, warmup_model_prefill, a prefill behind a cached prefix, decode at
max_batch_size with empty slots, decode with on-device argmax, decode with on-device sampling and per-user seeds,
then with penalties and logprobs on the device as well),
tracing off.

Trace capture is not run: on a mock device it segfaults (Buffer::address while generating trace commands), and a
trace replays exactly the ops its capture issued, which the untraced runs already submit to the same validation.
"""

from __future__ import annotations

import gc
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tt_checks.recorder import Recorder, Rejected
from tt_checks.report import Call, Rule

BATCH = 32  # users per device: what vLLM pads decode to, and the most one device takes
BLOCK = 64


@dataclass
class Outcome:
    """What a scenario's phases did: names of phases run, rejected, failed (a Python error) or skipped."""

    name: str
    phases: dict[str, str]


def family_model_dir(family: str, root: Path, wide: bool = False) -> Path:
    """An HF directory for the family: a tiny random model of the test suite (wide: with 8 heads, as the tensor-
    parallel tests widen them; "<family>_padded": the wide model with hidden 480, which no mesh splits into whole
    tiles, so its residual is padded, as gpt-oss-20b's on a T3K), or SmolLM2 with its real weights."""
    if family == "smollm2":
        from tt_models.checkpoint import default_model_dir

        return default_model_dir()
    if family.endswith("_padded"):
        from tests.models.tiny import make_padded_model

        return make_padded_model(family.removesuffix("_padded"), root)
    if wide:
        from tests.models.tiny import make_wide_model

        return make_wide_model(family, root)
    from tests.models.tiny import make_tiny_model

    return make_tiny_model(family, root)


def splits_over(model_dir: Path, chips: int) -> bool:
    """Whether tensor parallel over `chips` divides the model's query heads (what the TP plan requires first)."""
    import json

    return json.loads((model_dir / "config.json").read_text())["num_attention_heads"] % chips == 0


def families() -> list[str]:
    from tests.models.tiny import FAMILIES, MOE_FAMILIES

    return [*FAMILIES, *MOE_FAMILIES, "smollm2"]


def run_model(rec: Recorder, mesh: Any, family: str, profile: str, model_dir: Path | None, max_seq_len: int,
              data_parallel: int = 1, cfg: Any = None, load_format: str = "auto",
              expert_dispatch: str = "reduce") -> Outcome:
    """The vLLM contract's phases on `mesh`; data_parallel > 1 runs that many replicas on its submeshes, BATCH users
    each (the cached prefill lands in the last replica's last slot). `cfg` (an HF config) instead of a model
    directory, with load_format "dummy": a checkpoint of the matrix at its real widths, weights placed without
    values (the op calls are the same). expert_dispatch: the MoE layers' (additional_config tt.expert_dispatch)."""
    from transformers import AutoConfig

    from generator_vllm import TT_CLASSES
    from tt_models.sampling import TTSamplingParams

    name = rec.scenario
    phases: dict[str, str] = {}
    state: dict[str, Any] = {}
    cfg = cfg if cfg is not None else AutoConfig.from_pretrained(model_dir)
    cls = TT_CLASSES[cfg.architectures[0]]
    users = BATCH * data_parallel
    width = -(-max_seq_len // BLOCK)
    num_blocks = BATCH * width + 1  # every user of a replica at full length, plus vLLM's null block 0

    def init() -> None:
        state["m"] = cls.initialize_vllm_model(cfg, mesh, max_batch_size=users, max_seq_len=max_seq_len,
                                               optimizations=profile, tt_data_parallel=data_parallel,
                                               load_format=load_format, expert_dispatch=expert_dispatch)

    def kv() -> None:
        a = state["m"].model.args
        # Data parallel: the ids are split among the replicas, num_blocks each (tt_models/data_parallel.py).
        shape = (num_blocks * data_parallel, state["m"].kv_cache_heads, BLOCK, a.head_dim)
        state["kv"] = state["m"].allocate_kv_cache(shape, torch.bfloat16, a.n_layers)

    def warmup() -> None:
        state["m"].warmup_model_prefill(state["kv"], enable_trace=False)

    def table(rows: int) -> torch.Tensor:
        # Each replica's users use every block of its own cache (1 .. num_blocks - 1 of its share of the ids).
        local = torch.arange(rows * width, dtype=torch.int32).reshape(rows, width) % (BATCH * width) + 1
        return local + (torch.arange(rows, dtype=torch.int32)[:, None] // BATCH) * num_blocks

    def cached_prefill() -> None:
        # Two blocks are already cached; the rest of a 200-token prompt goes through the chunked (prefix) path.
        n = min(200, max_seq_len - 1)
        tokens = torch.randint(0, cfg.vocab_size, (1, n), dtype=torch.int32)
        start = min(2 * BLOCK, n - 1) // BLOCK * BLOCK
        state["m"].prefill_forward(tokens, table(users)[users - 1:], state["kv"], [n], start_pos=[start],
                                   empty_slots=[users - 1])

    def decode_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tokens = torch.randint(0, cfg.vocab_size, (users, 1), dtype=torch.int32)
        pos = torch.arange(users, dtype=torch.int32) % BATCH * 7 + 5
        pos[1::3] = -1  # empty slots
        return tokens, pos, table(users)

    def decode() -> None:
        tokens, pos, pt = decode_inputs()
        state["m"].decode_forward(tokens, pos, pt, state["kv"], enable_trace=False)

    def decode_argmax() -> None:
        tokens, pos, pt = decode_inputs()
        greedy = TTSamplingParams(temperature=[0.0] * users, top_k=[1] * users, top_p=[1.0] * users)
        state["m"].decode_forward(tokens, pos, pt, state["kv"], enable_trace=False, sampling_params=greedy)

    def decode_sample() -> None:
        tokens, pos, pt = decode_inputs()
        sample = TTSamplingParams(temperature=[0.8] * users, top_k=[20] * users, top_p=[0.9] * users,
                                  seed=[1234 + u for u in range(users)])
        state["m"].decode_forward(tokens, pos, pt, state["kv"], enable_trace=False, sampling_params=sample)
        # penalties and logprobs on the device too: the slots' token history loaded, then the penalised draw, the
        # raw logprobs and the in-place count update
        history = [None if p < 0 else (list(range(3, 12)), [int(tokens[u])]) for u, p in enumerate(pos.tolist())]
        full = TTSamplingParams(temperature=[0.8] * users, top_k=[20] * users, top_p=[0.9] * users,
                                presence_penalty=[0.5] * users, frequency_penalty=[0.3] * users,
                                repetition_penalty=[1.2] * users, num_logprobs=[5] * users, token_history=history,
                                history_key=tuple(range(users)))
        state["m"].decode_forward(tokens, pos, pt, state["kv"], enable_trace=False, sampling_params=full)

    def verify() -> None:
        # Speculative decoding's verify step (vllm_patches/spec_decode.py): each user's last token and k drafts on
        # k + 1 consecutive rows of one tile of users, written by k + 1 cache-update calls; logits back, and for
        # the largest k the on-device argmax. k = 1..4 on the default profile, where the op calls differ only in
        # the number of update calls. A request's rows stay in its slot's verify group (data parallel: its
        # replica's rows and blocks; a 2-D mesh sharing users out by column: its column's rows).
        m = state["m"]
        rows, groups = m.verify_rows, m.verify_groups
        size = rows // groups
        slots = [[s for s in range(users) if m.verify_group(s) == g] for g in range(groups)]
        ks = (1, 2, 3, 4) if profile == "performance" else (3,)
        for k in ks:
            tokens = torch.zeros(rows, 1, dtype=torch.int32)
            pos = torch.full((rows,), -1, dtype=torch.int32)
            group = torch.full((rows,), -1, dtype=torch.int32)
            pt = torch.zeros(rows, width, dtype=torch.int32)
            for g in range(groups):
                placed = iter(slots[g])
                for tile in range(0, size, 32):  # whole requests per tile of users
                    for j in range(min(32, size - tile) // (k + 1)):
                        slot = next(placed)
                        r0 = g * size + tile + j * (k + 1)
                        tokens[r0 : r0 + k + 1, 0] = torch.randint(0, cfg.vocab_size, (k + 1,), dtype=torch.int32)
                        pos[r0 : r0 + k + 1] = slot % BATCH * 7 + 5 + torch.arange(k + 1, dtype=torch.int32)
                        group[r0 : r0 + k + 1] = torch.arange(k + 1, dtype=torch.int32)
                        pt[r0 : r0 + k + 1] = table(users)[slot]
            m.decode_forward(tokens, pos, pt, state["kv"], enable_trace=False, write_group=group, writes=k + 1)
            if k == ks[-1]:
                greedy = TTSamplingParams(temperature=[0.0] * rows)
                m.decode_forward(tokens, pos, pt, state["kv"], enable_trace=False, sampling_params=greedy,
                                 write_group=group, writes=k + 1)

    plan: list[tuple[str, Callable[[], None], tuple[str, ...]]] = [
        ("initialize_vllm_model", init, ()),
        ("allocate_kv_cache", kv, ("initialize_vllm_model",)),
        ("warmup_model_prefill", warmup, ("allocate_kv_cache",)),
        ("prefill with cached prefix", cached_prefill, ("allocate_kv_cache",)),
        ("decode_forward (empty slots)", decode, ("allocate_kv_cache",)),
        ("decode_forward (on-device argmax)", decode_argmax, ("allocate_kv_cache",)),
        ("decode_forward (on-device sampling)", decode_sample, ("allocate_kv_cache",)),
        ("decode_forward (speculative verify)", verify, ("allocate_kv_cache",)),
    ]
    for phase, fn, needs in plan:
        if any(phases.get(n) != "ok" for n in needs):
            phases[phase] = "skipped"
            continue
        rec.scenario = f"{name} {phase}"
        try:
            fn()
            phases[phase] = "ok"
        except Rejected:
            phases[phase] = "rejected"
        except Exception as e:  # model code that does not run on the real ttnn at all
            tb = traceback.extract_tb(e.__traceback__)
            frame = next((f for f in reversed(tb) if "/tt_models/" in f.filename or "generator_vllm" in f.filename),
                         tb[-1])
            where = f"{Path(frame.filename).name}:{frame.lineno} ({frame.name})"
            rec.calls.append(Call("python", where, rec.scenario, Rule(f"{type(e).__name__}: {e}")))
            phases[phase] = "error"
    rec.scenario = name
    state.clear()
    gc.collect()
    return Outcome(name, phases)
