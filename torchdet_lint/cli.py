"""The command line: `torchdet-lint [check] PATH...`, `report`, `rule`, `rules`, `server`,
`clean`, `version`. A thin face: the work is in the engine's modules.

Exit status: 0 nothing left, 1 diagnostics left (or a diff), 2 usage,
config or internal error. Diagnostics go to stdout, the rest to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import traceback
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from torchdet_lint import __version__
from torchdet_lint.core.startup import cached_dataclass_code

# What every check needs is imported here, inside the start-up cache, even the
# modules used only by functions below: defining LibCST's node classes is most of a
# one-file run's time (see core/startup.py). The rules are not among them: the
# registry imports a rule's module when a file holds its words (see checks/).
with cached_dataclass_code():
    import torchdet_lint.checks  # noqa: F401 - the registry (the rule index, no rule module)
    import torchdet_lint.engine.project_phase  # noqa: F401
    import torchdet_lint.engine.runner  # noqa: F401
    import torchdet_lint.output.render_context  # noqa: F401
    from torchdet_lint.core.catalog import newest_version
    from torchdet_lint.engine.config import (
        ConfigError,
        Settings,
        parse_inline_override,
        parse_per_file_ignores,
        selected_codes,
        target_torch_version,
        torch_version_origin,
        validate_selectors,
        with_overrides,
        with_parsed,
    )
    from torchdet_lint.engine.discovery import display_path
    from torchdet_lint.engine.workspace import Workspace
    from torchdet_lint.output import FORMATS, TEXT_FORMATS

EXIT_OK, EXIT_FOUND, EXIT_ERROR = 0, 1, 2
# The subcommands, as `--help` lists them.
SUBCOMMANDS = {
    "check": "lint the paths (the default: `torchdet-lint PATH` is `torchdet-lint check PATH`)",
    "report": "will each training entry point reproduce? one row per entry point",
    "rule": "a rule's documentation (by code or name; --all for every rule)",
    "rules": "the table of every rule",
    "server": "the language server on standard input/output (editors)",
    "clean": "remove the result caches (.torchdet_lint_cache/) under the paths",
    "version": "the version of torchdet-lint",
}


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as the contract says
        raise UsageError(message)


def _codes(value: str) -> List[str]:
    return [part.strip().upper() for part in value.split(",") if part.strip()]


def _epilog() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    rows = "".join(f"  {name.ljust(width)}  {text}\n" for name, text in SUBCOMMANDS.items())
    return f"commands:\n{rows}\n`torchdet-lint COMMAND --help` shows a command's options."


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="torchdet-lint",
        usage="torchdet-lint [check] [options] [PATH ...]\n       torchdet-lint {report,rule,rules,server,clean,version} ...",
        description="Find and fix what makes PyTorch training runs differ.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or directories to lint (default: .); - for standard input"
    )
    parser.add_argument("--fix", action="store_true", default=None, help="apply safe fixes")
    parser.add_argument("--no-fix", dest="fix", action="store_false")
    parser.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply (and show) unsafe fixes")
    parser.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    parser.add_argument("--show-fixes", action="store_true", help="list the fixes applied")
    parser.add_argument("--exit-non-zero-on-fix", action="store_true", help="exit 1 when a fix was applied")
    parser.add_argument("--add-noqa", action="store_true", help="add a `# noqa: CODE` to each line with findings")
    parser.add_argument("--watch", "-w", action="store_true", help="lint again whenever a file changes")
    parser.add_argument("--select", type=_codes, help="rule codes or prefixes to enable (replaces the selection)")
    parser.add_argument("--extend-select", type=_codes, default=[], help="rule codes or prefixes to add")
    parser.add_argument("--ignore", type=_codes, default=[], help="rule codes or prefixes to disable")
    parser.add_argument("--extend-ignore", type=_codes, default=[], help="the same as --ignore (as Ruff's)")
    parser.add_argument(
        "--per-file-ignores",
        action="append",
        default=None,
        metavar="GLOB:CODES",
        help="codes to ignore in the files matching GLOB (replaces the config's; repeatable)",
    )
    parser.add_argument("--fixable", type=_codes, help="rule codes or prefixes whose fixes may be applied (default: all)")
    parser.add_argument("--unfixable", type=_codes, default=[], help="rule codes or prefixes whose fixes are never applied")
    parser.add_argument("--exclude", type=_patterns, help="path patterns to exclude (replaces the config's `exclude`)")
    parser.add_argument("--extend-exclude", type=_patterns, default=[], help="path patterns to exclude, besides the config's")
    parser.add_argument("--profile", choices=("reproducible", "strict", "performance"))
    parser.add_argument("--output-format", choices=FORMATS, default=None)
    parser.add_argument("--output-file", "-o", type=Path, help="write the diagnostics to this file instead of standard output")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when diagnostics are left")
    parser.add_argument("--statistics", action="store_true", help="count diagnostics per rule")
    parser.add_argument("--show-settings", action="store_true", help="print the settings in force for each project, lint nothing")
    parser.add_argument("--show-files", action="store_true", help="print the files that would be linted, lint nothing")
    _add_config_option(parser)
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--stdin-filename", help="read the source from standard input and report it under this name")
    parser.add_argument("--force-exclude", action="store_true", help="apply excludes to paths named explicitly too")
    parser.add_argument("--torch-version", help="target torch version (overrides config and the installed torch)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print diagnostics only")
    parser.add_argument("--verbose", "-v", action="store_true", help="say more on standard error")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("--version", action="version", version=f"torchdet-lint {__version__}")
    return parser


def _patterns(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="PATH | KEY=VALUE",
        help="a configuration file to use instead of searching, or a `key = value` in TOML overriding "
        "one setting of every configuration (repeatable), e.g. --config \"torch-version = '2.3'\"",
    )


def _config_arguments(values: Sequence[str]) -> Tuple[Optional[Path], List[dict]]:
    """`--config` values: at most one file, and the inline `KEY=VALUE` overrides (Ruff's rule:
    an existing file is a file; otherwise a value with `=` is TOML)."""
    path: Optional[Path] = None
    inline = []
    for value in values:
        candidate = Path(value)
        if candidate.is_file() or "=" not in value:
            if not candidate.is_file():
                raise ConfigError(f"{value}: config file not found")
            if path is not None:
                raise UsageError(f"--config names two files ({path}, {value}): give one")
            path = candidate
        else:
            inline.append(parse_inline_override(value))
    return path, inline


def _workspace(args) -> Workspace:
    """Where each file's configuration and project come from, with the command line's overrides
    (over the `--config KEY=VALUE` ones, over the configuration files, as in Ruff)."""
    for key in ("select", "ignore", "extend_select", "extend_ignore", "fixable", "unfixable"):
        value = getattr(args, key, None)
        if value:
            validate_selectors(value, f"--{key.replace('_', '-')}")
    config_path, inline = _config_arguments(args.config)
    per_file_ignores = getattr(args, "per_file_ignores", None)
    per_file = tuple(parse_per_file_ignores(value) for value in per_file_ignores) if per_file_ignores is not None else None

    def overrides(settings: Settings) -> Settings:
        for parsed in inline:
            settings = with_parsed(settings, parsed)
        return with_overrides(
            settings,
            select=tuple(args.select) if args.select is not None else None,
            ignore=settings.ignore + tuple(args.ignore) + tuple(getattr(args, "extend_ignore", ())),
            extend_select=settings.extend_select + tuple(args.extend_select),
            profile=args.profile,
            torch_version=args.torch_version,
            unsafe_fixes=args.unsafe_fixes,
            per_file_ignores=per_file,
            fixable=tuple(args.fixable) if getattr(args, "fixable", None) is not None else None,
            unfixable=settings.unfixable + tuple(getattr(args, "unfixable", ())),
            exclude=tuple(args.exclude) if getattr(args, "exclude", None) is not None else None,
            extend_exclude=settings.extend_exclude + tuple(getattr(args, "extend_exclude", ())),
        )

    return Workspace(Path.cwd(), config_path, overrides)


def _torch_version_note(settings_list, quiet: bool) -> None:
    """Once per run: the target torch version is a guess (no config, no installed torch)."""
    if quiet or not any(torch_version_origin(settings) == "newest" for settings in settings_list):
        return
    newest = newest_version()
    print(
        f"note: no `torch-version` configured and no torch installed here: the rules target torch "
        f"{newest[0]}.{newest[1]}, the newest the catalog knows. Set `torch-version` in your configuration "
        "(or --torch-version) to your project's torch.",
        file=sys.stderr,
    )


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _opposing_rules_warning(selected) -> None:
    if "TDL301" in selected and "TDL406" in selected:
        _warn(
            "TDL301 and TDL406 are both selected and pull in opposite directions: TDL301 asks for "
            "cudnn.benchmark = False (reproducibility), TDL406 for True (speed). Both will report."
        )


def run_check(args) -> int:
    from torchdet_lint.engine.runner import default_jobs, run_scopes
    from torchdet_lint.output import formatter
    from torchdet_lint.output.render_context import OutputContext, use_color

    if args.output_file is not None:
        return _to_output_file(args)
    stdin_mode = args.stdin_filename is not None or args.paths == ["-"]
    if stdin_mode and (args.watch or args.add_noqa or args.show_files):
        raise UsageError("--watch, --add-noqa and --show-files work on files, not on standard input")
    if args.watch:
        return _watch(args)
    if args.torch_version is not None:
        from torchdet_lint.engine.config import parse_version

        try:
            parse_version(args.torch_version)
        except ValueError:
            raise ConfigError(f"--torch-version: not a version: {args.torch_version!r}") from None
    workspace = _workspace(args)
    jobs = args.jobs if args.jobs and args.jobs > 0 else default_jobs()
    if stdin_mode:
        directory = Path(os.path.abspath(args.stdin_filename)).parent if args.stdin_filename else workspace.cwd
        root, config = workspace.root_for(directory)
        settings = workspace.settings_for_config(config, root)
        if args.show_settings:
            sys.stdout.write(_settings_text(root, config, settings))
            return EXIT_OK
        _torch_version_note([settings], args.quiet)
        return _run_stdin(args, workspace, args.stdin_filename or "-", jobs)

    paths = args.paths or ["."]
    scopes, missing = workspace.scopes(paths, force_exclude=args.force_exclude)
    for path in missing:
        raise ConfigError(f"{path}: no such file or directory")
    if args.show_files:
        named = sorted((file for scope in scopes for file in scope.named_files), key=_by_display)
        sys.stdout.write("".join(f"{file.display}\n" for file in named))
        return EXIT_OK
    if args.show_settings:
        sys.stdout.write("\n".join(_settings_text(scope.root, scope.config, scope.settings) for scope in scopes))
        return EXIT_OK
    _torch_version_note([scope.settings for scope in scopes], args.quiet)
    _opposing_rules_warning(frozenset().union(*(selected_codes(scope.settings) for scope in scopes)))
    if args.verbose:
        for scope in scopes:
            version = target_torch_version(scope.settings, newest_version())
            print(
                f"torchdet-lint {__version__}: project {scope.root}: {len(scope.named)} of {len(scope.files)} files named, "
                f"target torch {version[0]}.{version[1]}, config {scope.config or '(none)'}, "
                f"{len(selected_codes(scope.settings))} rules",
                file=sys.stderr,
            )
    # Fixing and `--add-noqa` need every file's text and results; a check only needs its diagnostics.
    reuse = not (args.fix or args.diff or args.add_noqa)
    result = run_scopes(scopes, jobs=jobs, use_cache=not args.no_cache, progress=not args.quiet, reuse_results=reuse)
    if args.verbose:
        parsed = sum(1 for f in result.files if f.parsed)
        timings = {name: round(value, 3) for name, value in result.timings.items()}
        cached = sum(1 for f in result.files if f.from_cache)
        timings.update(files=len(result.files), parsed=parsed, skipped=len(result.files) - parsed, from_cache=cached)
        print("timings: " + json.dumps(timings), file=sys.stderr)
    if args.add_noqa:
        return _add_noqa(scopes, result, args)
    unsafe = _unsafe_fixes(args, [scope.settings for scope in scopes])
    diagnostics = result.diagnostics
    fixed_count = 0
    fix_failed = False
    if args.fix or args.diff:
        from torchdet_lint.engine.fixer import fix_run, linted_roots

        report = fix_run(result, unsafe=args.unsafe_fixes, write=not args.diff, jobs=jobs, roots=linted_roots(paths))
        fixed_count = report.fixed_count
        diagnostics = report.remaining
        for message in report.errors:  # a fix that would break a file: not applied, said loudly
            print(f"torchdet-lint: error: {message}", file=sys.stderr)
        if args.diff:
            sys.stdout.write(report.diff_text())
            _would_fix(report.fixed_count, args)
            return EXIT_ERROR if report.errors else (EXIT_FOUND if report.changed else EXIT_OK)
        if args.show_fixes and report.applied:
            print(report.applied_text(), file=sys.stderr)
        result = report.result
        fix_failed = bool(report.errors)

    output_format = args.output_format or "full"
    context = OutputContext(sources=result.sources(), color=use_color(args.color), unsafe_fixes=unsafe)
    if args.statistics:
        sys.stdout.write(_statistics(diagnostics, unsafe, output_format))
    else:
        sys.stdout.write(formatter(output_format)(diagnostics, context))
        if output_format in TEXT_FORMATS and not args.quiet:
            sys.stdout.write(_summary_line(diagnostics, fixed_count, unsafe, args))
    if fix_failed:
        return EXIT_ERROR
    if diagnostics:
        return EXIT_OK if args.exit_zero else EXIT_FOUND
    if fixed_count and args.exit_non_zero_on_fix:
        return EXIT_FOUND
    return EXIT_OK


def _by_display(file) -> str:
    return file.display


def _settings_text(root: Path, config: Optional[Path], settings: Settings) -> str:
    from torchdet_lint.engine.config import describe_settings

    header = f"# project {root}\n# configuration: {config or '(none: the defaults)'}\n"
    return header + describe_settings(settings, newest_version())


def _to_output_file(args) -> int:
    """`-o FILE`: what would go to standard output goes to the file (created or replaced)."""
    import contextlib

    target = args.output_file
    args.output_file = None
    try:
        handle = open(target, "w", encoding="utf-8", newline="")
    except OSError as error:
        raise ConfigError(f"--output-file {target}: {error.strerror or error}") from None
    with handle, contextlib.redirect_stdout(handle):
        return run_check(args)


def _add_noqa(scopes, result, args) -> int:
    """`--add-noqa`: each line with findings gets a `# noqa: CODE`; exit 0 unless a file was left alone."""
    from torchdet_lint.engine.add_noqa import add_noqa
    from torchdet_lint.engine.fixer import write_atomically

    paths = {file.display: file.path for scope in scopes for file in scope.named_files}
    report = add_noqa(result.files, result.diagnostics, lambda display, data: write_atomically(paths[display], data))
    for message in report.errors:
        print(f"torchdet-lint: error: {message}", file=sys.stderr)
    if not args.quiet:
        print(f"Added {report.added} noqa directive{'s' if report.added != 1 else ''}.", file=sys.stderr)
    return EXIT_ERROR if report.errors else EXIT_OK


def _watch(args) -> int:
    """`--watch`: lint, then lint again each time a file of the linted projects (or their
    configuration) changes, until interrupted. A configuration error is shown and waited out."""
    import time

    from torchdet_lint.engine.watch import snapshot, wait_for_change

    args.watch = False

    def files():
        try:
            scopes, _ = _workspace(args).scopes(args.paths or ["."], force_exclude=args.force_exclude)
        except ConfigError:
            scopes = []
        watched = [file.path for scope in scopes for file in scope.files]
        watched += [scope.config for scope in scopes if scope.config is not None]
        return snapshot(watched)

    print("Starting linter in watch mode...", file=sys.stderr, flush=True)
    state = files()
    while True:
        try:
            run_check(args)
        except (ConfigError, UsageError) as error:
            print(f"torchdet-lint: error: {error}", file=sys.stderr)
        sys.stdout.flush()
        print(f"[{time.strftime('%H:%M:%S')}] Watching for file changes.", file=sys.stderr, flush=True)
        state, changed = wait_for_change(files, state)
        shown = ", ".join(display_path(path) for path in changed[:5]) + (", ..." if len(changed) > 5 else "")
        print(f"File change detected: {shown}", file=sys.stderr, flush=True)


def _would_fix(count: int, args) -> None:
    """The `--diff` summary, on stderr after the diff on stdout: stdout is flushed first, so a
    terminal showing both never glues the summary to the diff's last line."""
    sys.stdout.flush()
    if not args.quiet and count:
        print(f"Would fix {count} error{'s' if count != 1 else ''}.", file=sys.stderr)


