"""The device's validation rules, as data: each rule an op enforces carries the message ttnn 0.81.1 raises for it
(TT_FATAL's text, `{}` where the real message prints a value), the tt-metal source that checks it, and the names of
the differential-corpus cases that test it both ways (a call that breaks it, then the nearest call that passes).

`docs/ttnn-validation.md` is generated from this registry (python -m ttnn_sim.rules), and
tests/sim/test_rules.py holds every rule to its cases: the real ttnn (recorded in the corpus) and the simulator both
reject the breaking call with this rule's message and both accept the valid one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import TTError

_OPS = "ttnn/cpp/ttnn/operations/"


@dataclass(frozen=True)
class Rule:
    op: str  # as the error names it, e.g. "experimental.rotary_embedding_llama"
    message: str  # the real message; "{}" marks a value the message prints
    source: str  # tt-metal path of the check
    cases: tuple[str, ...] = ()  # corpus cases: the breaking call(s), then the nearest valid call
    unreachable: str = ""  # why no call can break this rule on its own (an earlier check always fires first)

    def error(self, *values: Any) -> TTError:
        return TTError(self.op, self.message.format(*values) if values else self.message)

    def require(self, condition: bool, *values: Any) -> None:
        if not condition:
            raise self.error(*values)

    def pattern(self) -> re.Pattern:
        """Matches the real message with any printed values."""
        parts = [re.escape(" ".join(p.replace("{{", "{").replace("}}", "}").split()))
                 for p in self.message.split("{}")]
        return re.compile(".*?".join(parts), re.S)


@dataclass
class RuleSet:
    """The rules of one op, registered in the order the device checks them."""

    op: str
    source: str
    rules: list[Rule] = field(default_factory=list)

    def __call__(self, message: str, *cases: str, source: str | None = None, unreachable: str = "") -> Rule:
        src = source or self.source
        rule = Rule(self.op, message, src if src.startswith(("ttnn/", "tt_metal/")) else _OPS + src, cases,
                    unreachable)
        self.rules.append(rule)
        return rule


REGISTRY: list[RuleSet] = []


def rules(op: str, source: str) -> RuleSet:
    rs = RuleSet(op, source if source.startswith(("ttnn/", "tt_metal/")) else _OPS + source)
    REGISTRY.append(rs)
    return rs


def all_rules() -> list[Rule]:
    # Importing the op modules registers their rules.
    import importlib

    for module in ("all_to_all", "clamp", "conversion", "copy_op", "data_movement", "distributed_norm", "eltwise",
                   "embedding", "experimental", "fused_softmax", "generic_reduction", "heads", "matmul", "mla",
                   "normalization", "padding", "paged_cache", "placement", "reduction", "rotary", "sampling",
                   "sdpa_decode", "sparse_matmul", "transformer"):
        importlib.import_module(f"{__package__}.{module}")

    return [r for rs in sorted(REGISTRY, key=lambda r: r.op) for r in rs.rules]


def markdown() -> str:
    lines = ["# TT-NN validation rules the simulator enforces", "",
             "Generated from `ttnn_sim/rules.py` (`python scripts/gen_validation_doc.py`). Each rule is what",
             "ttnn 0.81.1 enforces, with its message (`{}` marks a printed value), the tt-metal source that checks it,",
             "and the differential-corpus cases (tests/fixtures/ttnn_corpus_0.81.1.json) that test it both ways: the",
             "first case(s) break the rule and are rejected by the real ttnn and by the simulator with this message,",
             "the last is the nearest valid call, accepted by both. tests/sim/test_rules.py checks every line.",
             "Cases named `MESH/case` (the collectives) were recorded on mock meshes (N300, T3K, `T3K:2x4`: a",
             "T3K's chips as 2x4) into tests/fixtures/all_to_all_0.81.1.json; tests/sim/test_all_to_all.py",
             "checks them.",
             ""]
    all_rules()
    for rs in sorted(REGISTRY, key=lambda r: r.op):
        if not rs.rules:
            continue
        lines += [f"## ttnn.{rs.op}", "", f"Source: `{rs.source}`", "", "| # | rule (message) | cases |",
                  "|---|---|---|"]
        for i, r in enumerate(rs.rules, 1):
            src = "" if r.source == rs.source else f" (`{r.source}`)"
            msg = r.message.replace("|", "\\|")
            cases = ", ".join(f"`{c}`" for c in r.cases) or f"unreachable: {r.unreachable}"
            lines.append(f"| {i} | {msg}{src} | {cases} |")
        lines.append("")
    return "\n".join(lines)

