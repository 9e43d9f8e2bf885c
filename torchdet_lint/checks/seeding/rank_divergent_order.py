"""TDL011 `rank-divergent-order`: in a distributed run, an order every rank must share (a
sampler's permutation, a split) is drawn differently on each rank (a project rule: whether the
run is distributed and how each rank seeds is a property of the run)."""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Set, Tuple

from torchdet_lint.checks.insertions import RANK_PARAMETERS, merge_edits, spawned_rank
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix
from torchdet_lint.core.rule import FixAvailability, ProjectRule
from torchdet_lint.model.project import EntryPoint, Located, Node, Project
from torchdet_lint.model.rank_order import DISTRIBUTED, HELPER, OrderDraw, RankOrderCollector, RankOrderFacts, SeedUse
from torchdet_lint.model.ranks import DISTRIBUTED_SETUP, RANK_NAMES
from torchdet_lint.model.summary import Site

RNG_WORDS = {"random": "Python's `random`", "numpy": "NumPy's global RNG", "torch": "torch's global generator"}
SOURCES = {"random": "Python's `random`", "numpy": "NumPy's global RNG", "torch": "torch", "clock": "the clock", "os": "the OS"}


def helper_source(torch: str) -> str:
    """The helper, with the module's name for `torch` (or `name:distributed` for `torch.distributed`)."""
    distributed = torch[: -len(DISTRIBUTED)] if torch.endswith(DISTRIBUTED) else f"{torch}.distributed"
    return (
        f"def {HELPER}(value):\n"
        '    """`value` as rank 0 has it, on every rank: an order the ranks share."""\n'
        f"    if not ({distributed}.is_available() and {distributed}.is_initialized()):\n"
        "        return value\n"
        "    shared = [value]\n"
        f"    {distributed}.broadcast_object_list(shared, src=0)\n"
        "    return shared[0]\n"
    )


