"""The fixer: applies the fixes of the chosen applicability, re-lints (file pass
for the changed texts, project phase over every summary) and repeats until
nothing changes; then writes the changed files atomically, or renders a diff.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import hashlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from torchdet_lint.core.diagnostics import (
    PARSE_ERROR_CODE,
    Applicability,
    Diagnostic,
    Edit,
    Fix,
    sort_diagnostics,
)
from torchdet_lint.core.source import SourceText, encode_source
from torchdet_lint.engine.discovery import SourceFile
from torchdet_lint.engine.file_pass import FileResult, RunOptions
from torchdet_lint.engine.project_phase import ProjectContext
from torchdet_lint.engine.runner import RunResult, lint_text, run

# Ruff's bound: fixes that keep producing new fixes are a bug in a rule, and
# a run must end anyway.
MAX_ITERATIONS = 100
_BARE_LF_RE = re.compile(r"(?<!\r)\n")
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")  # git's notion of a line: "\n"-terminated only


# -- applying one round of fixes to one text ----------------------------------------


def applicable(fix: Optional[Fix], unsafe: bool) -> bool:
    return fix is not None and bool(fix.edits) and (fix.applicability == Applicability.SAFE or unsafe)


def _conflict(new: Edit, old: Edit) -> bool:
    """Whether two edits of different fixes cannot be applied in the same round.

    Overlapping replacements conflict; so do two different insertions at one
    offset (their order would be a guess) and an insertion at or inside the
    bounds of a replacement (the same guess). Touching replacements do not.
    """
    new_inserts, old_inserts = new.start == new.end, old.start == old.end
    if new_inserts and old_inserts:
        return new.start == old.start
    if new_inserts:
        return old.start <= new.start <= old.end
    if old_inserts:
        return new.start <= old.start <= new.end
    return new.start < old.end and old.start < new.end


def _valid_edits(edits: Sequence[Edit], length: int) -> bool:
    """A fix's own edits lie inside the text and do not overlap one another."""
    previous_end = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < previous_end or edit.start > edit.end or edit.end > length:
            return False
        previous_end = edit.end
    return True


def _with_newline(edit: Edit, newline: str) -> Edit:
    """Fix text is written with "\\n"; a CRLF file gets CRLF, so line endings stay uniform."""
    if newline == "\r\n" and "\n" in edit.content:
        return Edit(edit.start, edit.end, _BARE_LF_RE.sub("\r\n", edit.content))
    return edit


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def apply_fixes(text: str, diagnostics: Sequence[Diagnostic]) -> Tuple[str, List[Diagnostic], List[Edit]]:
    """Apply the fixes of `diagnostics` that do not conflict: (new text, diagnostics fixed, edits applied).

    Fixes are taken in source order; one that conflicts with an accepted fix
    waits for the next round (after the re-lint, its offsets are fresh). An
    edit identical to an accepted one (the same import, the same `False`
    from two rules) is applied once and satisfies both fixes.
    """
    newline = newline_of(text)
    candidates = sorted(
        (d for d in diagnostics if d.fix is not None and d.fix.edits),
        key=lambda d: (min(e.start for e in d.fix.edits), d.code, d.start_offset),
    )
    accepted: List[Edit] = []
    accepted_set = set()
    fixed: List[Diagnostic] = []
    for diagnostic in candidates:
        edits = [_with_newline(edit, newline) for edit in diagnostic.fix.edits]
        if not _valid_edits(edits, len(text)):
            continue  # a broken fix is never applied; the diagnostic stays
        new_edits = [edit for edit in edits if edit not in accepted_set]
        if any(_conflict(new, old) for new in new_edits for old in accepted):
            continue
        accepted.extend(new_edits)
        accepted_set.update(new_edits)
        fixed.append(diagnostic)
    # Stable sort: insertions sort before a replacement starting at the same
    # offset; within one fix, the fix's own order is kept.
    accepted.sort(key=lambda e: (e.start, e.end))
    pieces = []
    position = 0
    for edit in accepted:
        pieces.append(text[position : edit.start])
        pieces.append(edit.content)
        position = edit.end
    pieces.append(text[position:])
    return "".join(pieces), fixed, accepted


