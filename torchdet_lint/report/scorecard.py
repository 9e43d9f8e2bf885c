"""The scorecard of each entry point: will this training run reproduce? One
status per check (`ok`, `missing`, `not-needed`) with its evidence, read off
the same run as `check` (its project model and its diagnostics), so the two
agree by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from torchdet_lint.checks.seeding.rank_divergent_order import distributed_setup, draws_reached
from torchdet_lint.checks.seeding.resume_replays_data import resumes
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.source import LineIndex
from torchdet_lint.model.checkpoints import load_node, optimizer_loads
from torchdet_lint.model.project import EntryPoint, Located, Project, Reach
from torchdet_lint.model.summary import Site

OK, MISSING, NOT_NEEDED = "ok", "missing", "not-needed"
# The analysis could not see all the run does (it passes through a class named by a string, a
# command dispatched from configuration): a "never" or "nothing reached" it cannot vouch for.
UNKNOWN = "unknown"
IGNORED = "ignored"  # the rule behind the column is deselected or suppressed: the user's choice
OPT_IN = "opt-in"  # the seeding runs only when an option asks for it; by default the run is unseeded
# What a passing entry point may show: every other status makes `report` exit 1.
PASSING = frozenset({OK, NOT_NEEDED, IGNORED})
CHECKS = (
    "torch-seed",
    "random-seed",
    "numpy-seed",
    "deterministic-mode",
    "cudnn-benchmark-off",
    "cublas-workspace",
    "dataloaders",
    "raising-ops",
    "third-party-kernels",
    "resume-rng-state",
    "hidden-order",
    "compiled-code",
    "eval-dropout",
    "resume-data-position",
    "rank-order",
)
SEED_CHECKS = {"torch-seed": ("TDL001", "torch"), "random-seed": ("TDL002", "random"), "numpy-seed": ("TDL003", "numpy")}
# Checks that are `missing` when a finding of these codes lies in code the entry point reaches.
FINDING_CHECKS = {
    "cudnn-benchmark-off": frozenset({"TDL301"}),
    "cublas-workspace": frozenset({"TDL303"}),
    "dataloaders": frozenset({"TDL101", "TDL102", "TDL103", "TDL104", "TDL105"}),
    "raising-ops": frozenset({"TDL202"}),
    "third-party-kernels": frozenset({"TDL203"}),
    "resume-rng-state": frozenset({"TDL008"}),
    "hidden-order": frozenset({"TDL106", "TDL107"}),
    "compiled-code": frozenset({"TDL306"}),
    "eval-dropout": frozenset({"TDL009"}),
    "resume-data-position": frozenset({"TDL010"}),
    "rank-order": frozenset({"TDL011"}),
}
# What the report needs computed, whatever the selection: added to it.
REPORT_CODES: FrozenSet[str] = frozenset({"TDL001", "TDL002", "TDL003", "TDL302"}).union(*FINDING_CHECKS.values())
CUBLAS_NOT_NEEDED_SINCE = (2, 10)  # torch 2.10 made cuBLAS deterministic without CUBLAS_WORKSPACE_CONFIG
MAX_EVIDENCE = 5


@dataclass(frozen=True)
class Evidence:
    path: str
    line: int
    message: str
    cell: Optional[int] = None  # a notebook's cell, as Jupyter numbers them

    def where(self) -> str:
        if self.cell is not None:
            return f"{self.path}:cell {self.cell}:{self.line}"
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass
class CheckResult:
    status: str
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class Scorecard:
    """One entry point and the result of every check."""

    path: str
    line: int
    reason: str  # why it is an entry point: "main block", "script", "spawned", ...
    checks: Dict[str, CheckResult] = field(default_factory=dict)
    # A spawned entry point: the function the new process runs, the call that starts it, and
    # where the program that starts it begins (`path:line`).
    function: Optional[str] = None
    launcher: Optional[str] = None
    parent: Optional[str] = None

    cell: Optional[int] = None  # a notebook's cell, as Jupyter numbers them (`line` is then the cell's line)

    @property
    def reproducible(self) -> bool:
        return all(result.status in PASSING for result in self.checks.values())


class _Findings:
    """A project's diagnostics by code, each placed in the function that holds it."""

    def __init__(self, project: Project, diagnostics: Sequence[Diagnostic]) -> None:
        self.project = project
        self.by_code: Dict[str, List[Tuple[Diagnostic, Tuple[str, str]]]] = {}
        indexes: Dict[str, Optional[LineIndex]] = {}
        wanted = REPORT_CODES
        for diagnostic in diagnostics:
            if diagnostic.code not in wanted or diagnostic.path not in project.summaries:
                continue
            if diagnostic.path not in indexes:
                source = project.sources.get(diagnostic.path)
                indexes[diagnostic.path] = LineIndex(source.text) if source is not None else None
            index = indexes[diagnostic.path]
            # The line in the analysed text (a notebook's joined cells), as the summary's spans count.
            line = index.position(diagnostic.start_offset)[0] if index is not None else diagnostic.line
            node = project.node_at(diagnostic.path, line)
            self.by_code.setdefault(diagnostic.code, []).append((diagnostic, node))

    def reached(self, codes: FrozenSet[str], nodes: Set[Tuple[str, str]]) -> List[Diagnostic]:
        return [d for code in sorted(codes) for d, node in self.by_code.get(code, ()) if node in nodes]

    def at_entry(self, code: str, entry: EntryPoint) -> List[Diagnostic]:
        return [d for d, _ in self.by_code.get(code, ()) if d.path == entry.path and d.line == entry.line]


