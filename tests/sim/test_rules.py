"""Every validation rule the simulator enforces (ttnn_sim/rules.py) is held to the real ttnn both ways:
its breaking corpus cases are rejected by the real ttnn 0.81.1 (recorded in tests/fixtures/ttnn_corpus_0.81.1.json)
and by the simulator, each with this rule's message, and its last case, the nearest valid call, is accepted by both.
docs/ttnn-validation.md is the registry's text."""

import json
from pathlib import Path

import pytest

import ttnn_sim as ttnn
from tt_checks.corpus import run_call
from ttnn_sim.rules import all_rules, markdown

ROOT = Path(__file__).parents[2]
CASES = {c["name"]: c for c in json.loads((ROOT / "tests/fixtures/ttnn_corpus_0.81.1.json").read_text())["cases"]}
# The collectives' rules are recorded on mock meshes (cases "MESH/case" of tests/fixtures/all_to_all_0.81.1.json) and
# held by tests/sim/test_all_to_all.py, which opens simulated meshes with a fabric (not beside this module's N150).
MESH_OPS = ("all_to_all_dispatch", "all_to_all_combine", "moe_expert_token_remap")
RULES = [r for r in all_rules() if r.op not in MESH_OPS]


@pytest.fixture(scope="module")
def device():
    dev = ttnn.open_device(device_id=0)
    yield dev
    ttnn.close_device(dev)


def test_docs_are_the_registry():
    doc = ROOT / "docs" / "ttnn-validation.md"
    assert doc.read_text() == markdown(), "regenerate: python scripts/gen_validation_doc.py"


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.op}:{r.message[:60]}" for r in RULES])
def test_rule_both_ways(rule, device):
    if rule.unreachable:
        assert not rule.cases
        return
    assert len(rule.cases) >= 2, "a rule needs a breaking case and the nearest valid one"
    pattern = rule.pattern()
    *breaking, valid = rule.cases
    for name in breaking:
        case = CASES[name]
        real = case["verdict"]
        assert not real["ok"] and pattern.fullmatch(real["error"]), f"{name}: the real ttnn says {real}"
        sim = run_call(ttnn, device, case["call"])
        assert not sim["ok"], f"{name}: the simulator accepts it"
        assert sim["error"] == f"ttnn.{rule.op}: " + real["error"] or pattern.fullmatch(
            sim["error"].split(": ", 1)[1]), f"{name}: simulator says {sim['error']!r}"
    real = CASES[valid]["verdict"]
    assert real["ok"], f"{valid}: the real ttnn rejects the valid case: {real}"
    sim = run_call(ttnn, device, CASES[valid]["call"])
    assert sim["ok"], f"{valid}: the simulator rejects the valid case: {sim}"