# -- where the edits went: original <-> fixed coordinates ----------------------------


class TouchedRegions:
    """The parts of a text that fixes replaced, in original and current coordinates.

    Each region is [original start, original end, current start, current end];
    the text between regions is, by construction, the same in both texts.
    Rounds of edits are folded in as they are applied, so the fixture tests
    can check that nothing outside the regions changed.
    """

    def __init__(self) -> None:
        self.regions: List[List[int]] = []

    def apply(self, edits: Sequence[Edit]) -> None:
        # Back to front: an edit never shifts the coordinates of the ones before it.
        for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            self._apply_one(edit)

    def _apply_one(self, edit: Edit) -> None:
        delta = len(edit.content) - (edit.end - edit.start)
        touching = [i for i, r in enumerate(self.regions) if r[2] <= edit.end and r[3] >= edit.start]
        if touching:
            first, last = self.regions[touching[0]], self.regions[touching[-1]]
            original_start = first[0] - max(0, first[2] - edit.start)
            original_end = last[1] + max(0, edit.end - last[3])
            current_start = min(first[2], edit.start)
            current_end = max(last[3], edit.end) + delta
            del self.regions[touching[0] : touching[-1] + 1]
            insert_at = touching[0]
        else:
            insert_at = sum(1 for r in self.regions if r[3] < edit.start)
            before = self.regions[insert_at - 1] if insert_at else None
            original_start = edit.start - before[3] + before[1] if before else edit.start
            original_end = original_start + (edit.end - edit.start)
            current_start, current_end = edit.start, edit.end + delta
        for region in self.regions[insert_at:]:
            region[2] += delta
            region[3] += delta
        self.regions.insert(insert_at, [original_start, original_end, current_start, current_end])

    def original_spans(self) -> List[Tuple[int, int]]:
        return [(r[0], r[1]) for r in self.regions]

    def current_spans(self) -> List[Tuple[int, int]]:
        return [(r[2], r[3]) for r in self.regions]


# -- the fix loop over a set of files ------------------------------------------------


@dataclass(frozen=True)
class AppliedFix:
    path: str
    code: str
    name: str
    title: str
    applicability: str
    line: int  # of the diagnostic, in the text it was found in


@dataclass
class FileFixState:
    """One file being fixed: its original source, its current text, what was done.

    `text` is the file's whole text (a notebook's JSON). Edits refer to the
    code the rules saw: the same text for a Python file, the joined code
    cells for a notebook (written back through `Notebook.apply_edits`).
    """

    file: object  # discovery.SourceFile
    original: SourceText  # the file as read (a notebook's raw JSON)
    original_result: FileResult
    text: str = ""
    regions: Optional[TouchedRegions] = None  # Python files: where the edits went
    seen: set = field(default_factory=set)
    done: bool = False  # no more fixing: failed or cycling
    error: Optional[str] = None
    _original_ast_ok: Optional[bool] = None

    @property
    def changed(self) -> bool:
        return self.text != self.original.text

    @property
    def is_notebook(self) -> bool:
        return self.regions is None

    def original_ast_ok(self) -> bool:
        if self._original_ast_ok is None:
            self._original_ast_ok = _ast_error(_code_of(self.original_result)) is None
        return self._original_ast_ok


def _code_of(result: FileResult) -> str:
    """The text a file's edits refer to."""
    notebook = getattr(result.source, "notebook", None)
    return notebook.code if notebook is not None else result.source.text


def _ast_error(text: str) -> Optional[str]:
    try:
        ast.parse(text)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except (ValueError, RecursionError, MemoryError) as error:
        return str(error) or type(error).__name__
    return None