def scorecards(
    project: Project, diagnostics: Sequence[Diagnostic], configured: Optional[FrozenSet[str]] = None
) -> List[Scorecard]:
    """The scorecard of every reported entry point of a project; `configured` is the selection of
    the configuration and command line (a column whose rules it leaves out is `ignored`)."""
    findings = _Findings(project, diagnostics)
    cards = []
    for entry in project.reported_runs:
        card = Scorecard(entry.path, entry.line, entry.reason)
        if entry.spawn is not None and entry.parent is not None:
            card.function, card.launcher = entry.spawn.function, f"{entry.spawn.launcher}(...)"
            card.parent = f"{entry.parent.path}:{entry.parent.line}"
        else:
            placed = _evidence(project, Located(entry.path, Site(entry.line, "")), "")
            card.line, card.cell = placed.line, placed.cell
        reach = project.entry_reach(entry)
        nodes = project.reached_nodes(entry)
        for check in CHECKS:
            ignored = _ignored(check, project, entry, configured)
            card.checks[check] = ignored or _check(check, project, entry, reach, nodes, findings)
        cards.append(card)
    return cards


def check_codes(check: str) -> FrozenSet[str]:
    """The rules behind a column."""
    if check in SEED_CHECKS:
        return frozenset({SEED_CHECKS[check][0]})
    if check == "deterministic-mode":
        return frozenset({"TDL302"})
    return FINDING_CHECKS[check]


def _ignored(check: str, project: Project, entry: EntryPoint, configured: Optional[FrozenSet[str]]) -> Optional[CheckResult]:
    if configured is None or check_codes(check) & configured:
        return None
    source = project.settings.source
    where = f"by `select`/`ignore` in {source}" if source is not None else "by `--select`/`--ignore` on the command line"
    codes = ", ".join(sorted(check_codes(check)))
    return CheckResult(IGNORED, [Evidence(entry.path, entry.line, f"{codes} deselected {where}")])


def _optimizer_loads(project: Project, nodes) -> List[Tuple[str, int, str]]:
    """The optimizer state loads (a resume) in reached code: (path, line, receiver)."""
    resume = {display: summary.resume for display, summary in project.summaries.items() if summary.resume is not None}
    return [
        (display, load.line, load.receiver)
        for display, load in optimizer_loads(project, resume)
        if load_node(display, load) in nodes
    ]


