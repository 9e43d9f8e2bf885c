"""How much of `--fix`'s diff over real repositories is layout churn, and whether every fixed file parses.

    python benchmarks/churn.py TREE [TREE ...]          # one line per tree, then the totals
    python benchmarks/churn.py --show TREE              # also print each churned line pair
    python benchmarks/churn.py --json TREE              # the numbers as JSON

Each tree is copied to a scratch directory (the tree itself is never written)
and linted there with `--fix --unsafe-fixes --diff` (every fix, written
nowhere), then fixed for real with `--fix --unsafe-fixes`. Churn is a line
the diff removes and adds back with only whitespace changed (a call re-indented
by the fix): per hunk, the removed and added lines are matched with all their
whitespace deleted, and each pair whose text differs counts once. Every file
the fix changed is then parsed with Python's `ast`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

_WHITESPACE_RE = re.compile(r"\s+")


def hunks(diff: str) -> Iterator[Tuple[str, List[str], List[str]]]:
    """(path, removed lines, added lines) for each hunk of a unified diff."""
    path, removed, added = "", [], []
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
        elif line.startswith("@@") or line.startswith("--- "):
            if removed or added:
                yield path, removed, added
            removed, added = [], []
        elif line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    if removed or added:
        yield path, removed, added


def churned(removed: List[str], added: List[str]) -> List[Tuple[str, str]]:
    """Pairs (removed, added) of lines equal but for whitespace, and not equal."""
    pool: Dict[str, List[str]] = {}
    for line in added:
        pool.setdefault(_WHITESPACE_RE.sub("", line), []).append(line)
    pairs = []
    for line in removed:
        candidates = pool.get(_WHITESPACE_RE.sub("", line))
        if candidates:
            again = candidates.pop(0)
            if again != line:
                pairs.append((line, again))
    return pairs


def measure(tree: Path, scratch: Path, show: bool) -> dict:
    copy = scratch / tree.name
    shutil.copytree(tree, copy, symlinks=True)
    originals = {path: path.read_bytes() for path in copy.rglob("*.py") if path.is_file() and not path.is_symlink()}
    command = [sys.executable, "-m", "torchdet_lint", "--no-cache", "--exit-zero", "--quiet", "--fix", "--unsafe-fixes"]
    diff = subprocess.run([*command, "--diff", "."], cwd=copy, capture_output=True, text=True).stdout
    counts: Counter = Counter()
    for path, removed, added in hunks(diff):
        counts["hunks"] += 1
        counts["removed"] += len(removed)
        counts["added"] += len(added)
        pairs = churned(removed, added)
        counts["churn"] += len(pairs)
        if show:
            for old, new in pairs:
                print(f"{tree.name}/{path}:\n  -{old}\n  +{new}")
    subprocess.run([*command, "."], cwd=copy, capture_output=True, text=True)
    for path, before in originals.items():
        after = path.read_bytes()
        if after == before:
            continue
        counts["fixed_files"] += 1
        try:
            ast.parse(after, filename=str(path))
        except SyntaxError as error:
            print(f"{tree.name}/{path.relative_to(copy)} does not parse after --fix: {error}", file=sys.stderr)
        else:
            counts["parsing"] += 1
    return {"tree": tree.name, **{key: counts[key] for key in ("fixed_files", "parsing", "hunks", "removed", "added", "churn")}}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--show", action="store_true", help="print every churned line pair")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    options = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tdl-churn-") as scratch:
        for tree in options.trees:
            rows.append(measure(tree.resolve(), Path(scratch), options.show))
            if not options.json:
                row = rows[-1]
                print(
                    f"{row['tree']:45} fixed files {row['fixed_files']:4}  parsing {row['parsing']:4}  "
                    f"hunks {row['hunks']:4}  -{row['removed']:<5} +{row['added']:<5} churn {row['churn']}",
                    flush=True,
                )
    total = {key: sum(row[key] for row in rows) for key in ("fixed_files", "parsing", "hunks", "removed", "added", "churn")}
    if options.json:
        print(json.dumps({"trees": rows, "total": total}, indent=2))
    else:
        print(
            f"{'total':45} fixed files {total['fixed_files']:4}  parsing {total['parsing']:4}  "
            f"hunks {total['hunks']:4}  -{total['removed']:<5} +{total['added']:<5} churn {total['churn']}"
        )
    return 1 if total["churn"] or total["parsing"] != total["fixed_files"] else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
