"""Capacity answers from the real allocator: does a model with its KV cache, trace region and activations fit on a
device at the configured batch and context, and is vLLM's KV block count one the device accepts?

Per case (model x optimization profile x context, batch 32 users):
1. `initialize_vllm_model` places the weights (`load_format="dummy"` for configs without weights: every weight
   with its real shape, dtype and memory config, no host data). A model that cannot fit fails here, at load: refused
   with the numbers before any weight moves (check_weights_fit), or with the device's out-of-memory message where
   the estimate passes but the per-bank placement does not; cases that exist to show that expect it.
2. The KV capacity the vLLM worker computes from the allocator (tt_models.capacity) and the block count it gives
   vLLM (vllm_patches.kv_blocks: the model's token budget, capped by that capacity).
3. `allocate_kv_cache` with the full capacity (the most vLLM could be given), then a full-length prefill (chunked as
   served) and a decode of 32 users at the last position: the activation reserve must hold what they allocate.
Peak DRAM and L1 come from the allocator after every call; the trace region is reserved when the device opens.
"""

from __future__ import annotations

import gc
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from tt_checks.recorder import Recorder, Rejected

ROOT = Path(__file__).resolve().parents[1]
BATCH, BLOCK = 32, 64
CONTEXTS = (4096, 32768)
GiB, MiB = 1 << 30, 1 << 20


@dataclass(frozen=True)
class CapacityCase:
    model: str  # a name for the report
    path: Path
    profile: str
    context: int
    load_format: str = "auto"
    fits_at_load: bool = True  # False: the case shows a model refused at load (not fitting the device)
    # A speculative-decoding draft model beside it (a checkpoint of tt_models/configs/checkpoints.yaml, placed-only
    # weights): its weights, and its cache taking each KV block id too, as the vLLM worker allocates them.
    draft: str | None = None


def cases(contexts: tuple[int, ...] = CONTEXTS) -> list[CapacityCase]:
    from tt_models.checkpoint import default_model_dir

    llama8b = ROOT / "tests" / "fixtures" / "configs" / "Llama-3.1-8B"
    out = []
    for ctx in contexts:
        out.append(CapacityCase("SmolLM2-135M", default_model_dir(), "performance", ctx))
        out.append(CapacityCase("Llama-3.1-8B", llama8b, "performance", ctx, "dummy"))
    # bf16 weights of an 8B model are 16 GB: more than an N150's 12 GB of DRAM.
    out.append(CapacityCase("Llama-3.1-8B", llama8b, "bf16", contexts[0], "dummy", fits_at_load=False))
    # The 8B with the 1B of its tokenizer as a draft (--speculative-config model=...): both models' weights, and
    # a KV block costs both caches.
    out.append(CapacityCase("Llama-3.1-8B + Llama-3.2-1B draft", llama8b, "performance", contexts[0], "dummy",
                            draft="Llama-3.2-1B-Instruct"))
    return out


@dataclass
class CapacityReport:
    case: str
    device: str
    ok: bool = True  # the case showed what it expects (False: a failure to look at)
    loaded: bool = False
    oom_at_load: str = ""
    weights_per_bank: int = 0  # the draft's included
    draft_weights_per_bank: int = 0
    banks: int = 0
    bank_size: int = 0  # DRAM per bank the allocator manages (after the trace region)
    trace_region_per_bank: int = 0
    capacity_blocks: int = 0
    reserve_per_bank: int = 0
    wanted_blocks: int = 0
    vllm_blocks: int = 0
    vllm_refusal: str = ""
    full_batch_kv_per_bank: int = 0  # every user at the full context
    kv_per_bank: int = 0  # what was allocated (the capacity)
    peak_dram_per_bank: int = 0
    peak_l1_per_core: int = 0
    l1_size: int = 0
    phases: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        t = self.banks
        head = f"capacity {self.case} on {self.device}"
        if not self.loaded:
            verdict = "as expected" if self.ok else "UNEXPECTED"
            return [f"{head}: does not fit at load ({verdict}): {self.oom_at_load or 'loaded'}"]
        full = self.full_batch_kv_per_bank + self.weights_per_bank + self.reserve_per_bank
        draft = (f" (the draft's {self.draft_weights_per_bank * t / GiB:.2f} GiB)"
                 if self.draft_weights_per_bank else "")
        out = [f"{head}: weights {self.weights_per_bank * t / GiB:.2f} GiB{draft}, trace region "
               f"{self.trace_region_per_bank * t / MiB:.1f} MiB, DRAM {self.bank_size * t / GiB:.2f} GiB usable; "
               f"KV for {BATCH} users x {self.case.rsplit(' ctx ', 1)[-1]} tokens "
               f"{self.full_batch_kv_per_bank * t / GiB:.2f} GiB: "
               + ("fits" if full <= self.bank_size else "does not fit")]
        out.append(f"  device holds {self.capacity_blocks} KV blocks of {BLOCK} ({self.capacity_blocks * BLOCK} "
                   f"tokens, {self.kv_per_bank * t / GiB:.2f} GiB) beside {self.reserve_per_bank * t / MiB:.0f} MiB "
                   f"kept for activations; the model asks for {self.wanted_blocks}; vLLM gets "
                   + (f"{self.vllm_blocks}" if not self.vllm_refusal else f"none: {self.vllm_refusal}"))
        out.append(f"  with the full capacity allocated: peak DRAM {self.peak_dram_per_bank * t / GiB:.2f} GiB of "
                   f"{(self.bank_size + self.trace_region_per_bank) * t / GiB:.2f} GiB (incl. the trace region), "
                   f"peak L1 {self.peak_l1_per_core / 1024:.1f} KiB per core of {self.l1_size // 1024} KiB; "
                   + ", ".join(f"{k} {v}" for k, v in self.phases.items()))
        return out