class RankDivergentOrder(ProjectRule):
    """
    ## Why is this bad?
    In a distributed run each rank takes its share of one permutation of the
    dataset (`DistributedSampler` splits it by rank). When the ranks draw
    that permutation from different generators, their shares overlap:
    within one epoch some samples are seen twice and others never, and a
    train/validation split made so differs per rank, so one rank trains on
    what another validates on. Nothing fails; the run just learns from
    other data than intended, differently in every run.

    A run is distributed when reached code sets up a process group
    (`torch.distributed.init_process_group`, DDP, FSDP, DeepSpeed), uses
    Accelerate's `Accelerator` or Fabric, or reads the variables torchrun
    sets (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`). Reported at the draw:

    - a seed drawn per process from a source no shared seed fixes
      (`args.seed = random.randint(0, 2**32)` with `random` unseeded or
      seeded per rank, `int(time.time())`, `os.urandom`, `torch.seed()`),
      then handed to what orders the data: a `DistributedSampler(seed=...)`,
      a first-party sampler, a generator's `manual_seed`, `random.Random`,
      `np.random.RandomState` / `default_rng` (in the same file);
    - a shuffle in a first-party sampler or batch sampler (a class deriving
      from `Sampler`, `BatchSampler` or `DistributedSampler`, or named
      `...Sampler` and defining `__iter__`, as torch's samplers yield their
      order; a diffusion `ScheduleSampler`, whose `sample()` draws each
      rank's own timesteps, orders no data) that draws from the process-global `random`, NumPy or
      torch generator (`random.shuffle`, `np.random.permutation`,
      `torch.randperm` without `generator=`, ...) while the ranks seed that
      generator differently (a seed that uses the rank: `seed + rank`, as
      the spawned-worker fix of TDL001 writes) or not at all;
    - a `random_split` whose generator is seeded from `torch.initial_seed()`
      (TDL104's fix) while the ranks seed torch differently or not at all.

    Per-rank seeds are right for what each rank draws on its own
    (augmentations, dropout, noise): DDP broadcasts rank 0's parameters, and
    an order the ranks share is taken from rank 0 by this rule's fix, so the
    two compose.

    ## Fix safety
    Unsafe: it adds the helper `rank_zero_value(value)` once per module
    (after the imports, with `import torch` when needed), which broadcasts
    rank 0's value to every rank (`torch.distributed.broadcast_object_list`)
    and returns the value unchanged outside a process group, and uses it
    where the order is drawn: around the seed where it is handed to the
    sampler or generator (`DistributedSampler(ds, seed=rank_zero_value(args.seed))`),
    after an in-place shuffle (`indices = rank_zero_value(indices)`), around
    a drawn permutation (`rank_zero_value(torch.randperm(n))`), around the
    split's `torch.initial_seed()`. Every rank then uses rank 0's order, and a
    run seeded the same way draws the same one. It changes the order the
    ranks use, and the broadcast is a collective: every rank must reach it,
    as every rank builds the sampler and iterates it.

    No fix for a seed handed to the sampler in another file than the draw,
    and for an in-place shuffle of something that is not a name.

    ## Known problems
    The broadcast needs the process group: a seed or split taken before
    `init_process_group` is passed through unchanged, so it must happen
    after it (a sampler, built after the group, is). With the NCCL backend
    `broadcast_object_list` uses the current CUDA device: call
    `torch.cuda.set_device(local_rank)` first, as DDP needs anyway. A seed
    is matched to its uses by its dotted name in the same file
    (`args.seed`); a seed renamed on its way is not followed. A rank is
    recognised in a seed by its name (`rank`, `local_rank`, `global_rank`,
    `get_rank()`, `process_index`, ... and a spawned function's first
    parameter under `mp.spawn`). The fix wraps a value where it stands and
    keeps the line's layout: a line it makes longer than the line length is
    left to the project's formatter.

    ## Options
    `entry-points`.

    ## References
    - PyTorch, `DistributedSampler` (every process must use the same seed): <https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler>
    - `torch.distributed.broadcast_object_list`: <https://pytorch.org/docs/stable/distributed.html#torch.distributed.broadcast_object_list>
    """

    code = "TDL011"
    collectors = (RankOrderCollector,)
    name = "rank-divergent-order"
    summary = "in a distributed run, an order every rank must share is drawn differently on each rank"
    fix_availability = FixAvailability.UNSAFE
    bad = (
        "import random\n\nimport torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n\n\n"
        "def main(args, dataset):\n    dist.init_process_group('gloo')\n    args.seed = random.randint(0, 2**31)\n"
        "    sampler = DistributedSampler(dataset, seed=args.seed)\n\n\n"
        'if __name__ == "__main__":\n    main(None, None)\n',
    )
    good = (
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n\n\n"
        "def main(args, dataset):\n    dist.init_process_group('gloo')\n"
        "    sampler = DistributedSampler(dataset, seed=args.seed)\n\n\n"
        'if __name__ == "__main__":\n    main(None, None)\n',
        # One process: no ranks to disagree.
        "import random\n\nfrom torch.utils.data import DistributedSampler\n\n\n"
        "def main(args, dataset):\n    args.seed = random.randint(0, 2**31)\n"
        "    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, seed=args.seed)\n\n\n"
        'if __name__ == "__main__":\n    main(None, None)\n',
    )

    def check(self, project: Project) -> Iterable[Diagnostic]:
        facts = {display: summary.rank_order for display, summary in project.summaries.items() if summary.rank_order}
        if not any(found.draws for found in facts.values()):
            return
        reported: Set[Tuple[str, int, int]] = set()
        for entry in project.runs:
            nodes = project.reached_nodes(entry)
            setup = distributed_setup(project, nodes)
            if setup is None:
                continue
            for display in sorted(facts):
                for draw in facts[display].draws:
                    place = (display, draw.line, draw.column)
                    if place in reported or not project.is_reported(display):
                        continue
                    why, uses = self._diverges(project, entry, nodes, display, facts[display], draw)
                    if why is None:
                        continue
                    reported.add(place)
                    yield self._diagnostic(project, display, facts[display], draw, why, uses, setup)

    def _diverges(
        self, project: Project, entry: EntryPoint, nodes: Set[Node], display: str, facts: RankOrderFacts, draw: OrderDraw
    ) -> Tuple[Optional[str], List[SeedUse]]:
        """Why the ranks draw this differently (None: they agree, or it is not reached), and the
        uses of a drawn seed."""
        if draw.kind == "seed":
            if (display, draw.key) not in nodes:
                return None, []
            uses = [use for use in facts.uses if use.name == draw.name and (display, use.key) in nodes]
            if not uses or (draw.rng in RNG_WORDS and not _per_rank_or_unset(project, entry, draw.rng)):
                return None, []
            where = ", ".join(f"`{use.text}` (line {use.line})" for use in uses[:3])
            return (
                f"`{draw.name}` is drawn from {SOURCES[draw.rng]} on each process on its own, and then orders the data "
                f"({where}): each rank draws another seed, so the ranks' permutations disagree"
            ), uses
        if draw.kind == "sampler":
            owner = draw.name.split(":", 1)[0]
            if not any(path == display and (key == owner or key.startswith(owner + ".")) for path, key in nodes):
                return None, []
        elif (display, draw.key) not in nodes:
            return None, []
        seeding = _per_rank_or_unset(project, entry, draw.rng)
        if seeding is None:
            return None, []
        what = f"the shuffle in `{draw.name.split(':', 1)[0]}`" if draw.kind == "sampler" else "this split"
        source = "torch's seed (`torch.initial_seed()`)" if draw.kind == "split" else RNG_WORDS[draw.rng]
        return f"{what} draws from {source}, which {seeding}, so the ranks' orders disagree", []

    def _diagnostic(
        self,
        project: Project,
        display: str,
        facts: RankOrderFacts,
        draw: OrderDraw,
        why: str,
        uses: List[SeedUse],
        setup: Located,
    ) -> Diagnostic:
        message = (
            f"in a distributed run ({setup.site.text} at {project.where(setup)}), {why}: within an epoch some samples "
            "are seen twice and others never; take rank 0's value on every rank (or draw it from a generator seeded "
            "with the seed every rank shares)"
        )
        fix = _fix(project, display, facts, draw, uses)
        if fix is None and draw.kind == "seed":
            message += "; no fix offered: the seed is handed to the sampler in another file"
        return project.span_diagnostic(display, draw, self.code, self.name, message, fix)