def _unsafe_fixes(args, settings_list) -> bool:
    """Whether unsafe fixes are on: `--unsafe-fixes`/`--no-unsafe-fixes`, else every project's config says so."""
    if args.unsafe_fixes is not None:
        return bool(args.unsafe_fixes)
    return bool(settings_list) and all(settings.unsafe_fixes for settings in settings_list)


def _summary_line(diagnostics, fixed_count: int, unsafe: bool, args) -> str:
    from torchdet_lint.output.render_context import fixable

    lines = []
    if diagnostics or fixed_count:
        left = len(diagnostics)
        if fixed_count:
            lines.append(
                f"Found {left + fixed_count} error{'s' if left + fixed_count != 1 else ''} "
                f"({fixed_count} fixed, {left} remaining)."
            )
        else:
            lines.append(f"Found {left} error{'s' if left != 1 else ''}.")
        can_fix = sum(1 for d in diagnostics if fixable(d, unsafe))
        hidden = sum(1 for d in diagnostics if d.fix is not None and not fixable(d, unsafe))
        if can_fix and not args.fix:
            lines.append(f"[*] {can_fix} fixable with the `--fix` option.")
        if hidden:
            lines.append(f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option.")
    else:
        lines.append("All checks passed!")
    return "".join(line + "\n" for line in lines)


def _statistics(diagnostics, unsafe: bool, output_format: str) -> str:
    from torchdet_lint.output.render_context import fixable

    counts = {}
    for d in diagnostics:
        entry = counts.setdefault(d.code, {"code": d.code, "name": d.name, "count": 0, "fixable": False})
        entry["count"] += 1
        entry["fixable"] = entry["fixable"] or fixable(d, unsafe)
    rows = sorted(counts.values(), key=lambda e: (-e["count"], e["code"]))
    if output_format == "json":
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(e["count"])) for e in rows), default=1)
    return "".join(f"{str(e['count']).rjust(width)}\t{e['code']}\t{'[*]' if e['fixable'] else '[ ]'} {e['name']}\n" for e in rows)


