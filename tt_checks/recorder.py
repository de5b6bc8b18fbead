"""The real ttnn as the models see it during a check: every ttnn operation the model code calls goes through the
real library (so through the real C++ validation and the real allocator) and its verdict is recorded together with
the model-code line that made the call. After each accepted call the device's DRAM and L1 use is sampled, so the
peak use of a run comes from the real allocator.

A rejected call raises `Rejected` (the real op produced no output, so the run it belongs to cannot go on); the
checker moves on to the next phase or scenario.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tt_checks.report import Call, Rule, parse_error

ROOT = Path(__file__).resolve().parents[1]
_MODEL_CODE = (ROOT / "tt_models", ROOT / "generator_vllm.py", ROOT / "vllm_patches")


# Calls a corpus case cannot reproduce on fresh inputs (freeing a tensor the case itself made).
_NOT_CAPTURED = {"ttnn.deallocate"}


class Rejected(RuntimeError):
    """A call the device rejected; carries its report."""

    def __init__(self, call: Call) -> None:
        super().__init__(call.line())
        self.call = call


@dataclass
class Peak:
    """Largest per-bank use seen, in bytes, and the bank counts and sizes it is out of."""

    dram_per_bank: int = 0
    l1_per_bank: int = 0
    dram_banks: int = 0
    l1_banks: int = 0
    dram_bank_size: int = 0
    l1_bank_size: int = 0


@dataclass
class Recorder:
    """Collects verdicts for the scenario named by `scenario`."""

    ttnn: Any
    device: Any = None
    scenario: str = ""
    calls: list[Call] = field(default_factory=list)
    peak: Peak = field(default_factory=Peak)
    # When set, every call's arguments are kept in the corpus encoding (tt_checks.corpus), keyed to drop repeats.
    captured: dict[str, dict] | None = None
    unencodable: dict[str, str] = field(default_factory=dict)

    def capture(self, op: str, args: tuple, kwargs: dict) -> None:
        if self.captured is None or op in _NOT_CAPTURED:
            return
        if "cache_file_name" in kwargs:  # a path on this machine; the call is the same without the cache
            kwargs = {**kwargs, "cache_file_name": None}
        from tt_checks.corpus import call_key, encode_call

        try:
            call = encode_call(op, args, kwargs)
        except TypeError as e:
            self.unencodable[op] = str(e)
            return
        self.captured.setdefault(call_key(call), call)

    def sample_memory(self) -> None:
        if self.device is None:
            return
        p = self.peak
        dram = self.ttnn.get_memory_view(self.device, self.ttnn.BufferType.DRAM)
        l1 = self.ttnn.get_memory_view(self.device, self.ttnn.BufferType.L1)
        p.dram_per_bank = max(p.dram_per_bank, dram.total_bytes_allocated_per_bank)
        p.l1_per_bank = max(p.l1_per_bank, l1.total_bytes_allocated_per_bank)
        p.dram_banks, p.dram_bank_size = dram.num_banks, dram.total_bytes_per_bank
        p.l1_banks, p.l1_bank_size = l1.num_banks, l1.total_bytes_per_bank

    def reset_peak(self) -> None:
        self.peak = Peak()
        self.sample_memory()


def model_line(depth: int = 2) -> str:
    """`path:line (function)` of the innermost model-code frame calling into ttnn."""
    f = sys._getframe(depth)
    outer = None
    while f is not None:
        path = Path(f.f_code.co_filename)
        if any(path == m or m in path.parents for m in _MODEL_CODE):
            return f"{path.relative_to(ROOT)}:{f.f_lineno} ({f.f_code.co_name})"
        if outer is None and ROOT in path.parents and "tt_checks" not in path.parts:
            outer = f"{path.relative_to(ROOT)}:{f.f_lineno} ({f.f_code.co_name})"
        f = f.f_back
    return outer or "?"


class RecordingTTNN:
    """Proxy of the real ttnn module (and its submodules): operations are recorded, everything else is the real
    object. Only ttnn *operations* (ttnn.decorators.FastOperation: ops, conversions, placements) count as calls;
    building config objects does not."""

    def __init__(self, real: Any, recorder: Recorder, prefix: str = "ttnn") -> None:
        self._real, self._rec, self._prefix = real, recorder, prefix
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        attr = getattr(self._real, name)
        qual = f"{self._prefix}.{name}"
        if isinstance(attr, types.ModuleType):
            wrapped = RecordingTTNN(attr, self._rec, qual)
        elif type(attr).__name__ == "FastOperation":
            wrapped = self._wrap(qual, attr)
        else:
            wrapped = attr
        self._cache[name] = wrapped
        return wrapped

    def _wrap(self, qual: str, op: Any) -> Any:
        rec = self._rec

        def call(*args: Any, **kwargs: Any) -> Any:
            where = model_line()
            rec.capture(qual, args, kwargs)
            try:
                out = op(*args, **kwargs)
            except Exception as e:  # every TT_FATAL / TT_THROW reaches Python as an exception
                c = Call(qual, where, rec.scenario, parse_error(str(e)) if str(e) else Rule(type(e).__name__))
                rec.calls.append(c)
                raise Rejected(c) from None
            rec.calls.append(Call(qual, where, rec.scenario))
            rec.sample_memory()
            return out

        call.__name__ = qual.rsplit(".", 1)[-1]
        call.__qualname__ = qual
        return call
