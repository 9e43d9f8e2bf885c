"""TDL001-TDL003: entry points that reach an unseeded global generator (torch,
`random`, NumPy), followed through the module graph; one shared fix."""

from __future__ import annotations

import ast
from typing import ClassVar, Iterable, List, Optional, Set, Tuple

from torchdet_lint.checks.insertions import Insertion, import_edit
from torchdet_lint.core.diagnostics import Diagnostic, Fix
from torchdet_lint.core.rule import FixAvailability, ProjectRule
from torchdet_lint.model.facts import RESEEDED
from torchdet_lint.model.project import EntryPoint, Project, Reach
from torchdet_lint.model.summary import RNG_KINDS

RNG_WORDS = {"torch": "torch", "random": "Python's `random`", "numpy": "NumPy's global RNG"}
SEED_CALLS = {"torch": "torch.manual_seed(seed)", "random": "random.seed(seed)", "numpy": "np.random.seed(seed)"}


def seeding_fix(project: Project, entry: EntryPoint, needed: List[str]) -> Optional[Fix]:
    insertion = Insertion(project, entry, needed)
    if not insertion.valid or not needed:
        return None
    seed, guard = _seed_expression(project, entry, insertion, needed)
    rank = insertion.rank
    if rank is not None:
        # Every rank draws its own augmentations and noise; DDP broadcasts rank 0's parameters,
        # and an order the ranks share comes from a generator of the shared seed (TDL011).
        seed = f"{_operand(seed)} + {rank}"
    helper = _helper_call(project, entry, insertion, needed, seed, per_rank=rank is not None)
    if helper is not None:
        return helper
    lines = []
    for kind in needed:
        name = insertion.module(kind)
        if name is None:
            return None
        lines.append(
            {"torch": f"{name}.manual_seed({seed})", "random": f"{name}.seed({seed})", "numpy": f"{name}.random.seed({seed})"}[
                kind
            ]
        )
    if guard:
        # A spawned function is a module-level one: its body's indentation is one step.
        lines = [f"if {guard}:", *((insertion.indent or "    ") + line for line in lines)]
    where = (
        "at the start of the entry point"
        if entry.spawn is None
        else f"at the start of `{entry.spawn.function}`, in the new process"
    )
    if rank is not None:
        where += f", from the shared seed plus the rank (`{seed}`)"
    return insertion.fix(f"Seed {_join([RNG_WORDS[k] for k in needed])} {where}", lines)


def _operand(expression: str) -> str:
    """`expression` as the left operand of `+`: in parentheses unless it binds tighter."""
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return f"({expression})"
    looser = (ast.BitOr, ast.BitAnd, ast.BitXor, ast.LShift, ast.RShift)
    if isinstance(tree, (ast.Name, ast.Attribute, ast.Constant, ast.Call, ast.Subscript)) or (
        isinstance(tree, ast.BinOp) and not isinstance(tree.op, looser)
    ):
        return expression
    return f"({expression})"


def spawned_guard(project: Project, entry: EntryPoint, insertion: Insertion, kind: str) -> str:
    """The test a line inserted at the top of a spawned function sits under: the parent's own guard
    of its seeding (`if args.seed is not None:`) when the names it uses are bound there. The flag
    (`kind` "deterministic") follows the parent's flag when the parent sets one (unguarded), else
    the seeding: a run started without a seed asked for neither."""
    if entry.spawn is None or insertion.names is None:
        return ""
    if kind == "deterministic" and project.parent_only(entry, "deterministic") is not None:
        return ""
    return _seed_expression(project, entry, insertion, list(RNG_KINDS))[1]


def _seed_expression(project: Project, entry: EntryPoint, insertion: Insertion, needed: List[str]) -> Tuple[str, str]:
    """The seed the inserted lines use, and the test that guards them: in a spawned function,
    the parent's own seed expression (`args.seed`) when the names it uses are bound there, with
    the parent's guard (`if args.seed is not None:`); else config `seed`."""
    default = str(project.settings.seed)
    if insertion.names is None:
        return default, ""
    for kind in [*needed, *(k for k in RNG_KINDS if k not in needed)]:
        parent = project.parent_only(entry, kind)
        if parent is None or not parent.site.argument:
            continue
        if not _free_names(parent.site.argument) <= set(insertion.names):
            continue
        guard = parent.site.guard if parent.site.guard and _free_names(parent.site.guard) <= set(insertion.names) else ""
        return parent.site.argument, guard
    return default, ""