def run_case(rec: Recorder, ttnn: Any, mesh: Any, device: str, case: CapacityCase) -> CapacityReport:
    from transformers import AutoConfig

    from generator_vllm import TT_CLASSES
    from tt_models.capacity import kv_bank_bytes
    from tt_models.config.checkpoints import find_checkpoint
    from tt_models.model_args import UnsupportedModelError
    from vllm_patches.kv_blocks import plan_kv_blocks, wanted_blocks

    name = f"{case.model}/{case.profile} ctx {case.context}"
    rec.scenario = f"{device}/capacity {name}"
    rep = CapacityReport(name, device)
    cfg = AutoConfig.from_pretrained(case.path)
    cls = TT_CLASSES[cfg.architectures[0]]
    rec.reset_peak()
    dram = ttnn.get_memory_view(mesh, ttnn.BufferType.DRAM)
    rep.banks, rep.bank_size = dram.num_banks, dram.total_bytes_per_bank
    rep.trace_region_per_bank = ttnn.get_memory_view(mesh, ttnn.BufferType.TRACE).total_bytes_per_bank
    before = dram.total_bytes_allocated_per_bank
    dcfg = find_checkpoint(case.draft).hf_config() if case.draft else None
    d = None
    try:
        m = cls.initialize_vllm_model(cfg, mesh, max_batch_size=BATCH, max_seq_len=case.context,
                                      optimizations=case.profile, model_path=case.path, load_format=case.load_format)
        if dcfg is not None:
            target_bytes = ttnn.get_memory_view(mesh, ttnn.BufferType.DRAM).total_bytes_allocated_per_bank
            d = TT_CLASSES[dcfg.architectures[0]].initialize_vllm_model(
                dcfg, mesh, max_batch_size=BATCH, max_seq_len=case.context, optimizations=case.profile,
                load_format="dummy")
            rep.draft_weights_per_bank = (ttnn.get_memory_view(mesh, ttnn.BufferType.DRAM)
                                          .total_bytes_allocated_per_bank - target_bytes)
    except Rejected as e:
        rep.oom_at_load = e.call.rule.message if e.call.rule else str(e)
        rep.ok = not case.fits_at_load and e.call.rule is not None and e.call.rule.is_out_of_memory
        if rep.ok:
            rec.calls[-1] = type(e.call)(**{**vars(e.call), "expected": True})
        return rep
    except UnsupportedModelError as e:  # refused before any weight moved, with the numbers
        rep.oom_at_load = str(e)
        rep.ok = not case.fits_at_load
        return rep
    rep.loaded = True
    rep.ok = case.fits_at_load
    rep.weights_per_bank = ttnn.get_memory_view(mesh, ttnn.BufferType.DRAM).total_bytes_allocated_per_bank - before

    models = [m] if d is None else [m, d]  # each with a cache of the same block ids

    def kv_bytes(blocks: int) -> int:
        return sum(kv_bank_bytes(blocks, x.model.args.n_layers, x.model.args.n_kv_heads, BLOCK,
                                 x.model.args.head_dim, x.model.kv_cache_dtype().name, cap.banks) for x in models)

    cap = m.kv_cache_capacity(BLOCK) if d is None else m.kv_cache_capacity(BLOCK, draft=d)
    rep.capacity_blocks, rep.reserve_per_bank = cap.blocks, cap.reserve_per_bank
    width = math.ceil(case.context / BLOCK)
    rep.full_batch_kv_per_bank = kv_bytes(BATCH * width + 1)
    rep.wanted_blocks = wanted_blocks(cls.get_max_tokens_all_users(str(case.path)), case.context, BLOCK, BATCH)
    try:
        rep.vllm_blocks = plan_kv_blocks(rep.wanted_blocks, cap, case.context, BLOCK)
    except ValueError as e:
        rep.vllm_refusal = str(e)
    if not case.fits_at_load or cap.blocks < width + 1:
        return rep

    state: dict[str, Any] = {}

    def kv() -> None:
        for i, x in enumerate(models):
            xa = x.model.args
            state[i] = x.allocate_kv_cache((cap.blocks, xa.n_kv_heads, BLOCK, xa.head_dim), torch.bfloat16,
                                           xa.n_layers)
        rep.kv_per_bank = kv_bytes(cap.blocks)

    def table(users: int) -> torch.Tensor:
        # Users may share blocks when the cache holds fewer than users x width: reads and writes stay in bounds.
        return (torch.arange(users * width, dtype=torch.int32).reshape(users, width) % (cap.blocks - 1)) + 1

    def prefill() -> None:
        n = case.context - 1
        tokens = torch.randint(0, cfg.vocab_size, (1, n), dtype=torch.int32)
        for i, x in enumerate(models):  # the draft prefills what the target does
            x.prefill_forward(tokens, table(1), state[i], [n])

    def decode() -> None:
        tokens = torch.randint(0, cfg.vocab_size, (BATCH, 1), dtype=torch.int32)
        pos = torch.full((BATCH,), case.context - 1, dtype=torch.int32)
        for i, x in enumerate(models):
            x.decode_forward(tokens, pos, table(BATCH), state[i], enable_trace=False)

    for phase, fn in (("allocate_kv_cache (full capacity)", kv), (f"prefill of {case.context - 1} tokens", prefill),
                      (f"decode of {BATCH} users at position {case.context - 1}", decode)):
        if any(v != "ok" for v in rep.phases.values()):
            rep.phases[phase] = "skipped"
            continue
        try:
            fn()
            rep.phases[phase] = "ok"
        except Rejected:
            rep.phases[phase] = "rejected"
            rep.ok = False
    rep.peak_dram_per_bank = rec.peak.dram_per_bank + rep.trace_region_per_bank
    rep.peak_l1_per_core, rep.l1_size = rec.peak.l1_per_bank, rec.peak.l1_bank_size
    state.clear()
    for x in models:
        x.release()
    return rep  # the model's device tensors go with this frame


