"""Re-lint the corpus of real repositories and compare the result with the judged verdicts.

    python benchmarks/real/relint.py --root DIR                 # every snapshot found under DIR
    python benchmarks/real/relint.py --root DIR --only nanoGPT  # some repositories only
    python benchmarks/real/relint.py --root DIR --save runs/new # also keep each repository's raw JSON output
    python benchmarks/real/relint.py --root DIR --json          # the report as JSON
    python benchmarks/real/relint.py --root DIR --linter-path ../other-checkout
    python benchmarks/real/relint.py --compare runs/old runs/new  # two saved runs, nothing is run

Each `<name>.toml` next to this script describes one repository: its URL, the commit
of its snapshot, the paths linted (`scope`) and the verdicts judged on its
diagnostics. The snapshot is expected at `ROOT/<name>` (`--root`, or the environment
variable `TORCHDET_REAL_ROOT`). The linter runs as users run it, from the snapshot
root, with the checkout at `--linter-path` (default: this repository) first on
PYTHONPATH. Diagnostics are matched to verdicts by (path, line, code).

Standard library only, and Python 3.9+ (the TOML files are read with a small parser
when `tomllib` is missing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent.parent
ROOT_ENV = "TORCHDET_REAL_ROOT"
TORCH_VERSION = "2.13"
VERDICTS = ("true", "false", "debatable")
Key = Tuple[str, int, str]


# --- TOML ----------------------------------------------------------------------------------------


class TomlError(ValueError):
    pass


_TOKEN_RE = re.compile(
    r"""\s*(?:
        (?P<basic>"(?:[^"\\\n]|\\.)*")
      | (?P<literal>'[^'\n]*')
      | (?P<number>[+-]?\d[\d_]*)
      | (?P<bool>true|false)\b
      | (?P<open>\[)
      | (?P<close>\])
      | (?P<comma>,)
      | (?P<comment>\#[^\n]*)
      | (?P<newline>\n)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def _unescape(text: str) -> str:
    def replace(match: "re.Match[str]") -> str:
        code = match.group(1)
        if code[0] in "uU":
            return chr(int(code[1:], 16))
        if code in _ESCAPES:
            return _ESCAPES[code]
        raise TomlError(f"unknown escape \\{code}")

    return re.sub(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", replace, text)


def _value(text: str, pos: int, line: int) -> Tuple[Any, int]:
    """One value starting at text[pos]: a string, an integer, a boolean or an array of those."""
    match = _TOKEN_RE.match(text, pos)
    while match and (match.group("newline") or match.group("comment")):
        match = _TOKEN_RE.match(text, match.end())
    if not match:
        raise TomlError(f"line {line}: unsupported value")
    kind = match.lastgroup
    if kind == "basic":
        return _unescape(match.group(kind)[1:-1]), match.end()
    if kind == "literal":
        return match.group(kind)[1:-1], match.end()
    if kind == "number":
        return int(match.group(kind).replace("_", "")), match.end()
    if kind == "bool":
        return match.group(kind) == "true", match.end()
    if kind == "open":
        items: List[Any] = []
        pos = match.end()
        while True:
            match = _TOKEN_RE.match(text, pos)
            while match and (match.group("newline") or match.group("comment") or match.group("comma")):
                match = _TOKEN_RE.match(text, match.end())
            if not match:
                raise TomlError(f"line {line}: unterminated array")
            if match.group("close"):
                return items, match.end()
            item, pos = _value(text, match.start(), line)
            items.append(item)
    raise TomlError(f"line {line}: unsupported value")


def parse_toml(text: str) -> Dict[str, Any]:
    """The subset of TOML the corpus files use: top-level keys, `[[array]]` tables, strings,
    integers, booleans and arrays of them."""
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            tomllib = None  # type: ignore[assignment]
    if tomllib is not None:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise TomlError(str(error)) from None
    data: Dict[str, Any] = {}
    table = data
    pos = 0
    key_re = re.compile(r"[ \t]*(?:([A-Za-z0-9_-]+)|\"((?:[^\"\\\n]|\\.)*)\")[ \t]*=")
    header_re = re.compile(r"[ \t]*(\[\[?)[ \t]*([A-Za-z0-9_-]+)[ \t]*(\]\]?)[ \t]*(?:#[^\n]*)?(?=\n|$)")
    blank_re = re.compile(r"[ \t]*(?:#[^\n]*)?(?:\n|$)")
    while pos < len(text):
        line = text.count("\n", 0, pos) + 1
        blank = blank_re.match(text, pos)
        if blank and blank.end() > pos:
            pos = blank.end()
            continue
        header = header_re.match(text, pos)
        if header:
            name = header.group(2)
            if header.group(1) == "[[" and header.group(3) == "]]":
                array = data.setdefault(name, [])
                if not isinstance(array, list):
                    raise TomlError(f"line {line}: {name} is not an array of tables")
                table = {}
                array.append(table)
            elif header.group(1) == "[" and header.group(3) == "]":
                if name in data:
                    raise TomlError(f"line {line}: table {name} defined twice")
                table = data[name] = {}
            else:
                raise TomlError(f"line {line}: malformed table header")
            pos = header.end()
            continue
        key = key_re.match(text, pos)
        if not key:
            raise TomlError(f"line {line}: expected `key = value`")
        name = key.group(1) if key.group(1) is not None else _unescape(key.group(2))
        if name in table:
            raise TomlError(f"line {line}: key {name} defined twice")
        table[name], pos = _value(text, key.end(), line)
        rest = blank_re.match(text, pos)
        if not rest:
            raise TomlError(f"line {line}: unexpected text after the value of {name}")
        pos = rest.end()
    return data


# --- the corpus ----------------------------------------------------------------------------------


class Repo:
    def __init__(self, name: str, source: Path, data: Dict[str, Any]) -> None:
        self.name = name
        self.source = source
        self.url = str(data.get("url", ""))
        self.commit = str(data.get("commit", ""))
        scope = data.get("scope", ["."])
        self.scope = [scope] if isinstance(scope, str) else [str(s) for s in scope]
        self.kind = str(data.get("kind", ""))
        self.judged_on = str(data.get("judged_on", ""))
        self.verdicts: Dict[Key, Dict[str, Any]] = {}
        self.problems: List[str] = []
        for number, entry in enumerate(data.get("verdict", []), 1):
            try:
                key = (_norm(str(entry["path"])), int(entry["line"]), str(entry["code"]))
                verdict = str(entry["verdict"])
            except (KeyError, TypeError, ValueError):
                self.problems.append(f"verdict #{number}: needs path, line, code and verdict")
                continue
            if verdict not in VERDICTS:
                self.problems.append(f"verdict #{number} ({_show_key(key)}): verdict must be one of {', '.join(VERDICTS)}")
                continue
            if key in self.verdicts:
                self.problems.append(f"verdict #{number} ({_show_key(key)}): judged twice; the first verdict is used")
                continue
            self.verdicts[key] = {"verdict": verdict, "reason": str(entry.get("reason", ""))}


def _norm(path: str) -> str:
    path = path.replace("\\", "/")
    return path[2:] if path.startswith("./") else path


def _show_key(key: Key) -> str:
    return f"{key[0]}:{key[1]} {key[2]}"


def load_corpus(only: Optional[Sequence[str]]) -> Tuple[List[Repo], List[str]]:
    """The corpus files (restricted to `only`), and the names in `only` that have none."""
    repos = []
    for source in sorted(HERE.glob("*.toml"), key=lambda p: p.stem.lower()):
        if only and source.stem not in only:
            continue
        try:
            data = parse_toml(source.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, TomlError) as error:
            print(f"relint: {source.name}: {error}", file=sys.stderr)
            continue
        repos.append(Repo(source.stem, source, data))
    unknown = [name for name in only or () if not (HERE / f"{name}.toml").is_file()]
    return repos, unknown


# --- running the linter --------------------------------------------------------------------------


def run_linter(repo: Repo, snapshot: Path, linter_path: Path, jobs: Optional[int]) -> Dict[str, Any]:
    """Lint the snapshot; returns {"diagnostics": [...], "seconds": float} or {"error": str, ...}."""
    command = [sys.executable, "-m", "torchdet_lint", "--no-cache", "--exit-zero", "--output-format", "json"]
    command += ["--torch-version", TORCH_VERSION]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    command += repo.scope
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(linter_path)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    start = time.perf_counter()
    try:
        process = subprocess.run(command, cwd=str(snapshot), env=env, capture_output=True, text=True, encoding="utf-8")
    except OSError as error:
        return {"error": f"cannot run the linter: {error}", "seconds": 0.0}
    seconds = time.perf_counter() - start
    stderr_tail = "\n".join(process.stderr.strip().splitlines()[-15:])
    try:
        diagnostics = json.loads(process.stdout)
        if not isinstance(diagnostics, list):
            raise ValueError("not a JSON array")
    except ValueError as error:
        message = f"exit status {process.returncode}; no JSON array on stdout ({error})"
        return {"error": message + (f"\n{stderr_tail}" if stderr_tail else ""), "seconds": seconds}
    result: Dict[str, Any] = {"diagnostics": diagnostics, "seconds": seconds}
    if process.returncode != 0:
        result["warning"] = f"exit status {process.returncode}" + (f"\n{stderr_tail}" if stderr_tail else "")
    return result


def _key(diagnostic: Dict[str, Any]) -> Key:
    return (_norm(str(diagnostic.get("path", ""))), int(diagnostic.get("line", 0)), str(diagnostic.get("code", "")))


def _show(diagnostic: Dict[str, Any]) -> str:
    return f"{_show_key(_key(diagnostic))} {diagnostic.get('message', '')}"


def _count_codes(diagnostics: Iterable[Dict[str, Any]]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for diagnostic in diagnostics:
        code = str(diagnostic.get("code", ""))
        counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items()))


COLUMNS = ("diagnostics", "true_present", "true_lost", "false_back", "false_gone", "debatable_present", "unjudged")
HEADINGS = ("diags", "true", "TRUE LOST", "FALSE BACK", "false gone", "debatable", "UNJUDGED")


def evaluate(repo: Repo, diagnostics: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Counts and lists for one repository's diagnostics against its verdicts."""
    present: Dict[Key, List[Dict[str, Any]]] = {}
    for diagnostic in diagnostics:
        present.setdefault(_key(diagnostic), []).append(diagnostic)
    true_lost, false_back, unjudged = [], [], []
    counts = dict.fromkeys(COLUMNS, 0)
    counts["diagnostics"] = len(diagnostics)
    for key, judged in repo.verdicts.items():
        verdict, here = judged["verdict"], key in present
        if verdict == "true":
            counts["true_present" if here else "true_lost"] += 1
            if not here:
                true_lost.append({"path": key[0], "line": key[1], "code": key[2], "reason": judged["reason"]})
        elif verdict == "false":
            counts["false_back" if here else "false_gone"] += 1
            if here:
                false_back.extend(_entry(d, judged) for d in present[key])
        elif here:
            counts["debatable_present"] += 1
    for key, found in present.items():
        if key not in repo.verdicts:
            unjudged.extend(_entry(d) for d in found)
    counts["unjudged"] = len(unjudged)
    return {
        "counts": counts,
        "codes": _count_codes(diagnostics),
        "true_lost": true_lost,
        "false_back": false_back,
        "unjudged": sorted(unjudged, key=lambda e: (e["path"], e["line"], e["code"])),
    }


def _entry(diagnostic: Dict[str, Any], judged: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    path, line, code = _key(diagnostic)
    entry = {"path": path, "line": line, "code": code, "message": str(diagnostic.get("message", ""))}
    if judged is not None:
        entry["reason"] = judged["reason"]
    return entry


def _git_head(path: Path) -> str:
    try:
        process = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    except OSError:
        return ""
    return process.stdout.strip() if process.returncode == 0 else ""


def relint(args: argparse.Namespace, root: Path) -> Dict[str, Any]:
    repos, unknown = load_corpus(args.only)
    linter_path = Path(args.linter_path).resolve()
    save = Path(args.save) if args.save else None
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
    report: Dict[str, Any] = {
        "root": str(root),
        "linter_path": str(linter_path),
        "linter_commit": _git_head(linter_path),
        "torch_version": TORCH_VERSION,
        "unknown": unknown,
        "repos": {},
    }
    for repo in repos:
        snapshot = root / repo.name
        entry: Dict[str, Any] = {"commit": repo.commit, "scope": repo.scope, "judged_on": repo.judged_on}
        if repo.problems:
            entry["problems"] = repo.problems
        report["repos"][repo.name] = entry
        if not snapshot.is_dir():
            entry["status"] = "absent"
            continue
        if not args.json:
            print(f"relint: {repo.name} ...", file=sys.stderr, flush=True)
        result = _saved_result(Path(args.saved), repo) if args.saved else run_linter(repo, snapshot, linter_path, args.jobs)
        entry["seconds"] = round(result["seconds"], 2)
        if "error" in result:
            entry["status"] = "error"
            entry["error"] = result["error"]
            continue
        entry["status"] = "linted"
        if "warning" in result:
            entry["warning"] = result["warning"]
        entry.update(evaluate(repo, result["diagnostics"]))
        if save is not None:
            with open(save / f"{repo.name}.json", "w", encoding="utf-8") as handle:
                json.dump(result["diagnostics"], handle, indent=2)
                handle.write("\n")
    linted = [e for e in report["repos"].values() if e["status"] == "linted"]
    report["totals"] = {column: sum(e["counts"][column] for e in linted) for column in COLUMNS}
    codes: Dict[str, int] = {}
    for e in linted:
        for code, count in e["codes"].items():
            codes[code] = codes.get(code, 0) + count
    report["codes"] = dict(sorted(codes.items()))
    if save is not None:
        meta = {k: report[k] for k in ("linter_path", "linter_commit", "torch_version")}
        meta["repos"] = {
            name: {k: e.get(k) for k in ("commit", "scope", "status", "seconds")} for name, e in report["repos"].items()
        }
        with open(save / "_meta.json", "w", encoding="utf-8") as handle:
            json.dump(meta, handle, indent=2)
            handle.write("\n")
    return report


def print_report(report: Dict[str, Any]) -> None:
    print(f"linter: {report['linter_path']} {report['linter_commit']}  (--torch-version {report['torch_version']})")
    for name in report["unknown"]:
        print(f"no corpus file for {name}")
    width = max([len(name) for name in report["repos"]] + [10])
    print(f"{'repository':<{width}}  " + "  ".join(f"{h:>10}" for h in HEADINGS) + f"  {'seconds':>8}")
    for name, entry in report["repos"].items():
        if entry["status"] == "linted":
            cells = "  ".join(f"{entry['counts'][c]:>10}" for c in COLUMNS)
            print(f"{name:<{width}}  {cells}  {entry['seconds']:>8.1f}")
        elif entry["status"] == "error":
            print(f"{name:<{width}}  ERROR after {entry['seconds']:.1f} s (see below)")
        else:
            print(f"{name:<{width}}  absent")
    print(f"{'TOTAL':<{width}}  " + "  ".join(f"{report['totals'][c]:>10}" for c in COLUMNS))
    print()
    print("per code (present now): " + (", ".join(f"{code} {count}" for code, count in report["codes"].items()) or "none"))
    for name, entry in report["repos"].items():
        lines = [f"  problem in the corpus file: {p}" for p in entry.get("problems", [])]
        if entry["status"] == "error":
            lines += ["  " + line for line in entry["error"].splitlines()]
        if entry.get("warning"):
            lines += ["  warning: " + line for line in entry["warning"].splitlines()]
        if entry["status"] == "linted":
            for title, field in (("TRUE LOST", "true_lost"), ("FALSE BACK", "false_back"), ("UNJUDGED", "unjudged")):
                for item in entry[field]:
                    text = f"{item['path']}:{item['line']} {item['code']} {item.get('message', '')}".rstrip()
                    if item.get("reason"):
                        text += f"  [judged: {item['reason']}]"
                    lines.append(f"  {title:<10} {text}")
        if lines:
            print()
            print(f"{name} ({entry['commit'][:12]}):")
            print("\n".join(lines))


# --- comparing two saved runs --------------------------------------------------------------------


def _saved_result(directory: Path, repo: Repo) -> Dict[str, Any]:
    """A repository's diagnostics as `--save` kept them, in `run_linter`'s shape."""
    path = directory / f"{repo.name}.json"
    seconds = json.loads((directory / "_meta.json").read_text(encoding="utf-8")).get("repos", {}).get(repo.name, {})
    try:
        diagnostics = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return {"seconds": 0.0, "error": f"{path}: {error}"}
    return {"seconds": seconds.get("seconds") or 0.0, "diagnostics": diagnostics}


def _load_run(directory: Path) -> Dict[str, List[Dict[str, Any]]]:
    runs = {}
    for path in sorted(directory.glob("*.json")):
        if path.name.startswith("_"):
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as error:
            print(f"relint: {path}: {error}", file=sys.stderr)
            continue
        if isinstance(data, list):
            runs[path.stem] = data
    return runs


def compare(old_dir: Path, new_dir: Path, only: Optional[Sequence[str]]) -> Dict[str, Any]:
    old, new = _load_run(old_dir), _load_run(new_dir)
    repos = {repo.name: repo for repo in load_corpus(None)[0]}
    names = sorted(set(old) | set(new), key=str.lower)
    if only:
        names = [name for name in names if name in only]
    report: Dict[str, Any] = {"old": str(old_dir), "new": str(new_dir), "repos": {}}
    total_before: Dict[str, int] = {}
    total_after: Dict[str, int] = {}
    for name in names:
        verdicts = repos[name].verdicts if name in repos else {}
        entry: Dict[str, Any] = {}
        report["repos"][name] = entry
        if name not in old or name not in new:
            entry["status"] = "only in old" if name in old else "only in new"
            continue
        entry["status"] = "compared"
        before, after = _count_codes(old[name]), _count_codes(new[name])
        for totals, counts in ((total_before, before), (total_after, after)):
            for code, count in counts.items():
                totals[code] = totals.get(code, 0) + count
        entry["before"], entry["after"] = len(old[name]), len(new[name])
        entry["codes"] = {code: [before.get(code, 0), after.get(code, 0)] for code in sorted(set(before) | set(after))}
        old_keys = {_key(d) for d in old[name]}
        new_keys = {_key(d) for d in new[name]}
        for field, source, other in (("removed", old[name], new_keys), ("added", new[name], old_keys)):
            items = []
            for diagnostic in source:
                if _key(diagnostic) in other:
                    continue
                item = _entry(diagnostic)
                judged = verdicts.get(_key(diagnostic))
                item["verdict"] = judged["verdict"] if judged else None
                items.append(item)
            entry[field] = sorted(items, key=lambda e: (e["path"], e["line"], e["code"]))
    codes = sorted(set(total_before) | set(total_after))
    report["codes"] = {code: [total_before.get(code, 0), total_after.get(code, 0)] for code in codes}
    return report


def print_compare(report: Dict[str, Any]) -> None:
    print(f"old: {report['old']}\nnew: {report['new']}")
    width = max([len(name) for name in report["repos"]] + [10])
    for name, entry in report["repos"].items():
        if entry["status"] != "compared":
            print(f"{name:<{width}}  {entry['status']}")
            continue
        changed = ", ".join(f"{code} {a}->{b}" for code, (a, b) in entry["codes"].items() if a != b)
        mark = "" if entry["removed"] or entry["added"] else "  (same)"
        print(f"{name:<{width}}  {entry['before']:>5} -> {entry['after']:<5}{mark}  {changed}")
    print()
    print("per code: " + ", ".join(f"{code} {a}->{b}" for code, (a, b) in report["codes"].items()))
    for name, entry in report["repos"].items():
        if entry["status"] != "compared" or not (entry["removed"] or entry["added"]):
            continue
        print()
        print(f"{name}:")
        for field, sign in (("removed", "-"), ("added", "+")):
            for item in entry[field]:
                verdict = f"[{item['verdict']}] " if item["verdict"] else "[unjudged] "
                print(f"  {sign} {verdict}{item['path']}:{item['line']} {item['code']} {item['message']}")


# --- command line --------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", help=f"directory holding the snapshots, one per repository (default: ${ROOT_ENV})")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these repositories only")
    parser.add_argument("--save", metavar="DIR", help="write each repository's raw JSON output to DIR/<name>.json")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--linter-path", default=str(REPOSITORY), help="checkout of torchdet-lint to run (default: this one)")
    parser.add_argument("--jobs", "-j", type=int, help="passed to the linter as --jobs (default: the linter's own)")
    parser.add_argument("--saved", metavar="DIR", help="report on a run kept with --save instead of linting")
    parser.add_argument("--compare", nargs=2, metavar=("OLD_DIR", "NEW_DIR"), help="compare two saved runs; lint nothing")
    args = parser.parse_args(argv)

    if args.compare:
        old_dir, new_dir = (Path(d) for d in args.compare)
        for directory in (old_dir, new_dir):
            if not directory.is_dir():
                parser.error(f"--compare: {directory} is not a directory")
        report = compare(old_dir, new_dir, args.only)
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print_compare(report)
        return 0

    root_text = args.root or os.environ.get(ROOT_ENV)
    if not root_text:
        parser.error(f"say where the snapshots are: --root DIR, or the environment variable {ROOT_ENV}")
    root = Path(root_text).expanduser().resolve()
    if not root.is_dir():
        parser.error(f"the snapshot root {root} is not a directory")
    if args.saved and not (Path(args.saved) / "_meta.json").is_file():
        parser.error(f"--saved: {args.saved} holds no run kept with --save")
    if not (Path(args.linter_path) / "torchdet_lint").is_dir():
        parser.error(f"--linter-path {args.linter_path} holds no torchdet_lint package")
    report = relint(args, root)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the output piped into `head`
        sys.stderr.close()
        sys.exit(0)