def _free_names(expression: str) -> Set[str]:
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return {"<unparsable>"}
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _helper_call(
    project: Project, entry: EntryPoint, insertion: Insertion, needed: List[str], seed: str, per_rank: bool = False
) -> Optional[Fix]:
    """Call an existing first-party seeding helper that covers the RNGs, when there is one (one that
    takes the seed, when each rank needs its own)."""
    candidates = []
    scripts = {other.path for other in project.entry_points if other.path != entry.path}
    for (display, name), reach in project.seeding_helpers():
        if display in scripts:
            continue  # importing another script of the project would run it
        covered = {kind for kind in RNG_KINDS if kind in reach.covers}
        if not set(needed) <= covered:
            continue
        required, first, has_seed = project.summaries[display].signatures.get(name, (9, "", False))
        if required > 1 or (required == 1 and "seed" not in first.lower() and "seed" not in name.lower()):
            continue
        rank = ("deterministic" in reach.covers, display != entry.path, len(covered), display, name)
        candidates.append((rank, display, name, required, has_seed))
    for _, display, name, required, has_seed in sorted(candidates):
        arguments = f"({seed})" if required == 1 else (f"(seed={seed})" if has_seed else "()")
        if per_rank and arguments == "()":
            continue  # it seeds every rank alike
        if display == entry.path:
            if not insertion.at_main:
                continue  # after the imports, the helper is not defined yet
            return insertion.fix(f"Call `{name}{arguments}` at the start of the main block", [f"{name}{arguments}"])
        module = project.index.import_name(display, entry.path)
        if module is None or any(
            part.startswith("_") and part not in ("__init__", "__main__") for part in module.lstrip(".").split(".")
        ):
            continue  # a private module (`torch._numpy.random`) is not the project's seeding API
        bound = entry.summary.exports.get(name)
        if bound is None:
            edit = import_edit(
                insertion.anchors, f"from {module} import {name}", module, insertion.first_party | {module.split(".")[0]}
            )
            if edit.start < insertion.anchors.path_setup_end:
                # Above the `sys.path` line that makes the project importable (a notebook's
                # `sys.path.append(REPO)`): the plain seeding calls instead.
                continue
            insertion.edits.append(edit)
        elif project.resolve(entry.path, "." + name) != [(display, name)] and bound != f"{module}.{name}":
            continue
        return insertion.fix(
            f"Call the project's seeding helper `{name}{arguments}` at the start of the entry point", [f"{name}{arguments}"]
        )
    return None


def spawned_message(project: Project, entry: EntryPoint, message: str, kind: str) -> str:
    """A spawned entry point's message: which function the new process runs, and the parent's
    setting of `kind` that stays behind in the parent."""
    spawn = entry.spawn
    text = f"`{spawn.function}` runs in a new process started by `{spawn.launcher}(...)`, which {message}"
    parent = project.parent_only(entry, kind)
    if parent is not None:
        text += f"; {parent.site.text} at {project.where(parent)} runs in the parent only"
    return text