def _run_stdin(args, workspace: Workspace, filename: str, jobs: int) -> int:
    """Lint standard input as the file `filename`: reported as that file, analysed
    with the rest of its project (its text on disk is not read)."""
    from torchdet_lint.core.diagnostics import error_diagnostic
    from torchdet_lint.core.source import SourceError, decode_source
    from torchdet_lint.engine.discovery import SourceFile
    from torchdet_lint.engine.project_phase import ProjectContext
    from torchdet_lint.engine.runner import first_party_names, lint_text, make_options, project_context
    from torchdet_lint.output import formatter
    from torchdet_lint.output.render_context import OutputContext, use_color

    if filename != "-":
        path = Path(os.path.abspath(filename))
        scope = workspace.scope_of_file(path)
        options = make_options(scope.settings, first_party_names(scope.files))
        context, index = project_context(scope, options, {path}, jobs=jobs, use_cache=not args.no_cache, progress=not args.quiet)
        if index is not None:
            index.save()
        display = filename
    else:  # no file name: the text alone, as a project of its own
        path = workspace.cwd / "-"
        scope = workspace.scope_for(workspace.cwd)
        options, context, display = make_options(scope.settings), ProjectContext(), "-"
    _opposing_rules_warning(options.selected)
    data = sys.stdin.buffer.read()
    try:
        source = decode_source(data)
    except SourceError as error:
        diagnostics = [error_diagnostic(display, str(error))]
        sys.stdout.write(formatter(args.output_format or "full")(diagnostics, OutputContext()))
        return EXIT_OK if args.exit_zero else EXIT_FOUND
    unsafe = _unsafe_fixes(args, [options.settings])
    if args.diff:
        from torchdet_lint.engine.fixer import fix_text, unified_diff

        fixed_text, _, fixed_count = fix_text(source, path, display, options, unsafe=unsafe, context=context)
        new = decode_source(fixed_text).text
        sys.stdout.write(unified_diff(source, new, display) if new != source.text else "")
        _would_fix(fixed_count, args)
        return EXIT_FOUND if new != source.text else EXIT_OK
    if args.fix:
        from torchdet_lint.engine.fixer import fix_text

        fixed_text, remaining, fixed_count = fix_text(source, path, display, options, unsafe=unsafe, context=context)
        sys.stdout.buffer.write(fixed_text)
        if remaining and not args.quiet:
            for d in remaining:
                print(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}", file=sys.stderr)
        if remaining:
            return EXIT_OK if args.exit_zero else EXIT_FOUND
        return EXIT_FOUND if fixed_count and args.exit_non_zero_on_fix else EXIT_OK
    diagnostics = lint_text(source, SourceFile(path, display, True), options, context).diagnostics
    output = OutputContext(sources={display: source}, color=use_color(args.color), unsafe_fixes=unsafe)
    output_format = args.output_format or "full"
    sys.stdout.write(formatter(output_format)(diagnostics, output))
    if output_format in TEXT_FORMATS and not args.quiet:
        sys.stdout.write(_summary_line(diagnostics, 0, unsafe, args))
    if diagnostics:
        return EXIT_OK if args.exit_zero else EXIT_FOUND
    return EXIT_OK