def _text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass
class FixReport:
    """What a fix run did; `result` is the run as it stands after fixing."""

    result: object  # runner.RunResult
    remaining: List[Diagnostic]
    applied: List[AppliedFix]
    states: Dict[str, FileFixState]
    errors: List[str] = field(default_factory=list)
    written: List[str] = field(default_factory=list)

    @property
    def fixed_count(self) -> int:
        return len(self.applied)

    @property
    def changed(self) -> List[str]:
        """Display paths of the files whose text the fixes changed."""
        return [path for path, state in sorted(self.states.items()) if state.changed and state.error is None]

    def new_text(self, path: str) -> str:
        return self.states[path].text

    def diff_text(self) -> str:
        return "".join(unified_diff(self.states[path].original, self.states[path].text, path) for path in self.changed)

    def applied_text(self) -> str:
        if not self.applied:
            return ""
        count = len(self.applied)
        lines = [f"Fixed {count} error{'s' if count != 1 else ''}:"]
        by_path: Dict[str, Dict[Tuple[str, str], int]] = {}
        for fix in self.applied:
            codes = by_path.setdefault(fix.path, {})
            codes[(fix.code, fix.name)] = codes.get((fix.code, fix.name), 0) + 1
        for path in sorted(by_path):
            lines.append(f"- {path}:")
            for (code, name), number in sorted(by_path[path].items()):
                lines.append(f"    {number} \u00d7 {code} ({name})")
        return "\n".join(lines)


class _FixSession:
    """The loop: fix every file that has applicable fixes, re-lint, repeat."""

    def __init__(
        self,
        results: Sequence[FileResult],
        files: Sequence,
        options: RunOptions,
        unsafe: bool,
        jobs: int,
        context: Optional[ProjectContext] = None,
    ) -> None:
        self.files = list(files)
        self.options = options
        self.context = context  # the project's unnamed files: analysed, never fixed
        self.unsafe = unsafe
        self.jobs = jobs
        self.results: Dict[str, FileResult] = {r.path: r for r in results}
        self.order = [r.path for r in results]
        self.states: Dict[str, FileFixState] = {}
        self.applied: List[AppliedFix] = []
        for file in self.files:
            result = self.results.get(file.display)
            if result is None or result.source is None:
                continue  # unreadable: nothing to fix
            raw = getattr(result.source, "raw", None)
            if raw is not None and getattr(result.source, "notebook", None) is None:
                continue
            original = raw if raw is not None else result.source
            state = FileFixState(file, original, result, text=original.text)
            if raw is None:
                state.regions = TouchedRegions()
            state.seen.add(_text_hash(state.text))
            self.states[file.display] = state

    def run(self, diagnostics: List[Diagnostic]) -> List[Diagnostic]:
        for _ in range(MAX_ITERATIONS):
            changed = self._fix_round(diagnostics)
            if not changed:
                return diagnostics
            diagnostics = self._relint(changed)
        unfinished = []
        for state in self.states.values():
            if not state.done and any(applicable(d.fix, self.unsafe) for d in diagnostics if d.path == state.file.display):
                state.error = f"{state.file.display}: fixes did not converge after {MAX_ITERATIONS} rounds; file left unchanged"
                self._revert(state)
                unfinished.append(state)
        return self._relint(unfinished)

    def _fix_round(self, diagnostics: Sequence[Diagnostic]) -> List[FileFixState]:
        by_path: Dict[str, List[Diagnostic]] = {}
        for diagnostic in diagnostics:
            if applicable(diagnostic.fix, self.unsafe):
                by_path.setdefault(diagnostic.path, []).append(diagnostic)
        changed = []
        for path, fixable in sorted(by_path.items()):
            state = self.states.get(path)
            if state is None or state.done:
                continue
            code = _code_of(self.results[path])
            new_code, fixed, edits = apply_fixes(code, fixable)
            if new_code == code:
                continue  # the fixes change nothing here: nothing more will happen
            problem = _ast_error(new_code) if state.original_ast_ok() else None
            if problem is not None:
                self._fail(state, f"a fix made the file invalid Python ({problem})", fixed)
                changed.append(state)
                continue
            if state.is_notebook:
                try:
                    new_text = self.results[path].source.notebook.apply_edits(edits)
                except ValueError as error:
                    self._fail(state, f"a fix cannot be written into the notebook ({error})", fixed)
                    changed.append(state)
                    continue
            else:
                new_text = new_code
            try:
                new_text.encode(state.original.encoding)
            except UnicodeEncodeError as error:
                reason = f"a fix inserts text the file's encoding ({state.original.encoding}) cannot hold ({error.reason})"
                self._fail(state, reason, fixed)
                changed.append(state)
                continue
            digest = _text_hash(new_text)
            if digest in state.seen:
                state.error = f"{path}: fixes undo each other ({_codes(fixed)}); file left unchanged"
                self._revert(state)
                changed.append(state)
                continue
            state.seen.add(digest)
            if state.regions is not None:
                state.regions.apply(edits)
            state.text = new_text
            self.applied.extend(AppliedFix(path, d.code, d.name, d.fix.title, d.fix.applicability.value, d.line) for d in fixed)
            changed.append(state)
        return changed

    def _fail(self, state: FileFixState, reason: str, fixed: Sequence[Diagnostic]) -> None:
        state.error = f"{state.file.display}: {reason}; fixes by {_codes(fixed)}; file left unchanged"
        self._revert(state)

    def _revert(self, state: FileFixState) -> None:
        path = state.file.display
        self.applied = [fix for fix in self.applied if fix.path != path]
        state.text = state.original.text
        if state.regions is not None:
            state.regions = TouchedRegions()
        state.done = True

    def _relint(self, changed: Sequence[FileFixState]) -> List[Diagnostic]:
        """The named files linted again inside their project: the changed texts, and the
        results of the files this round left alone."""
        texts: Dict[str, object] = {path: self.results[path] for path in self.order}
        fresh = []
        for state in changed:
            if state.done and state.error is not None:
                texts[state.file.display] = state.original_result
            else:
                texts[state.file.display] = SourceText(state.text, state.original.encoding, state.original.bom)
                fresh.append(state)
        linted = self._lint(texts)
        results = {result.path: result for result in linted.files}
        broken = False
        for state in fresh:
            result = results[state.file.display]
            parse_errors = [d for d in result.diagnostics if d.code == PARSE_ERROR_CODE]
            if parse_errors and not result.parsed:
                error = parse_errors[0]
                self._fail(state, f"a fix made the file unparsable (line {error.line}: {error.message})", [])
                texts[state.file.display] = state.original_result
                broken = True
        if broken:  # the project phase again, over the files as they stand
            linted = self._lint(texts)
        self.results = {result.path: result for result in linted.files}
        return linted.diagnostics

    def _lint(self, texts: Dict[str, object]) -> RunResult:
        return run(self.files, self.options, jobs=self.jobs, context=self.context, texts=texts)

    def errors(self) -> List[str]:
        return [state.error for _, state in sorted(self.states.items()) if state.error]