def run_all(rec: Recorder, ttnn: Any, mesh: Any, device: str, contexts: tuple[int, ...]) -> list[CapacityReport]:
    reports = []
    # The cases stand for a fresh worker process: programs compiled for the families checked before them in this
    # process can hold device buffers in the program cache (ttnn.reshape's tiled copies of DeepSeek-V3's group
    # limit do, measured: 4 fewer KV blocks of 64 for SmolLM2 on an N150), which the worker's own would not have.
    mesh.clear_program_cache()
    for case in cases(contexts):
        first = len(rec.calls)
        rep = run_case(rec, ttnn, mesh, device, case)
        for c in rec.calls[first:]:
            if not c.accepted and not c.expected:
                print(c.line(), flush=True)
        for line in rep.lines():
            print(line, flush=True)
        reports.append(rep)
        gc.collect()
    return reports


def fixture(device: str) -> Path:
    return ROOT / "tests" / "fixtures" / f"capacity_{device}_0.81.1.json"


def record(reports: list[CapacityReport], device: str) -> Path:
    """The real allocator's answers, for the simulator's capacity test (tests/models/test_capacity.py)."""
    out = fixture(device)
    cases_by_name = {f"{c.model}/{c.profile} ctx {c.context}": c for c in cases()}
    rows = []
    for r in reports:
        c = cases_by_name[r.case]
        rows.append({**asdict(r), "model": c.model, "path": str(c.path.relative_to(ROOT))
                     if ROOT in c.path.parents else None, "draft": c.draft, "profile": c.profile, "context": c.context,
                     "load_format": c.load_format, "batch": BATCH, "block_size": BLOCK})
    out.write_text(json.dumps({"ttnn_version": "0.81.1", "device": device, "cases": rows}, indent=1) + "\n")
    print(f"capacity: {len(rows)} cases -> {out.relative_to(ROOT)}")
    return out