def run_rule(argv: Sequence[str]) -> int:
    """`torchdet-lint rule CODE|NAME` or `rule --all`: rule documentation, as Ruff's `ruff rule`."""
    from torchdet_lint.checks import all_rules
    from torchdet_lint.docs import rule_markdown, rule_metadata

    parser = _Parser(prog="torchdet-lint rule", description="Show a rule's documentation, by code (TDL101) or name.")
    parser.add_argument("rule", nargs="?", metavar="CODE|NAME")
    parser.add_argument("--all", action="store_true", help="every rule's documentation")
    parser.add_argument("--output-format", choices=("text", "json", "full", "concise"), default="text")
    args = parser.parse_args(argv)
    if args.all == (args.rule is not None):
        raise UsageError("give a rule code or name, or --all")
    rules = all_rules()
    if args.all:
        chosen = list(rules.values())
    else:
        by_name = {rule.name: rule for rule in rules.values()}
        rule = rules.get(args.rule.upper()) or by_name.get(args.rule.lower())
        if rule is None:
            raise UsageError(f"unknown rule `{args.rule}` (see `torchdet-lint rules`)")
        chosen = [rule]
    if args.output_format == "json":
        data = [rule_metadata(rule) for rule in chosen]
        print(json.dumps(data if args.all else data[0], indent=2))
    else:
        sys.stdout.write("\n".join(rule_markdown(rule) for rule in chosen))
    return EXIT_OK


