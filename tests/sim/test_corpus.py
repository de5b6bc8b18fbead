"""The differential corpus: op calls recorded from the real ttnn 0.81.1 on a mock N150 (hand-written cases for every
op the simulator implements, and every distinct call the models make; tests/fixtures/ttnn_corpus_0.81.1.json,
recorded by `scripts/check_real_ttnn.sh --corpus`) replayed through the simulator: it must accept and reject the
same calls and produce outputs of the same shape, dtype, layout and memory config.

Disagreements the simulator cannot close are listed in KNOWN with why; a listed case that starts to agree fails too,
so the list stays true."""

import json
from pathlib import Path

import pytest

import ttnn_sim as ttnn
from tt_checks.corpus import run_call

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ttnn_corpus_0.81.1.json"
CORPUS = json.loads(FIXTURE.read_text())
# case name -> why the simulator cannot agree with the real ttnn there.
KNOWN: dict[str, str] = {
    "concat-decode/offset-grid-with-subgrids": "with sub_core_grids the real op starts the output on a core the "
    "simulator cannot derive from the input's grid (the measured start, (0, 4), is neither the first core of the input "
    "in row order nor of its first range); the models never take this path (their head grids start at (0, 0))",
}


def outcome(verdict: dict) -> tuple:
    """What must agree: the verdict, and for an accepted call its outputs' specs and the bytes per bank of DRAM
    and L1 they take."""
    return (True, verdict["out"], verdict.get("alloc")) if verdict["ok"] else (False,)


@pytest.fixture(scope="module")
def device():
    dev = ttnn.open_device(device_id=0)
    yield dev
    ttnn.close_device(dev)


def replay(device) -> list[tuple[str, dict, dict]]:
    return [(c["name"], c["verdict"], run_call(ttnn, device, c["call"])) for c in CORPUS["cases"]]


def test_simulator_agrees_with_the_real_ttnn(device, capsys):
    results = replay(device)
    disagree = {name: (real, sim) for name, real, sim in results if outcome(real) != outcome(sim)}
    agree = len(results) - len(disagree)
    with capsys.disabled():
        print(f"\ncorpus: {len(results)} calls, simulator agrees on {agree} ({100 * agree / len(results):.1f}%)")
    unexpected = {n: v for n, v in disagree.items() if n not in KNOWN}
    stale = [n for n in KNOWN if n not in disagree]
    lines = [f"{n}: real {'ok ' + str(r.get('out')) if r['ok'] else 'rejects: ' + r['error']} | "
             f"sim {'ok ' + str(s.get('out')) if s['ok'] else 'rejects: ' + s['error']}"
             for n, (r, s) in sorted(unexpected.items())]
    assert not unexpected, f"{len(unexpected)} disagreements:\n" + "\n".join(lines)
    assert not stale, f"listed as known disagreements but now agreeing: {stale}"
