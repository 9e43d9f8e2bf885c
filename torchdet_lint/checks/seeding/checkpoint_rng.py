"""TDL008 `checkpoint-without-rng-state`: a project that resumes training saves
checkpoints without the states of the generators its run draws from (a project
rule: the save, the load and the draws may live in different modules)."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from torchdet_lint.checks.insertions import merge_edits
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix
from torchdet_lint.core.rule import FixAvailability, ProjectRule
from torchdet_lint.model.checkpoints import (
    CALL,
    GENERATOR,
    KEY,
    STATE_KINDS,
    VALUE,
    CheckpointSite,
    OptimizerLoad,
    ResumeFacts,
    load_node,
    optimizer_loads,
    wrapped_checkpoints,
)
from torchdet_lint.model.project import EntryPoint, Located, Node, Project
from torchdet_lint.model.summary import MAIN_KEY, MODULE_KEY, Site

Loads = List[Tuple[str, OptimizerLoad]]  # (file, optimizer load)
SAVE_HELPER = "rng_state_dict"
LOAD_HELPER = "load_rng_state_dict"
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
    states and the resume site (the optimizer's `load_state_dict`). A
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

    No fix when the dict already
    has an `"rng_state"` key, when a needed generator's name is not bound at
    the save and at the restore, in notebooks, or when a helper of that name
    exists but does not save those states. A load in another file than the
    save is not edited, nor a load in a helper handed the optimizer (it loads
    whatever it is given, often in a loop): the fix title says to call
    `load_rng_state_dict` there.

    ## Known problems
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
        findings: List[Tuple[str, CheckpointSite, List[str], Loads]] = []
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
                findings.append((display, site, missing, own or resumes))
        # The helpers a module gets hold what all of its checkpoints need (one text: one insertion).
        module_states: Dict[str, Set[str]] = {}
        for display, _, missing, _ in findings:
            module_states.setdefault(display, set()).update(_helper_kind(state) for state in missing)
        for display, site, missing, loads in findings:
            path, load = loads[0]
            where = project.where(Located(path, Site(load.line, "")))
            named = {state: state[len(GENERATOR) :] for state in missing if state.startswith(GENERATOR)}
            words = [f"the loader generator `{named[state]}`" if state in named else WORDS[state] for state in missing]
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
                f"{save} and restore {'them' if len(reads) > 1 else 'it'} after the load"
            )
            fix = _Fixer(project, analysis, display, resume[display]).fix(site, missing, module_states[display], loads)
            diagnostic = Diagnostic(
                path=display,
                line=site.line,
                column=site.column,
                end_line=site.end_line,
                end_column=site.end_column,
                code=self.code,
                name=self.name,
                message=message,
                fix=fix,
                start_offset=site.start_offset,
                end_offset=site.end_offset,
            )
            notebook = getattr(project.sources.get(display), "notebook", None)
            yield notebook.place(diagnostic) if notebook is not None else diagnostic


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
                generators.extend(GENERATOR + name for name in facts.loader_generators.get(key, ()))
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

    def fix(self, site: CheckpointSite, missing: List[str], kinds: Set[str], loads: Loads) -> Optional[Fix]:
        if site.entry is None or self.summary.is_notebook or self.display.endswith(".ipynb"):
            return None
        generators = [state[len(GENERATOR) :] for state in missing if state.startswith(GENERATOR)]
        module_names = set(self.facts.module_names)
        if not all(name.split(".")[0] in site.bound or name.split(".")[0] in module_names for name in generators):
            return None  # a generator the save cannot name
        # One restore per loaded checkpoint, after its last optimizer load (a GAN loads two).
        last: Dict[Tuple[str, str], OptimizerLoad] = {}
        for path, load in loads:
            if path == self.display and load.checkpoint and load.restore_offset is not None:
                if "." + LOAD_HELPER not in getattr(self.summary.functions.get(load.key), "calls", ()):
                    known = last.get((load.key, load.checkpoint))
                    if known is None or known.restore_offset < load.restore_offset:
                        last[(load.key, load.checkpoint)] = load
        restores = sorted(last.values(), key=lambda load: load.restore_offset)
        for load in restores:
            if not all(name.split(".")[0] in load.bound or name.split(".")[0] in module_names for name in generators):
                return None  # a generator the restore cannot name
        defined = {name for name in (SAVE_HELPER, LOAD_HELPER) if name in module_names}
        if defined == {SAVE_HELPER, LOAD_HELPER}:
            saves = self.analysis.helper_saves(self.display, SAVE_HELPER)
            if saves is None or not {_helper_kind(state) for state in missing} <= saves:
                return None  # the module's helper does not save these states
            if generators and GENERATOR + "generator" not in saves:
                return None  # not the pair this fix writes: whether it takes the generators is unknown
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
        arguments = "".join(", " + name for name in generators)
        call = f"{SAVE_HELPER}({arguments[2:]})"
        entry = site.entry
        chosen = entry.wide if entry.wide is not None and entry.room is not None and len(call) > entry.room else entry.edits
        for start, end, text in chosen:
            self.edits.append(Edit(start, end, text.replace("\r\n", "\n").replace(VALUE, call)))
        quote = site.quote
        for load in restores:
            indent, unit = load.indent, self.facts.indent_unit
            key = f"{quote}{KEY}{quote}"
            text = f"{indent}if {key} in {load.checkpoint}:\n{indent}{unit}{LOAD_HELPER}({load.checkpoint}[{key}]{arguments})\n"
            self.edits.append(Edit(load.restore_offset, load.restore_offset, text))
        if restores:
            title = f"Save the RNG states in the checkpoint under `{KEY}` and restore them after the optimizer load"
        else:
            title = f"Save the RNG states in the checkpoint under `{KEY}` (restore them with `{LOAD_HELPER}` where it is loaded)"
        return Fix(title, Applicability.UNSAFE, merge_edits(self.edits))

    def _helpers(self, kinds: Set[str], quote: str) -> Optional[str]:
        """The `rng_state_dict` / `load_rng_state_dict` pair for these states, with the module's names."""
        torch = self._module("torch", "torch")
        random = self._module("random", "random") if "random" in kinds else "random"
        numpy = self._module("numpy", "np") if "numpy" in kinds else "np"
        if torch is None or random is None or numpy is None:
            return None
        return helper_source(kinds, quote, torch, random, numpy)


def helper_source(kinds: Set[str], quote: str = '"', torch: str = "torch", random: str = "random", numpy: str = "np") -> str:
    """The helper pair's source for these states ("torch", "cuda", "random", "numpy", "generators")."""

    def key(name: str) -> str:
        return f"{quote}{name}{quote}"

    generators = "generators" in kinds
    save = [
        f"def {SAVE_HELPER}({'*generators' if generators else ''}):",
        '    """The random number generators\' states, in types that `torch.load` reads',
        "    with `weights_only=True`" + (" (NumPy's key array as a tensor)." if "numpy" in kinds else ".") + '"""',
    ]
    if "numpy" in kinds:
        save.append(f"    _, keys, pos, has_gauss, gauss = {numpy}.random.get_state()")
    save.append("    return {")
    load = [
        f"def {LOAD_HELPER}(state{', *generators' if generators else ''}):",
        f'    """Restores the states that `{SAVE_HELPER}` saved."""',
    ]
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
    if generators:
        save.append(f"        {key('generators')}: [generator.get_state() for generator in generators],")
        load += [
            f"    for generator, generator_state in zip(generators, state[{key('generators')}]):",
            "        generator.set_state(generator_state.cpu())",
        ]
    save.append("    }")
    return "\n".join(save) + "\n\n\n" + "\n".join(load) + "\n"