def _codes(fixed: Iterable[Diagnostic]) -> str:
    codes = sorted({d.code for d in fixed})
    return ", ".join(codes) if codes else "the previous round"


# -- entry points --------------------------------------------------------------------


def fix_run(
    result,
    unsafe: Optional[bool] = None,
    write: bool = True,
    jobs: int = 1,
    roots: Optional[Sequence[Path]] = None,
) -> FixReport:
    """Fix the named files of a run (`runner.run` or `run_scopes`); write the changed
    files unless `write` is false. Each project is fixed with its own settings, and
    its project phase sees its unnamed files, which are never changed.

    `unsafe` (None: each project's `unsafe-fixes`) also applies the unsafe fixes.
    `roots` are the real paths of the linted tree (the directories named, and
    the directories of the files named): a symlink whose target lies outside
    them is never written through.
    """
    report = FixReport(result, [], [], {})
    fixed_projects = []
    for project in result.projects:
        allow_unsafe = bool(project.options.settings.unsafe_fixes) if unsafe is None else unsafe
        session = _FixSession(project.results, project.files, project.options, allow_unsafe, jobs, project.context)
        paths = {r.path for r in project.results}
        remaining = session.run([d for d in result.diagnostics if d.path in paths])
        report.remaining.extend(remaining)
        report.applied.extend(session.applied)
        report.states.update(session.states)
        report.errors.extend(session.errors())
        fixed_projects.append(dataclasses.replace(project, results=[session.results[path] for path in session.order]))
    report.remaining = sort_diagnostics(report.remaining)
    report.result = RunResult(
        [r for project in fixed_projects for r in project.results], report.remaining, result.timings, fixed_projects
    )
    if write:
        for path in report.changed:
            state = report.states[path]
            outside = _outside_roots(state.file.path, roots)
            if outside:
                report.errors.append(f"{path}: not written: it links to {outside}, outside the linted tree")
                state.error = "outside the linted tree"
                continue
            data, expected = encode_source(state.original, state.text), encode_source(state.original, state.original.text)
            try:
                write_atomically(state.file.path, data, expected=expected)
            except (OSError, FileChangedError) as error:
                report.errors.append(f"{path}: not written: {error}")
                state.error = str(error)
            else:
                report.written.append(path)
    return report