def _evidence(project: Project, located: Located, message: str) -> Evidence:
    where = project.where(located)
    if ":cell " in where:
        path, _, rest = where.partition(":cell ")
        cell, _, line = rest.partition(":")
        return Evidence(path, int(line), message, int(cell))
    return Evidence(located.path, located.site.line, message)


def _from_diagnostics(found: Sequence[Diagnostic]) -> List[Evidence]:
    """Every finding, as `check` reports it: the evidence of a missing check is complete."""
    return [Evidence(d.path, d.line, f"{d.code}: {d.message}", d.cell) for d in found]


def _unknown(project: Project, entry: EntryPoint, what: str, supplier: Optional[Located] = None) -> CheckResult:
    """`unknown`: the sites the analysis could not follow, and what may lie behind them."""
    evidence = [
        _evidence(project, site, f"{site.site.text}: the analysis cannot follow it, so {what}")
        for site in project.unresolved(entry)[:3]
    ]
    if supplier is not None:
        evidence.append(_evidence(project, supplier, f"{supplier.site.text} is reached by no path the analysis could follow"))
    return CheckResult(UNKNOWN, evidence)


def _opt_in(project: Project, seeded: Located, findings: "_Findings") -> Optional[str]:
    """Why a seeding runs only on request: under a test of an option whose default skips it
    (`if args.seed is not None:` with `--seed` defaulting to None), or on a seed drawn at random
    when none is given (TDL007 at the seeding call)."""
    guard = seeded.site.guard
    if guard and project.optional_seed(guard):
        return f"{seeded.site.text} runs only under `if {guard}:`, and the option defaults to None"
    for diagnostic, _ in findings.by_code.get("TDL007", ()):
        if diagnostic.path == seeded.path and diagnostic.line == seeded.site.line:
            return f"{seeded.site.text} seeds with a value drawn at random unless one is given (TDL007)"
    return None


