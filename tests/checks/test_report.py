"""The checker's report: a real TT_FATAL text from ttnn 0.81.1 (as recorded in the differential corpus) becomes the
one-line report with the rule's message and the tt-metal source line, and the summary counts verdicts."""

import json
from pathlib import Path

from tt_checks.report import Call, Rule, parse_error, summary

CORPUS = json.loads((Path(__file__).parents[1] / "fixtures" / "ttnn_corpus_0.81.1.json").read_text())
REJECTED = [c for c in CORPUS["cases"] if not c["verdict"]["ok"] and "TT_FATAL" in c["verdict"].get("raw", "")]


def test_real_fatal_texts_parse_into_rules():
    assert REJECTED, "the corpus holds rejected calls with their raw TT_FATAL text"
    for case in REJECTED:
        raw = case["verdict"]["raw"]
        rule = parse_error(raw)
        assert rule.message == case["verdict"]["error"]
        assert rule.source.startswith(("ttnn/", "tt_metal/")), rule.source
        assert rule.source.rsplit(":", 1)[1].isdigit() and "/project/" not in rule.source
        assert rule.condition and "\n" not in rule.message


def test_rope_rejection_becomes_one_line():
    raw = next(c["verdict"]["raw"] for c in REJECTED if "RoPE" in c["verdict"]["error"])
    call = Call("ttnn.experimental.rotary_embedding_llama", "tt_models/layers/attention.py:89 (decode)",
                "N150/llama_gqa/performance decode_forward", parse_error(raw))
    line = call.line()
    assert "\n" not in line
    assert line.startswith("REJECTED ttnn.experimental.rotary_embedding_llama at tt_models/layers/attention.py:89")
    assert "must be HEIGHT_SHARDED" in line
    assert "[ttnn/cpp/ttnn/operations/experimental/transformer/rotary_embedding_llama/device/" in line


def test_out_of_memory_text():
    raw = ("TT_FATAL @ /project/tt_metal/impl/allocator/bank_manager.cpp:514: false\ninfo:\nOut of Memory: Not "
           "enough space to allocate 17179869184 B DRAM buffer across 12 banks, where each bank needs to store "
           "1431656448 B, but bank size is 1072693184 B (allocated: 14336 B, free: 1072678848 B, largest free "
           "block: 1072678848 B).\nbacktrace:\n --- frame\n")
    rule = parse_error(raw)
    assert rule.is_out_of_memory and rule.source == "tt_metal/impl/allocator/bank_manager.cpp:514"
    assert rule.message.endswith("largest free block: 1072678848 B).")


def test_plain_exception_text_and_summary():
    rule = parse_error("ttnn.foo(): incompatible function arguments.\n\nCalled with:\n  foo(1)")
    assert rule.message.startswith("ttnn.foo(): incompatible function arguments. Called with:") and not rule.source
    calls = [Call("ttnn.add", "a.py:1 (f)", "s1"), Call("ttnn.mul", "a.py:2 (f)", "s1", Rule("bad")),
             Call("ttnn.add", "a.py:1 (f)", "s2")]
    text = summary(calls)
    assert text.splitlines()[-1] == "2 calls accepted, 1 rejected"
    assert "  s1: 1 accepted, 1 rejected" in text and "  s2: 1 accepted, 0 rejected" in text


def test_expected_out_of_memory_is_counted_apart():
    oom = Rule("Out of Memory: Not enough space to allocate 119537664 B DRAM buffer across 12 banks")
    calls = [Call("ttnn.as_tensor", "w.py:1 (f)", "cap", oom, expected=True), Call("ttnn.add", "a.py:1 (f)", "s1")]
    text = summary(calls)
    last = "1 calls accepted, 0 rejected (1 expected out-of-memory verdicts of capacity checks)"
    assert text.splitlines()[-1] == last
    assert "  cap: 0 accepted, 0 rejected, 1 expected out-of-memory" in text
