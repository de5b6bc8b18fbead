"""A benchmark's result: printed as JSON, and written to --out when given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(result: dict[str, Any], out: str | None, indent: int | None = 2) -> None:
    text = json.dumps(result, indent=indent)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