def _check(check: str, project: Project, entry: EntryPoint, reach: Reach, nodes, findings: _Findings) -> CheckResult:
    incomplete = project.incomplete(entry)
    if check in SEED_CHECKS:
        code, kind = SEED_CHECKS[check]
        reported = findings.at_entry(code, entry)
        if reported:
            draws = project.effective_draws(entry, kind)
            return CheckResult(
                MISSING,
                [_evidence(project, site, f"draws without a seed: {site.site.text}") for site in draws]
                or _from_diagnostics(reported),
            )
        seeded = reach.covers.get(kind)
        if seeded is not None:
            why = _opt_in(project, seeded, findings)
            if why is not None:
                return CheckResult(OPT_IN, [_evidence(project, seeded, why)])
            return CheckResult(OK, [_evidence(project, seeded, f"seeded by {seeded.site.text}")])
        supplier = project.unreached_supplier(entry, kind)
        drawn = project.effective_draws(entry, kind)
        if drawn and supplier is not None:
            return _unknown(project, entry, f"it may seed {kind} there", supplier)
        if reach.draws.get(kind) and not drawn:
            ruled = [(draw, project.branch_ruled_out(entry, draw)) for draw in reach.draws[kind]]
            ruled = [(draw, test) for draw, test in ruled if test is not None]
            why = "its only draws are initial weights a checkpoint overwrites"
            if len(ruled) == len(reach.draws[kind]):
                draw, test = ruled[0]
                why = f"its only draws ({draw.site.text} at {project.where(draw)}) run under `if {test}:`"
                why += ", which its calls rule out"
            elif ruled:
                why += f", or run under a test its calls rule out (`if {ruled[0][1]}:`)"
            return CheckResult(NOT_NEEDED, [Evidence(entry.path, entry.line, why)])
        if drawn:
            return CheckResult(
                IGNORED, [Evidence(entry.path, entry.line, f"{code} is suppressed here (`# noqa` or `per-file-ignores`)")]
            )
        if incomplete:
            return _unknown(project, entry, f"it may draw from {kind}'s global generator there")
        return CheckResult(NOT_NEEDED, [Evidence(entry.path, entry.line, f"reaches no draw from {kind}'s global generator")])
    if check == "deterministic-mode":
        enabled = reach.covers.get("deterministic")
        if enabled is not None:
            return CheckResult(OK, [_evidence(project, enabled, f"enabled by {enabled.site.text}")])
        if project.settings.assume_deterministic_mode:
            return CheckResult(
                OK, [Evidence(entry.path, entry.line, "config `assume-deterministic-mode`: enabled outside the code")]
            )
        cuda, ops = reach.governed(project.trains(entry), project.uses_cuda(entry))
        if not findings.at_entry("TDL302", entry):  # `missing` exactly when check reports TDL302
            supplier = project.unreached_supplier(entry, "deterministic")
            if (cuda or ops) and supplier is not None:
                return _unknown(project, entry, "it may enable the flag there", supplier)
            if (cuda or ops) and project.training_assumed(entry) and not any(reach.governed(False, project.uses_cuda(entry))):
                return _unknown(project, entry, "it may train there, and only training needs the flag for what it reaches")
            if cuda or ops:
                return CheckResult(
                    IGNORED, [Evidence(entry.path, entry.line, "TDL302 is suppressed here (`# noqa` or `per-file-ignores`)")]
                )
            if incomplete:
                return _unknown(project, entry, "it may do CUDA work or run operations the flag governs there")
            return CheckResult(
                NOT_NEEDED,
                [
                    Evidence(
                        entry.path,
                        entry.line,
                        "reaches no CUDA work in training and no operation whose pass it runs the flag governs",
                    )
                ],
            )
        work = sorted(ops + cuda, key=lambda item: (item.path, item.site.line))
        evidence = [_evidence(project, item, f"reaches {item.site.text}") for item in work[:MAX_EVIDENCE]]
        return CheckResult(
            MISSING,
            evidence or [Evidence(entry.path, entry.line, "nothing reached enables `torch.use_deterministic_algorithms`")],
        )
    if check in OWN_PLACES:
        return OWN_PLACES[check](project, entry, nodes, findings, incomplete)
    found = findings.reached(FINDING_CHECKS[check], nodes)
    if found:
        return CheckResult(MISSING, _from_diagnostics(found))
    if incomplete and not (check == "cublas-workspace" or (check == "cudnn-benchmark-off" and "cudnn-benchmark" in reach.covers)):
        # "Nothing reached does it" rests on a reach the analysis could not complete; a setting it
        # saw (benchmark set off, the target torch's cuBLAS) stands.
        return _unknown(project, entry, "what it runs there was not checked")
    return _clear(check, project, entry, reach, nodes)


def _at(findings: _Findings, code: str, places: Set[Tuple[str, int]]) -> List[Diagnostic]:
    """The findings of `code` at these places (a project rule's findings are placed by its facts,
    not by the function spans, which files without file-rule findings lack)."""
    return [diagnostic for diagnostic, _ in findings.by_code.get(code, ()) if (diagnostic.path, diagnostic.line) in places]


def _resume_data_position(project: Project, entry: EntryPoint, nodes, findings: _Findings, incomplete: bool) -> CheckResult:
    """TDL010: `missing` at a resume of the entry point that replays an epoch's batches."""
    reached = [place for place in resumes(project) if place.node in nodes]
    found = _at(findings, "TDL010", {(place.path, place.line) for place in reached})
    if found:
        return CheckResult(MISSING, _from_diagnostics(found))
    if incomplete:
        return _unknown(project, entry, "what it resumes and saves there was not checked")
    if not reached:
        return CheckResult(
            NOT_NEEDED,
            [Evidence(entry.path, entry.line, NEVER_RESUMES)],
        )
    return CheckResult(
        OK,
        [
            Evidence(place.path, place.line, f"resumes here ({place.text}); no mid-epoch checkpoint lacks its position")
            for place in reached[:MAX_EVIDENCE]
        ],
    )


