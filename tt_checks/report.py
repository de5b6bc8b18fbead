"""Turns what the real ttnn raises into one-line verdicts, and verdicts into the checker's summary.

A TT_FATAL reaches Python as a RuntimeError whose text is
    TT_FATAL @ <source file>:<line>: <condition>\ninfo:\n<message>\nbacktrace:\n --- <frames>...
and an allocator failure carries its "Out of Memory: ..." message the same way. The report keeps the message, the
tt-metal source line that raised it, and the model-code line that made the call.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_FATAL = re.compile(r"TT_(?:FATAL|THROW) @ (?P<src>\S+?):(?P<line>\d+):\s*(?P<cond>.*?)\n(?:info:\n(?P<msg>.*?))?"
                    r"(?:\nbacktrace:|$)", re.S)


@dataclass(frozen=True)
class Rule:
    """The rule a device enforced: its message, the checked condition and where tt-metal checks it."""

    message: str
    condition: str = ""
    source: str = ""  # e.g. ttnn/cpp/ttnn/operations/matmul/device/matmul_device_operation.cpp:79

    @property
    def is_out_of_memory(self) -> bool:
        return self.message.startswith("Out of Memory") or "Out of Memory" in self.message


def parse_error(text: str) -> Rule:
    """The rule behind a real ttnn exception's text (TT_FATAL / TT_THROW, or a plain message)."""
    m = _FATAL.search(text)
    if m is None:
        first = text.split("backtrace:")[0].strip()
        return Rule(" ".join(first.split()))
    src = m.group("src")
    src = src.split("/project/", 1)[-1]  # wheels are built under /project: keep the repository-relative path
    message = " ".join((m.group("msg") or m.group("cond")).split())
    return Rule(message, " ".join(m.group("cond").split()), f"{src}:{m.group('line')}")


@dataclass(frozen=True)
class Call:
    """One op call the models made and the device's verdict on it (rule is None when accepted)."""

    op: str
    where: str  # model-code line that made the call, "path:line (function)"
    scenario: str
    rule: Rule | None = None
    # A rejection the scenario exists to show (a model that must not fit failing at load with the device's
    # out-of-memory message); reported, not counted against the models.
    expected: bool = False

    @property
    def accepted(self) -> bool:
        return self.rule is None

    def line(self) -> str:
        """The one-line report of a rejected call."""
        assert self.rule is not None
        src = f" [{self.rule.source}]" if self.rule.source else ""
        return f"REJECTED {self.op} at {self.where} ({self.scenario}): {self.rule.message}{src}"


def summary(calls: list[Call]) -> str:
    """`N calls accepted, M rejected`, with the accepted/rejected counts per scenario before it (rejections a
    capacity check expects are counted apart)."""
    per: dict[str, Counter] = {}
    for c in calls:
        kind = "accepted" if c.accepted else "expected" if c.expected else "rejected"
        per.setdefault(c.scenario, Counter())[kind] += 1
    lines = [f"  {name}: {n['accepted']} accepted, {n['rejected']} rejected"
             + (f", {n['expected']} expected out-of-memory" if n["expected"] else "") for name, n in per.items()]
    ok = sum(c.accepted for c in calls)
    expected = sum(c.expected for c in calls)
    lines.append(f"{ok} calls accepted, {len(calls) - ok - expected} rejected"
                 + (f" ({expected} expected out-of-memory verdicts of capacity checks)" if expected else ""))
    return "\n".join(lines)