def _outside_roots(path: Path, roots: Optional[Sequence[Path]]) -> Optional[str]:
    """The real path of `path` when it lies outside every root, else None."""
    if roots is None:
        return None
    target = Path(os.path.realpath(path))
    for root in roots:
        try:
            target.relative_to(root)
            return None
        except ValueError:
            continue
    return str(target)


def linted_roots(paths: Sequence[str], cwd: Optional[Path] = None) -> List[Path]:
    """The real directories a run covers: each directory named, and the directory of each file named."""
    cwd = cwd or Path.cwd()
    roots = []
    for raw in paths:
        path = Path(raw) if Path(raw).is_absolute() else cwd / raw
        directory = path if path.is_dir() and not path.is_symlink() else Path(os.path.abspath(path)).parent
        roots.append(Path(os.path.realpath(directory)))
    return roots


def fix_text(
    source: SourceText,
    path: Path,
    display: str,
    options: RunOptions,
    unsafe: bool = False,
    on_error: Optional[Callable[[str], None]] = None,
    context: Optional[ProjectContext] = None,
) -> Tuple[bytes, List[Diagnostic], int]:
    """Fix one in-memory source (standard input): (fixed bytes, diagnostics left, fixes applied).

    A fix that breaks the file leaves the source as it was; the reason goes
    to `on_error` (standard error by default).
    """
    file = SourceFile(path, display, True)
    # Standard input names a file that may exist; its text is the one given.
    first = lint_text(source, file, options, context)
    session = _FixSession(first.files, [file], options, unsafe, jobs=1, context=context)
    remaining = session.run(first.diagnostics)
    for message in session.errors():
        (on_error or _print_error)(message)
    state = session.states.get(display)
    text = state.text if state is not None else source.text
    return encode_source(source, text), remaining, len(session.applied)


def _print_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


# -- output: diffs and atomic writes -------------------------------------------------


def unified_diff(original: SourceText, new_text: str, path: str) -> str:
    """A unified diff that `git apply` and `patch -p1` accept, line endings and BOM kept."""
    old_text = original.text
    if original.bom:  # the BOM is part of the first line's bytes on disk
        old_text, new_text = "\ufeff" + old_text, "\ufeff" + new_text
    name = Path(path).as_posix()
    lines = difflib.unified_diff(
        _LINE_RE.findall(old_text),
        _LINE_RE.findall(new_text),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
        lineterm="\n",
    )
    out = []
    for line in lines:
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


class FileChangedError(Exception):
    """The file on disk is no longer the text that was fixed."""


def write_atomically(path: Path, data: bytes, expected: Optional[bytes] = None) -> None:
    """Replace the file's bytes through a temporary file in the same directory, mode kept.

    With `expected`, a file that changed on disk since it was read is not
    overwritten (an editor saved it meanwhile).
    """
    target = Path(os.path.realpath(path))  # write through a symlink, keep the link
    if expected is not None:
        with open(target, "rb") as handle:
            current = handle.read()
        if current == data:
            return  # already written (the same file reached through a symlink too)
        if current != expected:
            raise FileChangedError("the file changed on disk while it was being fixed")
    mode = os.stat(target).st_mode & 0o7777
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tdl-tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
