"""TDL008 `checkpoint-without-rng-state`: a project that resumes training saves
checkpoints without the states of the generators its run draws from (a project
rule: the save, the load and the draws may live in different modules)."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from torchdet_lint.checks.insertions import merge_edits
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix
from torchdet_lint.core.rule import FixAvailability, ProjectRule
from torchdet_lint.model.checkpoint_edits import KEY, VALUE
from torchdet_lint.model.checkpoints import (
    CALL,
    GENERATOR,
    STATE_KINDS,
    CheckpointSite,
    OptimizerLoad,
    ResumeCollector,
    ResumeFacts,
    load_node,
    optimizer_loads,
    wrapped_checkpoints,
)
from torchdet_lint.model.project import EntryPoint, Located, Node, Project
from torchdet_lint.model.ranks import DISTRIBUTED_SETUP
from torchdet_lint.model.summary import MAIN_KEY, MODULE_KEY, Site

Loads = List[Tuple[str, OptimizerLoad]]  # (file, optimizer load)
SAVE_HELPER = "rng_state_dict"
LOAD_HELPER = "load_rng_state_dict"
GATHERED = "rng_state"  # the name a per-rank fix binds the gathered states to, before the main-process test
# Helper kinds beside the states: every rank's states gathered (a distributed run), and generators
# that may still be None (a loader that TDL101/TDL104's fix gives one).
RANKS = "ranks"
OPTIONAL = "optional"
WORDS = {
    "torch": "torch's CPU generator",
    "cuda": "the CUDA generators",
    "random": "Python's `random`",
    "numpy": "NumPy's global RNG",
}
READS = {
    "torch": "torch.get_rng_state()",
    "cuda": "torch.cuda.get_rng_state_all()",
    "random": "random.getstate()",
    "numpy": "np.random.get_state()",
}


def _join(words: List[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class CheckpointWithoutRngState(ProjectRule):
    """
    ## Why is this bad?
    A run that resumes from a checkpoint starts its random number generators
    afresh: the dropout masks, augmentations and loader order after the resume
    differ from those of the uninterrupted run, so "train 4 epochs" and "train
    2, resume, train 2 more" end with different weights although both load the
    same model and optimizer state. The checkpoint must carry the generators'
    states, and the resume must put them back.

    The project *resumes* when code an entry point reaches calls
    `load_state_dict` on an optimizer: an object built by a `torch.optim`
    class (or `timm.optim.create_optimizer_v2`, Transformers' `AdamW`,
    `ZeroRedundancyOptimizer`, bitsandbytes and apex optimizers), or a name or
    attribute ending in `optimizer`/`optim` (or loading an item whose key
    contains `optim`: `opt.load_state_dict(state["optim"])`), or an optimizer
    handed to a first-party helper that calls `load_state_dict` on that
    parameter or on the values of its `**kwargs`/`*args` in a loop
    (`restart_from_checkpoint(path, model=model, optimizer=optimizer)` with
    `for key, value in kwargs.items(): value.load_state_dict(checkpoint[key])`).
    A *checkpoint* is a `torch.save` whose object is a dict display or a
    `dict(...)` call, or a name bound to one in the same function (with the
    `d["k"] = ...` item assignments that follow), holding an optimizer's
    `state_dict()` (a value under a key containing `optim` counts too); or
    such a dict handed to a first-party function that `torch.save`s the
    parameter it binds (named, or through `*args`:
    `def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)`, in
    any module), reported at that call since the dict is built there
    ("saved through `save_checkpoint`"). The states it needs, for the entry
    points that reach the save:

    - torch's CPU generator (`torch.get_rng_state()`, `torch.random.get_rng_state()`)
      when the run draws from torch (a module built, dropout, `torch.rand*`, a
      shuffling loader without its own generator);
    - the CUDA generators (`torch.cuda.get_rng_state_all()` / `get_rng_state()`)
      when the run does CUDA work;
    - `random.getstate()` when reached code draws from `random`;
    - `np.random.get_state()` when it draws from NumPy's legacy global RNG;
    - `g.get_state()` of each named generator `g` handed to a reached
      DataLoader or sampler (`generator=g`).

    A state counts as saved when the function that saves the checkpoint reads
    it (in the dict or beside it), or calls a first-party helper that reads it
    (a helper reading a generator's state saves the generators passed to it).
    Reported at the `torch.save(...)` call; the message names the missing
    states and the resume site (the optimizer's `load_state_dict`). A loader
    generator that the saving function cannot name (a loader built in a
    helper, `build_loader()`, whose generator lives there) is named with the
    function that builds it, and no fix is offered: the generator, or its
    loader, must first be handed to the code that saves. A
    function started in a new process (`mp.spawn(train, ...)`, a spawned
    entry point) is a run of its own: the states it needs are what it reaches.

    Accelerate's checkpoints (`rules/runs.toml`): `accelerator.load_state(...)`
    resumes training, and `accelerator.save_state(...)` is a checkpoint that
    carries, for every process, exactly the states Accelerate's source saves
    (`checkpointing.py`, 0.6 to 1.14): torch's CPU and CUDA generators,
    `random` and NumPy's global RNG. It is reported only for what it leaves
    out, a generator handed to a DataLoader or sampler (`generator=g`), with
    no fix (there is no dict to add to): save `g.get_state()` beside it.
    The accelerator is the object built by `accelerate.Accelerator(...)`, or
    a name or attribute `accelerator` whose construction is not visible.

    Not reported: the Transformers `Trainer` and Lightning's `Trainer` (their
    checkpoints carry the RNG states, and they are not `torch.save` of a dict
    anyway);
    checkpoints in a project that never loads an optimizer's state back; and
    states that the training loop reseeds from its own counter before each
    step or epoch, since a resumed run then draws the same streams: a seeding
    call with a non-literal argument inside a `for`/`while` body of reached
    code (`torch.manual_seed(seed + step)`, `g.manual_seed(epoch)`, or a
    first-party helper whose name contains `seed`, e.g.
    `set_torch_seed(args.seed + num_updates)`, covering what it seeds).

    ## Fix safety
    Unsafe: it changes what the checkpoint holds and what a resumed run draws.
    The fix adds the missing states under one key, `"rng_state":
    rng_state_dict(...)`, as one more entry of the dict display in the
    display's own layout (one line at the entries' indentation when they are
    one per line, with their trailing-comma style; after the last entry when
    several share its line, or on a line of its own below them when that
    would pass the line length; a one-line dict that would pass the line
    length is laid out one entry per line, as a formatter would), as a
    `rng_state=rng_state_dict(...)` keyword of a `dict(...)` call in the same
    layouts, or, when the dict is built by item assignments, as
    `checkpoint["rng_state"] = rng_state_dict(...)` right before the save.
    A dict handed to a save function gets the entry where it is built, at
    the call.
    Where the load is visible in the same file (a name bound from
    `torch.load(...)` in the same function, whose item feeds the optimizer's
    `load_state_dict`), it restores them right after that statement (after
    the last one, when several optimizers load from it), guarded so that
    older checkpoints still load:
    `if "rng_state" in checkpoint: load_rng_state_dict(checkpoint["rng_state"], ...)`.
    The pair of helpers is written once per module, after the last import of
    its header (past `try: import x` / `except ImportError:` blocks and
    `sys.path` set-up between imports, as TDL001 describes; an existing pair
    is reused), with only the states the module's checkpoints
    need and the imports they use. Named generators are passed as arguments.
    The saved form loads with `torch.load`'s default `weights_only=True`
    (torch 2.6 and later): tensors, tuples, lists, ints, floats and `None`;
    NumPy's key array goes in as an int64 tensor and comes back as `uint32`.
    The restore moves the tensors to the CPU first, so a checkpoint loaded
    with `map_location="cuda"` restores too.

    In a distributed run each process draws its own streams, and usually
    only the main process writes the checkpoint (`if rank == 0:`,
    `if dist.get_rank() == 0`, `if is_main_process():`,
    `if accelerator.is_main_process:`, an early `if rank != 0: return`, or a
    save function such as `save_on_master` that tests it) while every rank
    loads it. Saving the main process's states and restoring them on every
    rank would make all ranks draw the same dropout masks, noise and
    augmentations: further from the uninterrupted run than no fix. So when
    the save runs on the main process only, or the run sets up a process
    group (DDP, FSDP, Accelerate, Fabric, DeepSpeed), the helpers gather
    every rank's states: `rng_state_dict()` returns a list by rank, built
    with `torch.distributed.all_gather_object` (one process outside a
    process group: a list of one), and `load_rng_state_dict` restores the
    entry of the process's own rank (a rank the checkpoint has no entry for,
    after a restart with more processes, goes on with fresh streams). One
    file holds them all: the save and the load stay as they are, where one
    file per rank would need a path per rank at both ends. A gather is a
    collective that every rank must call: the fix binds
    `rng_state = rng_state_dict()` on the line before the main-process test
    (or assigns `checkpoint["rng_state"] = rng_state_dict()` there, when the
    dict is built before the test) and puts that name in the checkpoint. A
    dict handed to a save function that tests the rank inside is built on
    every rank already: the call goes in the dict. When the function that
    builds and saves the checkpoint is itself called on the main process
    only, no fix is offered and the message says where to gather. The
    gathered states travel pickled: with NCCL, `all_gather_object` uses the
    current CUDA device, which `torch.cuda.set_device(local_rank)` sets.

    A loader or random sampler bound to a name (`loader = DataLoader(ds,
    shuffle=True, ...)`, `sampler = RandomSampler(ds, ...)`) whose generator
    is built in the call, as TDL101's and TDL104's fix builds it, draws its
    order from that generator: its state is needed as `loader.generator`.
    One without a generator yet is passed to the helpers as
    `loader.generator` too (None until that fix gives it one; the helpers
    skip a None generator), so the fixes compose in either order: after
    both, the checkpoint holds the generator's state and a re-lint reports
    nothing. (A `random_split` draws once, when the program starts: it needs
    no state.)

    No fix when the dict already
    has an `"rng_state"` key, when a needed generator's name is not bound at
    the save and at the restore, in notebooks, or when a helper of that name
    exists but does not save those states (or, for a distributed run, does
    not gather them). No fix either when a load that the runs reaching the
    save reach cannot get the restore: in another module than the save, in a
    helper handed the optimizer (it loads whatever it is given, often in a
    loop), or where no name bound from `torch.load(...)` holds the
    checkpoint. A fix there would save states that nothing restores and
    leave a helper nothing calls; the message names the load instead.

    ## Known problems
    The main-process test is recognised by its shape: a rank (`rank`,
    `local_rank`, `args.rank % ngpus_per_node`, `dist.get_rank()`,
    `accelerator.process_index`, ...) compared with 0 or `in (-1, 0)`, a
    predicate such as `is_main_process`, `is_master`, `is_rank_zero`,
    `is_global_zero`, alone or joined with `and`, or behind
    `not dist.is_initialized() or`. In a distributed run, a save under
    another test that names something rank-like (`if args.gpu == 0:`) gets
    no fix (a gather under it could wait forever); one under a test that
    names nothing rank-like is taken to run on every rank.
    A reseeding helper is recognised by its name (containing `seed`); one
    named otherwise is not seen, and the rule reports its loop's states. A run
    whose only torch draw is the model's initialisation still needs the CPU
    state by this reading, although the loaded weights replace those draws.
    Save functions are followed one level (`save_checkpoint(state, ...)` whose
    body saves `state`), and a second level only when the first passes the
    parameter on to a function whose name contains `save` (recording every
    parameter passed on would cost more than it finds); a save function in a
    file that mentions neither `torch.save` nor any other word of the resume
    facts (`torch.save` imported under another name) is not seen. A
    checkpoint built in another function than the one that hands it to the
    save, a dataclass turned into a dict (`torch.save(asdict(snapshot))`),
    and an optimizer's state dict saved alone (no dict to add the states to)
    are not followed. Loads through a helper are followed one level, by the
    optimizer handed to it; the resume site named is the helper's
    `load_state_dict` line.

    ## Options
    `entry-points`, `seed-functions` (a configured seeding function called in
    a loop counts as reseeding).

    ## References
    - PyTorch, Saving and loading a general checkpoint: <https://pytorch.org/tutorials/recipes/recipes/saving_and_loading_a_general_checkpoint.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    - `torch.Generator.get_state`: <https://pytorch.org/docs/stable/generated/torch.Generator.html>
    - `torch.load` and `weights_only`: <https://pytorch.org/docs/stable/generated/torch.load.html>
    """

    code = "TDL008"
    collectors = (ResumeCollector,)
    name = "checkpoint-without-rng-state"
    summary = "a resumable run saves a checkpoint with the optimizer state but without the states of the RNGs it draws from"
    fix_availability = FixAvailability.UNSAFE
    bad = (
        "import torch\nfrom torch import nn\n\n\ndef main(resume):\n    torch.manual_seed(0)\n"
        "    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        '    if resume:\n        checkpoint = torch.load(resume)\n        optimizer.load_state_dict(checkpoint["optimizer"])\n'
        "    for epoch in range(3):\n        model(torch.ones(4)).sum().backward()\n        optimizer.step()\n"
        '        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "last.pt")\n\n\n'
        'if __name__ == "__main__":\n    main(None)\n',
    )
    good = (
        "import torch\nfrom torch import nn\n\n\ndef main(resume):\n    torch.manual_seed(0)\n"
        "    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        '    if resume:\n        checkpoint = torch.load(resume)\n        optimizer.load_state_dict(checkpoint["optimizer"])\n'
        '        torch.set_rng_state(checkpoint["rng"])\n'
        "    for epoch in range(3):\n        model(torch.ones(4)).sum().backward()\n        optimizer.step()\n"
        '        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}\n'
        '        state["rng"] = torch.get_rng_state()\n        torch.save(state, "last.pt")\n\n\n'
        'if __name__ == "__main__":\n    main(None)\n',
        # Never loaded back as an optimizer state: a checkpoint for inference only.
        'import torch\nfrom torch import nn\n\nif __name__ == "__main__":\n    model = nn.Linear(4, 4)\n'
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        '    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "last.pt")\n',
    )

    def check(self, project: Project) -> Iterable[Diagnostic]:
        resume = {display: summary.resume for display, summary in project.summaries.items() if summary.resume is not None}
        if not any(facts.checkpoints or facts.wrapped for display, facts in resume.items() if project.is_reported(display)):
            return
        analysis = _Analysis(project, resume)
        resumes = analysis.resume_loads()
        if not resumes:
            return
        findings: List[Tuple[str, CheckpointSite, List[str], Loads, List[EntryPoint]]] = []
        for display in sorted(resume):
            if not project.is_reported(display):
                continue
            for site in analysis.checkpoints(display):
                runs = [entry for entry in analysis.entries if (display, site.key) in analysis.nodes(entry)]
                if not runs:
                    continue
                needed = analysis.needed(runs)
                present = analysis.present(display, site)
                missing = [state for state in needed if state not in present]
                if not missing:
                    continue
                own = [
                    (path, load)
                    for path, load in resumes
                    if any(load_node(path, load) in analysis.nodes(entry) for entry in runs)
                ]
                findings.append((display, site, missing, own or resumes, runs))
        # The helpers a module gets hold what all of its checkpoints need (one text: one insertion).
        module_states: Dict[str, Set[str]] = {}
        for display, site, missing, _, runs in findings:
            kinds = module_states.setdefault(display, set())
            kinds.update(_helper_kind(state) for state in missing)
            if analysis.fix_generators(display, site, runs):
                kinds.update(("generators", OPTIONAL))
            if analysis.per_rank(display, site, runs):
                kinds.add(RANKS)
        for display, site, missing, loads, runs in findings:
            path, load = loads[0]
            where = project.where(Located(path, Site(load.line, "")))
            named = {state: state[len(GENERATOR) :] for state in missing if state.startswith(GENERATOR)}
            words = [
                self._generator_words(analysis, display, site, state, named[state]) if state in named else WORDS[state]
                for state in missing
            ]
            reads = [f"`{named[state]}.get_state()`" if state in named else f"`{READS[state]}`" for state in missing]
            saved = f"checkpoint saved through `{site.through.spelling}`" if site.through is not None else "checkpoint"
            holds = f"{saved} with the optimizer state"
            save = f"save {_join(reads)} in it"
            if site.saved_by:
                holds = f"checkpoint of `{site.saved_by}(...)` with the optimizer and the global RNG states"
                save = f"save {_join(reads)} beside it"
            message = (
                f"{holds} but not the state of {_join(words)}: training resumed from it "
                f"(`{load.receiver}.{load.method}` at {where}) draws other random numbers than an uninterrupted run; "
            )
            if not site.saved_by and RANKS in module_states[display] and analysis.per_rank(display, site, runs):
                who = analysis.writer(site)
                message += (
                    f"save every rank's {_join(reads)} in it ({who}, and each process draws its own streams) and "
                    "restore each rank's own after the load: restoring one rank's states everywhere makes the ranks draw alike"
                )
            else:
                message += f"{save} and restore {'them' if len(reads) > 1 else 'it'} after the load"
            fixer = _Fixer(project, analysis, display, resume[display])
            fix = fixer.fix(site, missing, module_states[display], loads, runs)
            if fix is None and fixer.withheld:
                message += f"; no fix offered: {fixer.withheld}"
            yield project.span_diagnostic(display, site, self.code, self.name, message, fix)

    @staticmethod
    def _generator_words(analysis: "_Analysis", display: str, site: CheckpointSite, state: str, name: str) -> str:
        """`the loader generator `g``, or, for one the save's function does not bind (a loader built in
        a helper: `loader.generator` of `create_loader`'s `loader`), where that loader is built."""
        root = name.split(".")[0]
        if root in site.bound or root in analysis.resume[display].module_names:
            return f"the loader generator `{name}`"
        places = sorted(
            f"`{key}` ({where})" if where != display else f"`{key}`"
            for where, key in analysis.generator_origins.get(state, ())
            if (where, key) != (display, site.key)
        )
        if not places:
            return f"the loader generator `{name}`"
        return f"the loader generator `{name}` (built in {_join(places[:2])}, out of this function's reach)"