def run_clean(argv: Sequence[str]) -> int:
    """`torchdet-lint clean [PATH ...]`: remove the result caches, as `ruff clean`."""
    from torchdet_lint.engine.clean import clean

    parser = _Parser(prog="torchdet-lint clean", description=SUBCOMMANDS["clean"] + " (default: .) and above them.")
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument("--quiet", "-q", action="store_true", help="say nothing")
    args = parser.parse_args(argv)
    roots = [Path(path) for path in args.paths or ["."]]
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"{root}: not a directory")
    for directory in clean(roots):
        if not args.quiet:
            print(f"Removing cache at: {display_path(directory)}", file=sys.stderr)
    return EXIT_OK


def run_version(argv: Sequence[str]) -> int:
    parser = _Parser(prog="torchdet-lint version", description=SUBCOMMANDS["version"])
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    if args.output_format == "json":
        print(json.dumps({"version": __version__}))
    else:
        print(f"torchdet-lint {__version__}")
    return EXIT_OK


def run_rules(argv: Sequence[str]) -> int:
    from torchdet_lint.checks import all_rules
    from torchdet_lint.docs import rule_metadata, rules_table

    parser = _Parser(prog="torchdet-lint rules", description="List every rule.")
    parser.add_argument("--output-format", choices=("text", "json", "full", "concise"), default="text")
    args = parser.parse_args(argv)
    if args.output_format == "json":
        print(json.dumps([rule_metadata(rule) for rule in all_rules().values()], indent=2))
    else:
        sys.stdout.write(rules_table())
    return EXIT_OK


