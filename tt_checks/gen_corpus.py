"""Records the differential corpus: every hand-written case (tt_checks.corpus_cases) and every distinct call the
models make in the checker's scenarios, each run once more on its own through the real ttnn on the mock device,
with its verdict and output specs, into tests/fixtures/ttnn_corpus_0.81.1.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tt_checks.corpus import call_key, run_call
from tt_checks.corpus_cases import cases

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "ttnn_corpus_0.81.1.json"


def record(ttnn: Any, device: Any, device_name: str, model_calls: dict[str, dict]) -> Path:
    entries, seen = [], set()
    for name, c in cases():
        seen.add(call_key(c))
        entries.append({"name": name, "source": "hand", "call": c})
    for i, (key, c) in enumerate(sorted(model_calls.items())):
        if key not in seen:
            entries.append({"name": f"model/{c['op'].removeprefix('ttnn.')}/{i}", "source": "model", "call": c})
    for e in entries:
        e["verdict"] = run_call(ttnn, device, e["call"])
    FIXTURE.write_text(json.dumps({"ttnn_version": "0.81.1", "device": device_name, "cases": entries}, indent=0,
                                  sort_keys=True) + "\n")
    ok = sum(e["verdict"]["ok"] for e in entries)
    print(f"corpus: {len(entries)} calls ({sum(e['source'] == 'hand' for e in entries)} hand-written, "
          f"{sum(e['source'] == 'model' for e in entries)} from the models), {ok} accepted, {len(entries) - ok} "
          f"rejected -> {FIXTURE.relative_to(ROOT)}")
    return FIXTURE