def _helper_kind(state: str) -> str:
    return "generators" if state.startswith(GENERATOR) else state


class _Analysis:
    """What the runs reach, computed once per entry point."""

    def __init__(self, project: Project, resume: Dict[str, ResumeFacts]) -> None:
        self.project = project
        self.resume = resume
        # A function started in a new process (`mp.spawn(train, ...)`) is a run of its own: the
        # parent's reach stops at the process boundary.
        self.entries: List[EntryPoint] = project.runs
        self._nodes: Dict[int, Set[Node]] = {}
        self.savers: Dict[int, List[Node]] = {}  # id of a checkpoint handed to a first-party function -> the savers
        # A loader generator's state -> the functions that name it so (`loader.generator` is the loader
        # that `create_loader` binds to `loader`): where a save that cannot name it must look.
        self.generator_origins: Dict[str, Set[Node]] = {}

    def nodes(self, entry: EntryPoint) -> Set[Node]:
        found = self._nodes.get(id(entry))
        if found is None:
            found = self._nodes[id(entry)] = self.project.reached_nodes(entry)
        return found

    def checkpoints(self, display: str) -> List[CheckpointSite]:
        """A file's checkpoints: its `torch.save`s, and the dicts it hands to a first-party function
        that saves them (`save_checkpoint({...}, is_best)`, `utils.save_on_master(state, path)`)."""
        sites = list(self.resume[display].checkpoints)
        for site, savers in wrapped_checkpoints(self.project, self.resume, display):
            self.savers[id(site)] = savers
            sites.append(site)
        return sites

    def resume_loads(self) -> Loads:
        """The optimizer loads some entry point reaches (the project resumes)."""
        loads = optimizer_loads(self.project, self.resume)
        return [(d, load) for d, load in loads if any(load_node(d, load) in self.nodes(entry) for entry in self.entries)]

    def needed(self, runs: List[EntryPoint]) -> List[str]:
        """The states the runs need saved: what they draw from, less what their loops reseed."""
        needed: List[str] = []
        for entry in runs:
            reach = self.project.entry_reach(entry)
            kinds = [
                kind
                for kind, present in (
                    ("torch", bool(reach.draws.get("torch"))),
                    ("cuda", bool(reach.cuda)),
                    ("random", bool(reach.draws.get("random"))),
                    ("numpy", bool(reach.draws.get("numpy"))),
                )
                if present
            ]
            generators: List[str] = []
            reseeded: Set[str] = set()
            for display, key in sorted(self.nodes(entry)):
                facts = self.resume.get(display)
                if facts is None:
                    continue
                for name in facts.loader_generators.get(key, ()):
                    generators.append(GENERATOR + name)
                    self.generator_origins.setdefault(GENERATOR + name, set()).add((display, key))
                for token in facts.loop_seeds.get(key, ()):
                    if token.startswith(CALL):
                        reseeded.update(self._seeded_by(display, token[len(CALL) :]))
                    else:
                        reseeded.add(token)
            for state in kinds + sorted(set(generators)):
                if state not in reseeded and state not in needed:
                    needed.append(state)
        order = {kind: index for index, kind in enumerate(STATE_KINDS)}
        return sorted(needed, key=lambda state: (order.get(state, len(order)), state))

    def distributed(self, runs: List[EntryPoint]) -> bool:
        """Whether the runs set up a process group (or DDP, Accelerate, Fabric, DeepSpeed): each
        process then draws its own streams."""
        for entry in runs:
            for display, key in self.nodes(entry):
                function = self.project.summaries[display].functions.get(key)
                if function is not None and any(call in DISTRIBUTED_SETUP for call in function.calls):
                    return True
        return False

    def per_rank(self, display: str, site: CheckpointSite, runs: List[EntryPoint]) -> bool:
        """Whether the checkpoint must hold every rank's states: one process writes it (the main
        one), or the run is distributed."""
        if site.rank_guard is not None:
            return True
        facts = self.resume
        if any(key in facts[path].guarded_savers for path, key in self.savers.get(id(site), ()) if path in facts):
            return True
        return self.distributed(runs)

    def writer(self, site: CheckpointSite) -> str:
        """Who writes a per-rank checkpoint, for the message."""
        guard = site.rank_guard
        if guard is not None:
            how = f"after `if {guard.text}: return`" if guard.early else f"under `if {guard.text}:`"
            return f"only the main process writes it, {how} at line {guard.line}"
        for path, key in self.savers.get(id(site), ()):
            if path in self.resume and key in self.resume[path].guarded_savers:
                return f"only the main process writes it, in `{key}` ({path})"
        return "a distributed run"

    def called_on_main_only(self, display: str, site: CheckpointSite, runs: List[EntryPoint]) -> Optional[str]:
        """Where a reached function calls the checkpoint's function on the main process only
        (`if rank == 0: save_checkpoint(...)`): `path (`caller`)`, else None."""
        node = (display, site.key)
        for entry in runs:
            for caller in sorted(self.nodes(entry)):
                facts = self.resume.get(caller[0])
                for target in facts.guarded_calls.get(caller[1], ()) if facts is not None else ():
                    if node in self.project.resolve(caller[0], target):
                        return f"`{caller[1]}` ({caller[0]})"
        return None

    def fix_generators(self, display: str, site: CheckpointSite, runs: List[EntryPoint]) -> List[str]:
        """`loader.generator` of the shuffling loaders and random samplers without a generator built
        in the save's function (or, for `self.` attributes, its class), which TDL101/TDL104's fix
        gives one: saved too, so that the fixes compose."""
        facts = self.resume[display]
        owner = site.key.rpartition(".")[0]
        found: List[str] = []
        for key, names in sorted(facts.fix_generators.items()):
            if not any((display, key) in self.nodes(entry) for entry in runs):
                continue
            for name in names:
                mine = key == site.key or (name.startswith("self.") and owner and key.rpartition(".")[0] == owner)
                if mine and name not in found:
                    found.append(name)
        return found

    def _seeded_by(self, display: str, target: str) -> Set[str]:
        """What a first-party seeding helper seeds (through what it reaches)."""
        seeded: Set[str] = set()
        for node in self.project.resolve(display, target):
            covers = self.project.reach(node).covers
            seeded.update(kind for kind in ("torch", "random", "numpy") if kind in covers)
            if "torch" in covers or "cuda" in covers:
                seeded.add("cuda")
        return seeded

    def captures(self, node: Node) -> Set[str]:
        """The states a function reads, with the functions it calls (module code aside)."""
        found: Set[str] = set()
        seen = {node}
        pending = [node]
        while pending and len(seen) < 50:
            display, key = pending.pop()
            facts = self.resume.get(display)
            if facts is not None:
                found.update(facts.captures.get(key, ()))
            for successor in self.project.edges((display, key)):
                if successor not in seen and successor[1] not in (MODULE_KEY, MAIN_KEY):
                    seen.add(successor)
                    pending.append(successor)
        return found

    def present(self, display: str, site: CheckpointSite) -> Set[str]:
        """The states the checkpoint's function saves: read there, or by a helper it calls."""
        present = set(self.resume[display].captures.get(site.key, ())) | set(site.carries)
        for node in self.savers.get(id(site), ()):
            present.update(state for state in self.captures(node) if not state.startswith(GENERATOR))
        for target, names in site.helper_calls:
            for node in self.project.resolve(display, target):
                for state in self.captures(node):
                    if state.startswith(GENERATOR):
                        present.update(GENERATOR + name for name in names)
                    else:
                        present.add(state)
        return present

    def helper_saves(self, display: str, name: str) -> Optional[Set[str]]:
        """What an existing `rng_state_dict` of a module saves (None: it is not a first-party function)."""
        nodes = self.project.resolve(display, "." + name)
        if not nodes and name in self.project.summaries[display].exports:
            nodes = self.project.resolve(display, self.project.summaries[display].exports[name])
        if not nodes:
            return None
        states = {state for node in nodes for state in self.captures(node)}
        return states | {_helper_kind(state) for state in states}


