"""Fetch the tt-metal unit tests and helpers listed in manifest.yaml into .cache/tt-metal-tests/ (git-ignored).

    .venv/bin/python tt_checks/tt_metal_unit/fetch.py            # download what is missing, verify everything
    .venv/bin/python tt_checks/tt_metal_unit/fetch.py --verify   # only check the files already there

Files come byte-for-byte from raw.githubusercontent.com at the commit the manifest records (from the manifest's
``repo``, or from the entry's own ``repo:`` where a fork holds the pinnable copy) and are checked against its length
(characters) and sha256; nothing is edited. ``source: wheel:<path>`` entries are copied from the real
ttnn 0.81.1 wheel in .venv-ttnn (tt-metal keeps those paths as symlinks into ttnn/). Needs network access to GitHub,
so CI does not run it. (The copies measured in benchmarks/data/tt_metal_unit_tests.json were read through a stored
index of the repository at the same commits; the sha256 values are of those copies.)
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import urllib.request
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "tt-metal-tests"
WHEEL = ROOT / ".venv-ttnn" / "lib" / "python3.12" / "site-packages"


def _check(entry: dict, target: Path) -> str | None:
    data = target.read_bytes()
    if "chars" in entry and len(data.decode("utf-8")) != entry["chars"]:
        return f"{len(data.decode('utf-8'))} chars, manifest says {entry['chars']}"
    if "sha256" in entry and hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return "sha256 differs from the manifest"
    return None


def _fetch(repo: str, entry: dict, target: Path) -> None:
    """``repo`` is the manifest's default; an entry's own ``repo:`` (a fork holding a pinnable copy) overrides it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    source = entry.get("source", "")
    if source.startswith("wheel:"):
        shutil.copyfile(WHEEL / source.removeprefix("wheel:"), target)
        return
    url = f"https://raw.githubusercontent.com/{entry.get('repo', repo)}/{entry['commit']}/{entry['path']}"
    with urllib.request.urlopen(url, timeout=60) as response:
        target.write_bytes(response.read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verify", action="store_true", help="do not download, only verify")
    args = parser.parse_args()
    manifest = yaml.safe_load((HERE / "manifest.yaml").read_text())
    problems = 0
    for entry in manifest["helpers"] + manifest["tests"]:
        if "standin" in entry:  # ours, used from tt_checks/tt_metal_unit/standins via PYTHONPATH
            continue
        target = CACHE / entry["path"]
        if not target.exists() and not args.verify:
            _fetch(manifest["repo"], entry, target)
        if not target.exists():
            print(f"missing   {entry['path']}")
            problems += 1
            continue
        problem = _check(entry, target)
        print(f"{'MISMATCH' if problem else 'ok':9s} {entry['path']}" + (f": {problem}" if problem else ""))
        problems += bool(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