def run_report(argv: Sequence[str]) -> int:
    """`torchdet-lint report [PATHS]`: one scorecard per entry point, from the same run as `check`."""
    from torchdet_lint.engine.runner import default_jobs, run_scopes
    from torchdet_lint.output.render_context import OutputContext, use_color
    from torchdet_lint.report.render import FORMATS as REPORT_FORMATS
    from torchdet_lint.report.render import render_full, render_json, render_markdown
    from torchdet_lint.report.scorecard import REPORT_CODES, scorecards

    parser = _Parser(
        prog="torchdet-lint report", description="Will each training entry point reproduce? One row per entry point."
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .)")
    parser.add_argument("--output-format", choices=REPORT_FORMATS, default="full")
    _add_config_option(parser)
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--force-exclude", action="store_true", help="apply excludes to paths named explicitly too")
    parser.add_argument("--torch-version", help="target torch version (overrides config and the installed torch)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when something is missing")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(list(argv))
    args.select, args.extend_select, args.ignore, args.profile, args.unsafe_fixes = None, [], [], None, None
    workspace = _workspace(args)
    scopes, missing = workspace.scopes(args.paths or ["."], force_exclude=args.force_exclude)
    for path in missing:
        raise ConfigError(f"{path}: no such file or directory")
    _torch_version_note([scope.settings for scope in scopes], args.quiet)
    # A named entry point's columns rest on the findings of every file it reaches: the report
    # lints the whole project (from the cache, mostly) and shows the named files' rows.
    shown = {file.display for scope in scopes for file in scope.named_files}
    for scope in scopes:
        scope.named = {file.path for file in scope.files}
    jobs = args.jobs if args.jobs and args.jobs > 0 else default_jobs()
    result = run_scopes(scopes, jobs=jobs, use_cache=not args.no_cache, progress=not args.quiet, extra_codes=REPORT_CODES)
    cards = []
    for project in result.projects:
        if project.model is not None:
            named = {r.path for r in project.results}
            configured = selected_codes(project.options.settings)
            found = scorecards(project.model, [d for d in result.diagnostics if d.path in named], configured)
            cards.extend(card for card in found if card.path in shown)
    cards.sort(key=lambda card: (card.path, card.line))
    if args.output_format == "json":
        sys.stdout.write(render_json(cards))
    elif args.output_format == "markdown":
        sys.stdout.write(render_markdown(cards))
    else:
        width = shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 100
        sys.stdout.write(render_full(cards, OutputContext(color=use_color(args.color)).style, width))
    if all(card.reproducible for card in cards) or args.exit_zero:
        return EXIT_OK
    return EXIT_FOUND