def distributed_setup(project: Project, nodes: Set[Node]) -> Optional[Located]:
    """The first call of the run that makes it distributed (a process group, DDP, Accelerate,
    torchrun's variables), else None."""
    for display, key in sorted(nodes):
        summary = project.summaries.get(display)
        facts = summary.rank_order if summary is not None else None
        for line, text in facts.distributed.get(key, ()) if facts is not None else ():
            return Located(display, Site(line, f"`{text}`"))
        function = summary.functions.get(key) if summary is not None else None
        for call in function.calls if function is not None else ():
            if call in DISTRIBUTED_SETUP:
                return Located(display, Site(0, f"`{call}`"))
    return None


def draws_reached(project: Project, nodes: Set[Node]) -> Set[Tuple[str, int]]:
    """The places of the order draws a run reaches (where its TDL011 findings can be)."""
    places: Set[Tuple[str, int]] = set()
    for display, summary in project.summaries.items():
        facts = summary.rank_order
        for draw in facts.draws if facts is not None else ():
            owner = draw.name.split(":", 1)[0] if draw.kind == "sampler" else None
            if (display, draw.key) in nodes or (
                owner and any(path == display and (key == owner or key.startswith(owner + ".")) for path, key in nodes)
            ):
                places.add((display, draw.line))
    return places


def _per_rank_or_unset(project: Project, entry: EntryPoint, rng: str) -> Optional[str]:
    """How the run's ranks seed `rng` differently ("is seeded per rank (`seed + rank` at ...)",
    "is never seeded"), or None when every rank seeds it alike."""
    cover = project.entry_reach(entry).covers.get(rng)
    if cover is None:
        return "no rank seeds" if rng != "torch" else "no rank seeds (each process seeds it from the OS)"
    rank_names = set(RANK_NAMES) | set(RANK_PARAMETERS)
    if entry.spawn is not None:
        top = next((entry.summary.function_tops.get(key) for path, key in entry.targets if path == entry.path), None)
        rank = spawned_rank(entry, top.positional) if top is not None else None
        if rank is not None:
            rank_names.add(rank)
    words = set(re.findall(r"[A-Za-z_]\w*", cover.site.argument or ""))
    if words & rank_names:
        return f"each rank seeds with its own value ({cover.site.text} at {project.where(cover)})"
    return None


def _fix(project: Project, display: str, facts: RankOrderFacts, draw: OrderDraw, uses: List[SeedUse]) -> Optional[Fix]:
    """Rank 0's value everywhere: the helper (once per module) and its uses."""
    summary = project.summaries[display]
    if summary.is_notebook or display.endswith(".ipynb"):
        return None
    spots = [edit for use in uses for edit in use.edits] if draw.kind == "seed" else list(draw.edits)
    if not spots:
        return None
    edits: List[Edit] = [Edit(start, end, text) for start, end, text in spots]
    if not facts.helper_defined:
        torch = facts.torch_name
        if torch is None:
            if facts.import_edit is None:
                return None  # `torch` names something else here
            edits.append(Edit(facts.import_edit[0], facts.import_edit[0], facts.import_edit[1]))
            torch = "torch"
        suffix = "" if facts.helper_at_end else "\n" * max(0, 2 - facts.helper_blank_after)
        edits.append(Edit(facts.helper_offset, facts.helper_offset, "\n\n" + helper_source(torch) + suffix))
    what = {"seed": "the seed", "sampler": "the order", "split": "the split's seed"}[draw.kind]
    return Fix(f"Use rank 0's {what} on every rank (`{HELPER}` broadcasts it)", Applicability.UNSAFE, merge_edits(edits))