@dataclass
class CheckpointCapacity:
    """One row of the checkpoint matrix's capacity table: the full checkpoint (every layer, placed-only weights) on
    one target at batch 32, or the reason it does not load there."""

    checkpoint: str
    profile: str  # as asked; the model's overrides may run another (e.g. Llama-3: performance_bfp4)
    target: str
    expected: bool  # whether the planner (tt_checks.matrix) says it fits
    loaded: bool = False
    refusal: str = ""
    weights_per_chip: int = 0
    dram_per_chip: int = 0
    kv_blocks: int = 0  # KV blocks of BLOCK tokens the device holds beside the weights
    tokens_per_user: int = 0  # at BATCH users
    phases: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (self.loaded == self.expected and all(v == "ok" for v in self.phases.values())
                and (self.loaded or self.refusal.startswith("the model does not fit")))

    def line(self) -> str:
        head = f"capacity {self.checkpoint}/{self.profile} on {self.target}"
        if not self.loaded:
            return f"{head}: refused at load{'' if self.ok else ' (UNEXPECTED)'}: {self.refusal}"
        return (f"{head}: weights {self.weights_per_chip / GiB:.2f} of {self.dram_per_chip / GiB:.2f} GiB per chip, "
                f"{self.kv_blocks} KV blocks of {BLOCK} ({self.tokens_per_user} tokens per user at {BATCH} users)"
                + "".join(f", {k} {v}" for k, v in self.phases.items()) + ("" if self.ok else " (UNEXPECTED)"))


def checkpoint_capacity(rec: Recorder, ttnn: Any, mesh: Any, ckpt: Any, profile: str, target: str,
                        expected: bool, max_seq_len: int = 4096,
                        expert_dispatch: str = "reduce") -> CheckpointCapacity:
    """Loads the whole checkpoint with placed-only weights (load_format "dummy") on `mesh`: its weights per chip and
    the KV cache beside them, then a decode step of 32 users at every layer with a small cache (the activations'
    L1 and DRAM at full depth), or the refusal at load. expert_dispatch: the MoE layers' (tt.expert_dispatch)."""
    from generator_vllm import TT_CLASSES
    from tt_models.model_args import UnsupportedModelError

    rec.scenario = f"capacity {ckpt.short_name}/{profile} on {target}"
    rep = CheckpointCapacity(ckpt.short_name, profile, target, expected)
    # As a fresh worker loads it: the op-call run before it in this process leaves programs cached whose page maps
    # sit in DRAM (a reshape that moves pages: multi-latent attention's heads), between where its weights were.
    mesh.clear_program_cache()
    cfg = ckpt.hf_config()
    dram = ttnn.get_memory_view(mesh, ttnn.BufferType.DRAM)
    before = dram.total_bytes_allocated_per_bank
    rep.dram_per_chip = dram.total_bytes_per_bank * dram.num_banks
    try:
        m = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(
            cfg, mesh, max_batch_size=BATCH, max_seq_len=max_seq_len, optimizations=profile, load_format="dummy",
            expert_dispatch=expert_dispatch)
    except UnsupportedModelError as e:
        rep.refusal = str(e)
        return rep
    except Rejected as e:
        rep.refusal = e.call.rule.message if e.call.rule else str(e)
        rec.calls[-1] = type(e.call)(**{**vars(e.call), "expected": not expected})
        return rep
    rep.loaded = True
    dram = ttnn.get_memory_view(mesh, ttnn.BufferType.DRAM)
    rep.weights_per_chip = (dram.total_bytes_allocated_per_bank - before) * dram.num_banks
    cap = m.kv_cache_capacity(BLOCK)
    rep.kv_blocks, rep.tokens_per_user = cap.blocks, cap.blocks * BLOCK // BATCH
    a = m.model.args
    try:
        blocks = min(cap.blocks, BATCH + 1)
        kv = m.allocate_kv_cache((blocks, m.kv_cache_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
        tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
        pos = torch.full((BATCH,), BLOCK - 1, dtype=torch.int32)
        table = (torch.arange(BATCH, dtype=torch.int32) % (blocks - 1) + 1)[:, None]
        m.decode_forward(tokens, pos, table, kv, enable_trace=False)
        rep.phases["decode of 32 users, every layer"] = "ok"
    except Rejected:
        rep.phases["decode of 32 users, every layer"] = "rejected"
    m.release()
    return rep