class _Fixer:
    """The fix of one checkpoint: the entry, the helpers, their imports, the restores."""

    def __init__(self, project: Project, analysis: _Analysis, display: str, facts: ResumeFacts) -> None:
        self.project = project
        self.analysis = analysis
        self.display = display
        self.facts = facts
        self.summary = project.summaries[display]
        self.edits: List[Edit] = []
        self.withheld = ""  # why no fix is offered, when the message should say it

    def _module(self, module: str, preferred: str) -> Optional[str]:
        """The module-level name of `module`, adding its import when needed (None: no clean way)."""
        exports = self.summary.exports
        names = sorted(name for name, bound in exports.items() if bound == module)
        if names:
            return preferred if preferred in names else names[0]
        planned = self.facts.import_edits.get(module)
        if planned is None or preferred in self.facts.module_names:
            return None
        self.edits.append(Edit(planned[0], planned[0], planned[1].replace("\r\n", "\n")))
        return preferred

    def fix(
        self, site: CheckpointSite, missing: List[str], kinds: Set[str], loads: Loads, runs: List[EntryPoint]
    ) -> Optional[Fix]:
        if site.key_taken or self.summary.is_notebook or self.display.endswith(".ipynb"):
            return None
        generators = [state[len(GENERATOR) :] for state in missing if state.startswith(GENERATOR)]
        module_names = set(self.facts.module_names)

        def named(name: str, bound: List[str]) -> bool:
            return name.split(".")[0] in bound or name.split(".")[0] in module_names

        unnamed = [name for name in generators if not named(name, site.bound)]
        if unnamed:
            self.withheld = (
                f"this function cannot name {_join([f'`{name}`' for name in unnamed])}: "
                "hand it (or its loader) to the code that saves the checkpoint"
            )
            return None
        # Generators a loader gets from TDL101/TDL104's fix (None until then): passed where both ends name them.
        optional = [
            name
            for name in self.analysis.fix_generators(self.display, site, runs)
            if name not in generators and named(name, site.bound)
        ]
        # One restore per loaded checkpoint, after its last optimizer load (a GAN loads two).
        last: Dict[Tuple[str, str], OptimizerLoad] = {}
        for path, load in loads:
            if "." + LOAD_HELPER in getattr(self.project.summaries[path].functions.get(load.key), "calls", ()):
                continue  # it restores already
            if path != self.display or not load.checkpoint or load.restore_offset is None:
                # A fix that saves what nothing restores would leave a helper that nothing calls.
                self.withheld = self._unrestorable(path, load)
                return None
            known = last.get((load.key, load.checkpoint))
            if known is None or known.restore_offset < load.restore_offset:
                last[(load.key, load.checkpoint)] = load
        restores = sorted(last.values(), key=lambda load: load.restore_offset)
        for load in restores:
            if not all(named(name, load.bound) for name in generators):
                return None  # a generator the restore cannot name
            optional = [name for name in optional if named(name, load.bound)]
        per_rank = RANKS in kinds
        defined = {name for name in (SAVE_HELPER, LOAD_HELPER) if name in module_names}
        if defined == {SAVE_HELPER, LOAD_HELPER}:
            saves = self.analysis.helper_saves(self.display, SAVE_HELPER)
            if saves is None or not {_helper_kind(state) for state in missing} <= saves:
                return None  # the module's helper does not save these states
            if (generators or optional) and GENERATOR + "generator" not in saves:
                return None  # not the pair this fix writes: whether it takes the generators is unknown
            if per_rank and not self._gathers(SAVE_HELPER):
                return None  # a pair that keeps one process's states: restoring them everywhere collapses the ranks' streams
        elif defined:
            return None  # half a pair: its format is unknown
        else:
            helpers = self._helpers(kinds, site.quote)
            if helpers is None:
                return None
            facts = self.facts
            prefix = "\n" if facts.helper_at_eof else ""
            suffix = "" if facts.helper_at_end else "\n" * max(0, 2 - facts.helper_blank_after)
            self.edits.append(Edit(facts.helper_offset, facts.helper_offset, prefix + "\n\n" + helpers + suffix))
        arguments = "".join(", " + name for name in generators + optional)
        call = f"{SAVE_HELPER}({arguments[2:]})"
        quote = site.quote
        key = f"{quote}{KEY}{quote}"
        guard = site.rank_guard if per_rank else None
        value: Optional[str] = call
        if guard is not None:
            # Gathering is a collective: every rank calls it, before the test that lets one save.
            if guard.offset is None:
                return None  # the test shares its line with other code: no line can go before it
            if site.name is not None and not guard.display_inside:
                self.edits.append(Edit(guard.offset, guard.offset, f"{guard.indent}{site.name}[{key}] = {call}\n"))
                value = None
            elif GATHERED in site.bound or site.entry is None:
                return None  # the name the gathered states would take is in use, or no entry can be added
            else:
                self.edits.append(Edit(guard.offset, guard.offset, f"{guard.indent}{GATHERED} = {call}\n"))
                value = GATHERED
        elif site.entry is None:
            return None
        elif per_rank and site.doubtful:
            self.withheld = (
                f"the save runs under `if {site.doubtful}:`, which may let only some processes through; gathering every "
                f"rank's states there could wait forever: call `{SAVE_HELPER}()` on every rank before that test"
            )
            return None
        elif per_rank:
            caller = self.analysis.called_on_main_only(self.display, site, runs)
            if caller is not None:
                self.withheld = (
                    f"{caller} runs the save on the main process only, where gathering every rank's states would wait "
                    "forever for the other ranks: gather them on every rank before that test and hand them to the save"
                )
                return None
        if value is not None:
            entry = site.entry
            chosen = entry.wide if entry.wide is not None and entry.room is not None and len(value) > entry.room else entry.edits
            for start, end, text in chosen:
                self.edits.append(Edit(start, end, text.replace("\r\n", "\n").replace(VALUE, value)))
        for load in restores:
            indent, unit = load.indent, self.facts.indent_unit
            text = f"{indent}if {key} in {load.checkpoint}:\n{indent}{unit}{LOAD_HELPER}({load.checkpoint}[{key}]{arguments})\n"
            self.edits.append(Edit(load.restore_offset, load.restore_offset, text))
        if per_rank:
            where = f" (gathered on every rank before `if {guard.text}:`)" if guard is not None else " (gathered from every rank)"
            title = f"Save every rank's RNG states in the checkpoint under `{KEY}`{where}"
            title += " and restore each rank's own after the optimizer load" if restores else ""
        elif restores:
            title = f"Save the RNG states in the checkpoint under `{KEY}` and restore them after the optimizer load"
        else:
            title = f"Save the RNG states in the checkpoint under `{KEY}`"
        return Fix(title, Applicability.UNSAFE, merge_edits(self.edits))

    def _unrestorable(self, path: str, load: OptimizerLoad) -> str:
        """Why the fix cannot restore the states after this load."""
        where = self.project.where(Located(path, Site(load.line, "")))
        if path != self.display:
            why = "another module than the save"
        elif load.parameter is not None:
            why = "a helper that loads whatever optimizer it is handed"
        else:
            why = "a function with no name bound from `torch.load(...)` to read the states from"
        return (
            f"the optimizer's state is loaded at {where}, in {why}, where this fix cannot restore the states "
            "(restore them right after that load)"
        )

    def _gathers(self, name: str) -> bool:
        """Whether the module's helper gathers every rank's states."""
        function = self.summary.functions.get(name)
        return function is not None and any(call.endswith("all_gather_object") for call in function.calls)

    def _helpers(self, kinds: Set[str], quote: str) -> Optional[str]:
        """The `rng_state_dict` / `load_rng_state_dict` pair for these states, with the module's names."""
        torch = self._module("torch", "torch")
        random = self._module("random", "random") if "random" in kinds else "random"
        numpy = self._module("numpy", "np") if "numpy" in kinds else "np"
        if torch is None or random is None or numpy is None:
            return None
        return helper_source(kinds, quote, torch, random, numpy)