def _join(words: List[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _sites(project: Project, reach_sites) -> str:
    return ", ".join(f"{s.site.text} at {project.where(s)}" for s in reach_sites[:3])


# -- TDL001-TDL003 -----------------------------------------------------------------------------------


class _UnseededGlobalRng(ProjectRule):
    kind: ClassVar[str] = ""

    def check(self, project: Project) -> Iterable[Diagnostic]:
        for entry in project.reported_runs:
            reach = project.entry_reach(entry)
            if self.kind in reach.covers:
                continue
            draws = project.effective_draws(entry, self.kind)
            if not draws:
                continue
            needed = [kind for kind in RNG_KINDS if project.effective_draws(entry, kind) and kind not in reach.covers]
            message = self.message(project, reach, draws)
            supplier = project.unreached_supplier(entry, self.kind)
            if supplier is not None:
                if project.settings.profile != "strict":
                    continue  # the seeding may run behind what the analysis could not follow
                message += project.open_world_note(entry, supplier, f"seeds {RNG_WORDS[self.kind]}")
            if entry.spawn is not None:
                message = spawned_message(project, entry, message, self.kind)
            fix = seeding_fix(project, entry, needed)
            elsewhere = Insertion(project, entry, needed).elsewhere if fix is None else None
            reseeded = reach.covers.get(RESEEDED)
            if reseeded is not None:
                # A seed inserted at the start would be undone by this call: it is the one to change.
                message += (
                    f"; no fix offered: {reseeded.site.text} at {project.where(reseeded)} reseeds the generators "
                    "from a seed drawn at run time: give it a fixed seed"
                )
                fix = None
            elif elsewhere is not None:
                message += f"; no fix offered: seed at the start of {elsewhere}"
            yield project.entry_diagnostic(entry, self.code, self.name, message, fix)

    def message(self, project: Project, reach: Reach, draws) -> str:  # pragma: no cover - each rule says it its way
        raise NotImplementedError


_FIX_SAFETY = """
    ## Fix safety
    Unsafe: it inserts, at the top of the main block (for a script right after
    its imports, for a notebook at the top of the first code cell), the
    seeding calls for exactly the global generators the entry point reaches
    and never seeds (`torch.manual_seed`, `random.seed`, `np.random.seed`),
    with the seed of config `seed` (default 0) and the imports they need; the
    three rules share that one fix. A file with a main block gets its lines
    there, and after its imports only when the file's own module-level code
    draws (`NOISE = torch.randn(4)`, or a module-level call to a function
    that draws) and no first-party file imports it: draws made by the
    module-level code of an imported module happen at import time, which no
    line after the imports can precede, and module-level seeding in a file
    that others import would reseed every importer. An imported file whose
    main block sits on the guard's own line gets no fix. At the top of a
    block (the main block, a spawned function after its docstring), the
    lines go above the comment lines directly over the first statement,
    which describe it; when only blank lines separate those comments from
    the `if __name__ == "__main__":` line, right under that line.

    "After the imports" means after the last import of the module's header:
    the header runs past a `try: import x` / `except ImportError: x = None`
    block, an `if` around imports, `sys.path` / `os.environ` / `warnings`
    set-up and the path computations such a line uses
    (`ROOT = Path(__file__).parents[0]`), and ends at the first statement
    that is code. TDL102's `seed_worker`, TDL008's helpers and every added
    import use the same place. A first-party helper is called only when its
    import can go below every module-level `sys.path` change (in a notebook,
    the first cell's `sys.path.append(REPO)`): otherwise the fix writes the
    plain seeding calls.

    When the main block only hands the work to a job that runs in a process
    of its own (a submitit executor's `submit`), the lines go at the top of
    what the job runs (the submitted function, or the object's `__call__`),
    after its docstring, when it is defined in the same file; a main block
    that starts with a string gets the lines after that string.

    For a function started in a new process, the lines go at the top of its
    body, seeded from the parent's own seed expression when the names it uses
    are bound there (`args.seed` for a worker that receives `args`, under the
    parent's `if args.seed is not None:` when the parent guards it so), else
    from config `seed`. Where the function receives its rank (the first
    parameter of a function started by `mp.spawn` or `start_processes`, which
    pass the process's index there, or a parameter named `rank`,
    `local_rank`, `global_rank`, ...), the seed is the shared one plus the
    rank (`torch.manual_seed(args.seed + rank)`), and the fix's title says
    so: each rank then draws its own augmentations, noise and samples
    instead of every GPU generating the same ones, and training loses
    nothing, since DDP broadcasts rank 0's parameters at the start. An order
    every rank must share (a sampler's permutation, a split) is then taken
    from rank 0 by TDL011's fix, so the two compose. A seeding helper that
    takes no seed is not called for such a worker (it would seed every rank
    alike). When the project already has a first-party seeding helper that covers those generators (and takes at most
    a seed argument), the fix calls it instead. It is unsafe because it
    changes what the program computes: every run now gives the same numbers,
    which a sweep over random restarts may not want.
"""


_REACH = """
    What a run reaches follows the program as it runs, not only its direct
    calls:

    - Iterating a DataLoader over a first-party dataset runs the dataset's
      `__getitem__` (or `__iter__`) and the `collate_fn` in this process when
      `num_workers` is 0 or absent: their draws are the run's. With workers
      they run in processes PyTorch seeds per worker (`random` and torch
      always, NumPy from torch 1.9; TDL102 covers the generators it cannot
      reseed). A first-party sampler's or batch sampler's `__iter__`, and a
      DataLoader subclass's own `__iter__`, always run in this process.
    - A parameter, local, attribute (a dataclass field, `self.x: T`,
      `self.x = param` of an annotated parameter) or return annotated with a
      first-party class holds an instance of it: `config.build()` runs that
      class's `build`, and `trainer.train()` the `train` of what `build`
      returns (annotated or returned).
    - Objects named by strings: `construct_class_by_name`/`call_func_by_name`/
      `pydoc.locate` with a literal name, or else any object a `class_name=`,
      `_target_` or `class_path` literal of the project names; hydra's
      `instantiate`/`call` with the `_target_` in the call, or else those of
      the YAML configs beside and below the calling file (hyperpyyaml's
      `!new:`/`!apply:`/`!name:` tags and jsonargparse's `class_path` count
      the same), or only the one named after the script when there is one
      (`extract_feats.py` runs with `hparams/extract_feats.yaml`, not with
      the configs of the recipe's training script); `LightningCLI`'s model and data classes; a module imported by
      a literal name (`importlib.import_module("pkg.models")`) and the public
      functions and classes a `getattr(module, name)` may pick from it.
      Candidates are bounded like registries (64).
    - Commands: a click or typer group runs the commands registered on it
      (`@cli.command()`, `@app.command()`); `args.func(args)` runs the
      functions handed to `set_defaults(func=...)`; `fire.Fire`,
      `typer.run` and jsonargparse's `CLI` run theirs.
    - Test runners: `unittest.main()`, `pytest.main(...)` and torch's
      `run_tests()` in a main block run the file's `TestCase` methods
      (`setUp*`, `tearDown*`, `test*`) and `test_*` functions.

    A helper that seeds only under `if <flag>:` on a parameter defaulting to
    a false value seeds where a call passes that parameter a value that may
    be true, not where it keeps the default.

    A draw, sampler or DataLoader that runs only under a test reading a
    command-line option (`if args.bin_loader:`, `RandomSampler(d) if
    args.shuffle_bin else None`, the left side of `and`/`or`, a comparison
    or `not` of one) is no evidence for an entry point whose `argparse`
    parser never defines that option: reading an attribute an
    `argparse.Namespace` lacks raises, so the branch never runs. The
    namespace is the one the entry point binds to `parser.parse_args()`,
    and it counts where it is handed on as an argument, through any number
    of first-party calls, to the parameter the test reads. This needs the
    whole parser in sight, in the function that parses: an
    `argparse.ArgumentParser` without `parents=`, every `add_argument`
    written with literal names and `dest`, and an `action=` that is a
    string, `set_defaults` with keywords only, the parser used for nothing
    else (not handed to a helper, no groups or subparsers, no
    `parse_known_args`, no `parse_args(namespace=...)`), and the parser and
    the namespace each bound once. Code the entry point reaches must not set
    the option either (`args.x = ...`, `setattr(args, "x", ...)`; a
    `setattr` with a computed name, `vars(args).update(...)` or
    `vars(args)[...] = ...` anywhere in reach keeps every such draw). When
    any of this is not so, when a parameter the test reads is bound again in
    its function (`args = presets[args.name]`), or when the callers of a
    function disagree about what they pass, the draw counts: another entry
    point sharing the data module whose parser defines the option is still
    reported.

    Where the analysis cannot follow (a class named by a string from
    configuration it cannot read, an import by a computed name,
    `cfg.build()` on a value whose class it cannot see while some
    first-party class defines `build`), the run is *incomplete*. If the
    project then defines a function that would seed this generator and no
    path the analysis followed reaches it, "never seeds" is not concluded:
    the default profile reports nothing, profile `strict` reports and names
    both the site it could not follow and that function, and `report` says
    `unknown`. Such a function is public (a module's private `_reset_seeds`
    is called by its own module, whose public functions would have to be
    what hides) and, when every site the run cannot follow is an import
    bounded to a package (`import_module("plugins." + name)`, the plugin
    pattern), it lies in one of those packages.
"""


def _shared_fix_safety(rule_class):
    """The three rules share one fix and one reach: those sections are written once."""
    rule_class.__doc__ = rule_class.__doc__.replace("    {fix_safety}", _FIX_SAFETY.strip("\n"))
    rule_class.__doc__ = rule_class.__doc__.replace("    {reach}", _REACH.strip("\n"))
    return rule_class


@_shared_fix_safety
class UnseededTorch(_UnseededGlobalRng):
    """
    ## Why is this bad?
    Without `torch.manual_seed(...)`, the weights of every `nn.Module` the
    program builds, its `torch.rand*` / `randperm` / `normal` / `bernoulli` /
    `multinomial` samples, its dropout masks and the order of a shuffling
    `DataLoader` change on every run, so results cannot be reproduced or
    compared.

    The rule follows the program from its entry points (files with an
    `if __name__ == "__main__":` block, `__main__.py`, notebooks, config
    `entry-points`, and scripts that run their loop at module level and that
    no first-party module imports) through the functions they call, in the
    same file and in first-party modules, and through `__init__` of the
    first-party classes they build. A seed anywhere on those paths counts,
    including one in a helper module two calls away, or from a known helper:
    Lightning's `seed_everything`, `transformers.set_seed`,
    `accelerate.utils.set_seed`, `mmengine`'s `set_random_seed`,
    `detectron2`'s `seed_all_rng`, MONAI's `set_determinism`, SpeechBrain's
    `speechbrain.utils.seed_everything`, PyTorch's test runner
    `torch.testing._internal.common_utils.run_tests()` (it calls
    `set_rng_seed()`, which seeds torch, `random` and NumPy, before the tests
    run), its multi-process test classes (a test runner in the main block
    that runs a class deriving, here or through this file's classes, from
    `MultiProcessTestCase`, `FSDPTest` or `DTensorTestBase`: each rank
    process calls `set_rng_seed()` before the test method; from its
    `TestCase`, whose `setUp` does, unless a class of the file defines a
    `setUp` of its own, which may not call it), and config
    `seed-functions` (`rules/seed_helpers.toml` cites the source of each).
    `torch.cuda.manual_seed[_all]` alone is not enough: model initialisation
    and CPU sampling use the CPU generator; the message says so.

    Library randomness counts as torch's: torchvision's model builders and
    random transforms, `timm.create_model`, MONAI's networks
    (`monai.networks.nets.*`) and its `Rand*` transforms, which the MONAI
    DataLoader seeds from torch's generator (its `worker_init_fn`, or a seed
    drawn from the generator when it has no workers). A `Rand*` transform
    that `set_random_state(...)` seeds itself draws nothing from the global
    generators: chained on it or on the `Compose` that holds it, or called
    anywhere in the file on the name it is bound to.

    `monai.utils.set_determinism(seed=None)` does not seed: MONAI's source
    (`monai/utils/misc.py`) reseeds torch from `torch.default_generator.seed()`
    and `random` and NumPy from the operating system, and restores the cuDNN
    flags. A seed inserted at the start of the run would be undone by it, so
    the rules name that call instead of offering a fix (the contract reads
    `seed=None` as "seeds nothing"; this is the fix that follows from the
    source). An absent seed is MONAI's default, `np.iinfo(np.uint32).max`:
    seeded.

    A module whose parameters a strict `load_state_dict` of the same object
    then overwrites (`model = Net(); model.load_state_dict(torch.load(path))`,
    in one function) draws nothing that reaches the run: an inference script
    that builds its model and loads a checkpoint is not reported for the
    initial weights (`strict=False` keeps whatever the checkpoint lacks, so
    such a load does not count). Library loaders that take the modules in a
    dict load each of them so: MONAI's `CheckpointLoader(path, {"net": net})`
    handler (which loads when its engine starts) and ignite's
    `Checkpoint.load_objects(to_load={"model": model}, ...)`, unless given
    `strict=False`. The same holds for a library builder asked
    for its pretrained weights, which it loads strictly right after building:
    torchvision's `weights=` given a string or a member of a weights enum
    (`weights="DEFAULT"`, `ResNet50_Weights.IMAGENET1K_V2`) and its legacy
    `pretrained=True`, and timm's `create_model(name, pretrained=True)`
    without `num_classes=` (timm drops the pretrained classifier for another
    number of classes, so the new head keeps its random weights). A variable
    or an option (`weights=weights`, `weights=args.weights`) may hold None,
    and `weights_backbone=` loads the
    backbone only: both still count as draws.

    A module is built to be called. In the `forward` of each first-party
    `nn.Module` whose construction a run reaches, and in what that
    `forward` calls, the draws that `model.eval()` and `torch.no_grad()`
    leave on count even where the analysis cannot follow the model to its
    call (a model returned in a tuple, handed to a helper as a parameter):
    a functional dropout given a literal `training=True` (`F.dropout`,
    `F.dropout1d/2d/3d`, `F.alpha_dropout`, `F.feature_alpha_dropout`;
    `train=True` for `torch.dropout` and its alpha forms), and a random
    in-place fill (`normal_`, `uniform_`, `bernoulli_`, `random_`, ...) of
    a tensor built in the same expression (`torch.cuda.FloatTensor(n)
    .normal_()`, `torch.empty(n).uniform_()`, `x.new_empty(n).normal_()`),
    neither under a test that reads `.training`. The message cites them as
    such (`F.dropout(..., training=True)`). A dropout that follows the
    module's mode (`training=self.training`, `nn.Dropout`) is not carried
    this way, nor one without `training=`: it drops after `eval()` too, but
    that is the slip TDL009 reports and fixes at its call.

    A draw given a generator of its own draws nothing from the global
    generators: `torch.randn(3, generator=g)`, `torch.randperm(n,
    generator=g)`, `x.normal_(generator=g)`, `random_split(...,
    generator=g)`, and every method of a `torch.Generator`,
    `np.random.Generator` (`rng.integers(...)`), `RandomState` or
    `random.Random` object are no evidence for TDL001-TDL003.
    `generator=None` is the global generator. A parameter that defaults to
    None and is passed on (`def sample(n, generator=None):
    torch.randn(n, generator=generator)`) is a generator of its own only when
    the function has callers in its file and every one of them passes a
    generator for it (by keyword, by position, or through another such
    parameter whose callers do); otherwise the draw counts.

    Reported on the `if __name__` line of the entry point (line 1, column 1
    for the other entry points). Library modules are never reported.

    A function started in a new process is an entry point of its own: a new
    interpreter seeds torch (and `random`, and NumPy) from the operating
    system, so the parent's seed never reaches it. That is `mp.spawn(fn)`,
    `start_processes(fn)` (any start method but `"fork"`), and a
    `Process(target=fn)`, `Pool` or `ProcessPoolExecutor` of a `"spawn"` or
    `"forkserver"` context (`get_context(...)`, `mp_context=`, or the default
    context in a file that calls `set_start_method("spawn")`). It is reported
    at the call that starts the process, and the message cites the parent's
    seed that stays behind. What only the new process reaches is charged to
    it, not to the parent. The module-level code of its module, and of the
    main script, runs again in the new process and counts; the main block
    does not. Threads, `ThreadPoolExecutor` and an explicit `"fork"` share or
    copy the parent's state: no boundary.

    {reach}

    {fix_safety}

    ## Known problems
    Functions reached only through framework callbacks (Lightning hooks) are
    not followed, and a seed given only on the command line of a launcher is
    invisible. Reach does not follow branches, with one exception: a draw
    under `if p:`, `if not p:`, `if p is [not] None` or `if p == <literal>`
    (or their `else`) on a parameter `p` of a module-level function or of a
    class's `__init__` does not count in a run whose every call of that
    function (construction of that class) passes `p` a literal, or leaves a
    literal default, that fails the test (`Criteo(..., memory_map=True)` and
    `if not memory_map: np.random.permutation(...)`), followed through a
    caller's own parameters. It counts whenever one call passes something
    else (a variable, `**kwargs`), the body binds `p` again, the function is
    handed on or stored anywhere in the project, or the run reaches it by
    other means than a call; tests of methods other than `__init__`, and an
    early `return` under such a test, are not decided. A method called on an object whose class cannot be seen is
    not followed either (only `build`/`make`/`create` make the run
    incomplete, since configs build trainers that way).
    Of a built module's `forward`, only the draws above count where the
    run's call of the module is out of sight: a `torch.randn`, a fill of an
    existing tensor or anything under `if self.training:` counts only where
    the call is seen. A class that inherits its `__init__`, a model loaded
    whole from a checkpoint (`torch.load(path)["model"]`, whose class the run
    never imports) and methods other than `forward` called on such an object
    (`waveglow.infer(...)`) are not followed.
    A `generator=None` parameter passed on is decided from the callers in
    its own file: a function whose callers are all in other files counts as
    drawing from the global generator even when they pass one, and one whose
    callers in its file all pass one counts as drawing nothing even if a
    caller elsewhere leaves it out.
    A function handed to another call is followed only when that call runs
    it (`fire.Fire(main)`, `typer.run`, `Thread(target=...)`,
    `executor.submit(fn)`, `functools.partial`, ...); a class handed to
    `functools.partial` is not built by it. A third-party launcher that starts
    processes out of sight (detectron2's `launch(main, ...)`) is taken for a
    call in the same process. A start method set by code the entry point
    reaches counts for every function that entry point calls (the script's
    `set_start_method("spawn")` covers the library function that starts the
    processes); a function no such entry point calls keeps Linux's
    default, fork. The fix for a spawned function is offered only when the
    function is defined in the file of the call that starts it (a fix edits
    one file). For a file
    listed in config `entry-points`, each of its module-level functions
    counts as a start. The rank added to a spawned worker's seed is the
    process's index on its node under `mp.spawn` (ranks on different nodes
    share it: pass the global rank as a parameter named `rank` to tell them
    apart); a rank known only from `dist.get_rank()` after the process group
    is set up cannot be used at the top of the function, so such a worker
    is seeded with the shared seed. `conftest.py` and `hubconf.py` are imported by
    pytest and `torch.hub`: they are not scripts. A seed in a branch
    (`if args.seed is not None:`) counts as a seed.
    Options decide evidence only through the tests around a draw, sampler
    or DataLoader itself: a first-party call under `if args.x:` still
    reaches what it calls, and a namespace kept on an object
    (`self.args.x`), read with `getattr(args, "x", False)` or parsed in
    another function than the one that hands it on (`args = get_args()`) is
    not followed, so such a draw counts. A third-party function handed the
    namespace is assumed not to add options to it.

    A MONAI `Rand*` transform applied outside MONAI's DataLoader (a plain
    `torch.utils.data.DataLoader`, or called directly) draws from a
    generator MONAI seeds from the operating system, which no global seed
    reaches: seeding torch does not make it reproducible there, only
    `set_random_state`.

    ## Options
    `seed` (the value the fix uses), `seed-functions`, `entry-points`.

    ## References
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    - `torch.manual_seed`: <https://pytorch.org/docs/stable/generated/torch.manual_seed.html>
    """

    code = "TDL001"
    name = "unseeded-torch"
    summary = "an entry point reaches torch randomness and never seeds torch"
    fix_availability = FixAvailability.UNSAFE
    kind = "torch"
    bad = (
        'import torch\nfrom torch import nn\n\nif __name__ == "__main__":\n    model = nn.Linear(4, 2)\n',
        "import torch\n\nfor step in range(3):\n    print(torch.randn(2))\n",
        'import torch\n\nif __name__ == "__main__":\n    torch.cuda.manual_seed_all(0)\n    x = torch.rand(3)\n',
    )
    good = (
        (
            'import torch\nfrom torch import nn\n\nif __name__ == "__main__":\n'
            "    torch.manual_seed(0)\n    model = nn.Linear(4, 2)\n"
        ),
        "import torch\nfrom torch import nn\n\n\ndef build():\n    return nn.Linear(4, 2)\n",
        (
            'import lightning as L\nfrom torch import nn\n\nif __name__ == "__main__":\n'
            "    L.seed_everything(1)\n    model = nn.Linear(4, 2)\n"
        ),
    )

    def message(self, project: Project, reach: Reach, draws) -> str:
        text = f"reaches torch randomness ({_sites(project, draws)}) and never seeds torch: call `torch.manual_seed(seed)` first"
        cuda_only = reach.covers.get("cuda")
        if cuda_only is not None:
            text += (
                f"; {cuda_only.site.text} at {project.where(cuda_only)} seeds only the CUDA generators, while model "
                "initialisation and CPU sampling draw from the CPU generator"
            )
        return text


@_shared_fix_safety
class UnseededPythonRandom(_UnseededGlobalRng):
    """
    ## Why is this bad?
    Functions of Python's `random` module (`random.random`, `shuffle`,
    `choice`, `randint`, `sample`, ...) draw from one global generator seeded
    from the operating system at start-up: without `random.seed(...)` the
    program's choices differ on every run. `torch.manual_seed` does not seed
    it. The rule follows the program from its entry points as TDL001 does;
    `random.seed` or a helper that calls it (Lightning's `seed_everything`,
    `transformers.set_seed`, ...) anywhere on the way counts.

    {reach}

    {fix_safety}

    ## Known problems
    As TDL001: callbacks of frameworks are not followed. `random.Random(...)`
    objects are TDL005's.

    ## Options
    `seed`, `seed-functions`, `entry-points`.

    ## References
    - Python, `random`: <https://docs.python.org/3/library/random.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL002"
    name = "unseeded-python-random"
    summary = "an entry point reaches Python's `random` module and never calls `random.seed`"
    fix_availability = FixAvailability.UNSAFE
    kind = "random"
    bad = ('import random\n\nif __name__ == "__main__":\n    print(random.random())\n',)
    good = (
        'import random\n\nif __name__ == "__main__":\n    random.seed(0)\n    print(random.random())\n',
        "import random\n\n\ndef pick(items):\n    return random.choice(items)\n",
    )

    def message(self, project: Project, reach: Reach, draws) -> str:
        return f"reaches Python's `random` ({_sites(project, draws)}) and never seeds it: call `random.seed(seed)` first"


@_shared_fix_safety
class UnseededNumpyRandom(_UnseededGlobalRng):
    """
    ## Why is this bad?
    The legacy NumPy functions (`np.random.rand`, `randn`, `randint`,
    `shuffle`, `permutation`, `choice`, `uniform`, `normal`, ...) draw from
    NumPy's global generator, which neither `torch.manual_seed` nor
    `random.seed` seeds: without `np.random.seed(...)`, augmentations and
    splits made with them differ on every run. The rule follows the program
    from its entry points as TDL001 does.

    Libraries that draw from it count too (`rules/rng_sources.toml` cites
    their source): MONAI's `create_test_image_2d`/`create_test_image_3d`
    without `random_state=`, and the Hugging Face `datasets` methods
    `train_test_split(...)` and `shuffle(...)` without `seed=` or
    `generator=` (`Dataset`, from datasets 1.2, takes its seed from
    `np.random.get_state()`; `DatasetDict.shuffle` with `seeds=`/`generators=`
    is seeded; `train_test_split(shuffle=False)` draws nothing). Those
    methods are matched by name in files that import `datasets`, since the
    object's type is not visible.

    {reach}

    {fix_safety}

    ## Known problems
    As TDL001. `np.random.default_rng()` objects are TDL005's; NumPy draws in
    DataLoader workers are seeded by PyTorch from 1.9 on (TDL102 covers the
    rest). A streaming `datasets` `IterableDataset.shuffle()` without a seed
    (and `Dataset.shuffle()` in datasets 1.0 and 1.1) seeds its generator from
    the operating system, which `np.random.seed` does not reach: it is
    reported like the others, and the fix does not make it reproducible; give
    it `seed=`.

    ## Options
    `seed`, `seed-functions`, `entry-points`.

    ## References
    - NumPy, legacy random generation: <https://numpy.org/doc/stable/reference/random/legacy.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL003"
    name = "unseeded-numpy-random"
    summary = "an entry point reaches NumPy's global RNG and never calls `np.random.seed`"
    fix_availability = FixAvailability.UNSAFE
    kind = "numpy"
    bad = ('import numpy as np\n\nif __name__ == "__main__":\n    print(np.random.rand(3))\n',)
    good = (
        'import numpy as np\n\nif __name__ == "__main__":\n    np.random.seed(0)\n    print(np.random.rand(3))\n',
        'import numpy as np\n\nif __name__ == "__main__":\n    rng = np.random.default_rng(0)\n    print(rng.random(3))\n',
    )

    def message(self, project: Project, reach: Reach, draws) -> str:
        return f"reaches NumPy's global RNG ({_sites(project, draws)}) and never seeds it: call `np.random.seed(seed)` first"