def _rank_order(project: Project, entry: EntryPoint, nodes, findings: _Findings, incomplete: bool) -> CheckResult:
    """TDL011: `missing` where reached code draws an order the ranks must share differently per rank."""
    found = _at(findings, "TDL011", draws_reached(project, nodes))
    if found:
        return CheckResult(MISSING, _from_diagnostics(found))
    if incomplete:
        return _unknown(project, entry, "what it runs there was not checked")
    setup = distributed_setup(project, nodes)
    if setup is None:
        return CheckResult(
            NOT_NEEDED,
            [Evidence(entry.path, entry.line, "not distributed: reaches no process group, DDP, Accelerate or torchrun variable")],
        )
    return CheckResult(
        OK, [_evidence(project, setup, f"distributed ({setup.site.text}), and every order the ranks share is drawn alike")]
    )


NEVER_RESUMES = "never resumes: reaches no optimizer `load_state_dict` nor `accelerator.load_state`"
# Columns whose project rule places its findings itself.
OWN_PLACES = {"resume-data-position": _resume_data_position, "rank-order": _rank_order}


def _clear(check: str, project: Project, entry: EntryPoint, reach: Reach, nodes) -> CheckResult:
    """The status of a column with no finding in reached code."""
    if check == "cudnn-benchmark-off":
        chosen = reach.covers.get("cudnn-benchmark")
        if chosen is not None:
            return CheckResult(OK, [_evidence(project, chosen, f"set off: {chosen.site.text}")])
        return CheckResult(OK, [Evidence(entry.path, entry.line, "never turned on (off by default)")])
    if check == "cublas-workspace":
        if project.torch_version >= CUBLAS_NOT_NEEDED_SINCE:
            return CheckResult(
                NOT_NEEDED,
                [Evidence(entry.path, entry.line, f"torch {'%d.%d' % project.torch_version} needs no `CUBLAS_WORKSPACE_CONFIG`")],
            )
        enabled = reach.covers.get("deterministic")
        if enabled is None:
            return CheckResult(NOT_NEEDED, [Evidence(entry.path, entry.line, "deterministic mode is not enabled")])
        return CheckResult(OK, [_evidence(project, enabled, f"no TDL303: the variable is set for {enabled.site.text}")])
    if check == "dataloaders":
        if reach.loading:
            return CheckResult(
                OK,
                [
                    _evidence(project, site, f"reached, and not TDL101-TDL105: {site.site.text}")
                    for site in reach.loading[:MAX_EVIDENCE]
                ],
            )
        return CheckResult(NOT_NEEDED, [Evidence(entry.path, entry.line, "builds no DataLoader, sampler or split")])
    if check == "raising-ops":
        if reach.ops:
            return CheckResult(
                OK, [_evidence(project, site, f"reached, and not TDL202: {site.site.text}") for site in reach.ops[:MAX_EVIDENCE]]
            )
        return CheckResult(NOT_NEEDED, [Evidence(entry.path, entry.line, "reaches no operation of the catalog")])
    if check == "resume-rng-state":
        loads = _optimizer_loads(project, nodes)
        if not loads:
            return CheckResult(
                NOT_NEEDED, [Evidence(entry.path, entry.line, "never resumes: reaches no optimizer `load_state_dict`")]
            )
        return CheckResult(
            OK,
            [
                Evidence(path, line, f"resumes here, and no checkpoint it saves has TDL008: `{text}.load_state_dict(...)`")
                for path, line, text in loads[:MAX_EVIDENCE]
            ],
        )
    if check == "hidden-order":
        return CheckResult(
            OK, [Evidence(entry.path, entry.line, "no unsorted file listing or set of strings put in hash order in reached code")]
        )
    if check == "compiled-code":
        return CheckResult(
            OK, [Evidence(entry.path, entry.line, "no Inductor autotuning without its deterministic mode in reached code")]
        )
    if check == "eval-dropout":
        return CheckResult(
            OK, [Evidence(entry.path, entry.line, "no reached module calls functional dropout without `training=`")]
        )
    return CheckResult(NOT_NEEDED, [Evidence(entry.path, entry.line, "reaches no nondeterministic third-party kernel")])