def run_server(argv: Sequence[str]) -> int:
    try:
        from torchdet_lint.server import main as server_main
    except ImportError as error:
        raise UsageError(f"the language server needs pygls: pip install 'torchdet-lint[server]' ({error})") from None
    return server_main(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {
        "rule": run_rule,
        "rules": run_rules,
        "server": run_server,
        "report": run_report,
        "clean": run_clean,
        "version": run_version,
    }
    try:
        if argv and argv[0] in commands:
            return commands[argv[0]](argv[1:])
        if argv and argv[0] == "check":
            argv = argv[1:]
        args = build_parser().parse_args(argv)
        return run_check(args)
    except UsageError as error:
        print(f"torchdet-lint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except ConfigError as error:
        print(f"torchdet-lint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("torchdet-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as error:  # an internal error: say so in one line, details with --verbose
        print(f"torchdet-lint: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        if "--verbose" in argv or "-v" in argv:
            traceback.print_exc()
        return EXIT_ERROR


def console_main() -> None:
    """The installed command: `main`, then an exit that does not free what the run kept.

    At the end of a run on a large tree the process holds millions of objects (every file's
    summary, diagnostics and source); Python's normal exit frees them one by one, about 3%
    of a cold run on torch's tree. Every file the run writes is written and closed by the
    time `main` returns, so after flushing the output the process ends at once (as mypy
    does). The console script and `python -m torchdet_lint` run this; the tests and
    other hosts call `main` and keep their process.
    """
    code = main()
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler or coverage tool writes its data at a normal exit
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = code or EXIT_ERROR
    os._exit(code)