def helper_source(kinds: Set[str], quote: str = '"', torch: str = "torch", random: str = "random", numpy: str = "np") -> str:
    """The helper pair's source for these states ("torch", "cuda", "random", "numpy", "generators"),
    gathered from every rank with "ranks", taking generators that may be None with "optional"."""

    def key(name: str) -> str:
        return f"{quote}{name}{quote}"

    generators = "generators" in kinds
    ranks = RANKS in kinds
    numpy_note = " (NumPy's key array as a tensor)." if "numpy" in kinds else "."
    if ranks:
        save = [
            f"def {SAVE_HELPER}({'*generators' if generators else ''}):",
            '    """Every process\'s random number generator states, by rank, in types that',
            "    `torch.load` reads with `weights_only=True`" + numpy_note,
            '    Call it on every rank: it gathers them."""',
        ]
    else:
        save = [
            f"def {SAVE_HELPER}({'*generators' if generators else ''}):",
            '    """The random number generators\' states, in types that `torch.load` reads',
            "    with `weights_only=True`" + numpy_note + '"""',
        ]
    if "numpy" in kinds:
        save.append(f"    _, keys, pos, has_gauss, gauss = {numpy}.random.get_state()")
    save.append("    state = {" if ranks else "    return {")
    load = [
        f"def {LOAD_HELPER}({'states' if ranks else 'state'}{', *generators' if generators else ''}):",
    ]
    if ranks:
        load += [
            f'    """Restores the states that `{SAVE_HELPER}` saved for this process\'s rank."""',
            f"    distributed = {torch}.distributed.is_available() and {torch}.distributed.is_initialized()",
            f"    rank = {torch}.distributed.get_rank() if distributed else 0",
            "    if rank >= len(states):",
            "        return  # saved by fewer processes: this one goes on with fresh streams",
            "    state = states[rank]",
        ]
    else:
        load.append(f'    """Restores the states that `{SAVE_HELPER}` saved."""')
    if "torch" in kinds:
        save.append(f"        {key('torch')}: {torch}.get_rng_state(),")
        load.append(f"    {torch}.set_rng_state(state[{key('torch')}].cpu())")
    if "cuda" in kinds:
        save.append(f"        {key('cuda')}: {torch}.cuda.get_rng_state_all(),")
        load.append(f"    {torch}.cuda.set_rng_state_all([s.cpu() for s in state[{key('cuda')}]])")
    if "random" in kinds:
        save.append(f"        {key('random')}: {random}.getstate(),")
        load.append(f"    {random}.setstate(state[{key('random')}])")
    if "numpy" in kinds:
        save.append(f"        {key('numpy')}: ({torch}.from_numpy(keys.astype({numpy}.int64)), pos, has_gauss, gauss),")
        load += [
            f"    keys, pos, has_gauss, gauss = state[{key('numpy')}]",
            f"    keys = keys.cpu().numpy().astype({numpy}.uint32)",
            f"    {numpy}.random.set_state(({key('MT19937')}, keys, pos, has_gauss, gauss))",
        ]
    if generators and OPTIONAL in kinds:
        # A loader's generator is None until TDL101/TDL104's fix gives it one.
        save.append(f"        {key('generators')}: [g.get_state() if g is not None else None for g in generators],")
        load += [
            f"    for generator, generator_state in zip(generators, state[{key('generators')}]):",
            "        if generator is not None and generator_state is not None:",
            "            generator.set_state(generator_state.cpu())",
        ]
    elif generators:
        save.append(f"        {key('generators')}: [generator.get_state() for generator in generators],")
        load += [
            f"    for generator, generator_state in zip(generators, state[{key('generators')}]):",
            "        generator.set_state(generator_state.cpu())",
        ]
    save.append("    }")
    if ranks:
        save += [
            f"    if not ({torch}.distributed.is_available() and {torch}.distributed.is_initialized()):",
            "        return [state]",
            f"    states = [None] * {torch}.distributed.get_world_size()",
            f"    {torch}.distributed.all_gather_object(states, state)",
            "    return states",
        ]
    return "\n".join(save) + "\n\n\n" + "\n".join(load) + "\n"
