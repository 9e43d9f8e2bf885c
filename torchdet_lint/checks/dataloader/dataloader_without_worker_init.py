"""TDL102 `dataloader-without-worker-init`: workers copying the dataset's RNG objects
(a project rule: the dataset may live in another module)."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from torchdet_lint.checks.insertions import merge_edits
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix
from torchdet_lint.core.rule import FixAvailability, ProjectRule
from torchdet_lint.model.facts import SEEDS_TRAINER_WORKERS, facts
from torchdet_lint.model.project import Project
from torchdet_lint.model.summary import FileSummary, LoaderSite, RngAttribute

WORKER_RESEEDS_NUMPY = (1, 9)  # torch 1.9 made workers seed NumPy's global RNG


class DataLoaderWithoutWorkerInit(ProjectRule):
    """
    ## Why is this bad?
    Each DataLoader worker starts as a copy of the main process. PyTorch
    reseeds torch, `random` and (since 1.9) NumPy's global RNG in every worker,
    but not the RNG objects a dataset holds: a `np.random.default_rng(...)`,
    `np.random.RandomState(...)`, `random.Random(...)` or `torch.Generator`
    created in `__init__`, in the class body or at module level is copied
    unchanged into every worker, so all workers draw the same "random"
    augmentations, and again every epoch.

    The rule follows the loader's dataset (through names bound in the same
    function, `Subset`, `random_split` and `ConcatDataset`) to its
    first-party class, in any module of the project, with its first-party
    base classes. RNG objects made in `__getitem__`, `__iter__` or a
    `worker_init_fn` are fine, and any `worker_init_fn=` silences the rule.
    With a target torch older than 1.9, every loader with workers is
    reported (the workers share NumPy's global RNG state); in profile
    `strict`, every loader with workers and no `worker_init_fn=` is
    reported, as the PyTorch notes recommend.

    MONAI's `DataLoader` and `ThreadDataLoader` are not reported: when the
    call gives no `worker_init_fn=`, they install their own
    (`monai.data.utils.worker_init_fn`, `monai/data/dataloader.py` 0.3 to
    1.5), which reseeds every object of the dataset that has
    `set_random_state` (MONAI's random transforms and randomizable datasets)
    from the worker's seed; the rule's fix would replace it.

    A loader handed to a Lightning `Trainer` (built in a `*_dataloader` hook,
    or passed to `trainer.fit`/`validate`/`test`/`predict`) is not reported
    when an entry point calls `seed_everything(..., workers=True)`: the
    Trainer then gives it Lightning's `pl_worker_init_function`.

    ## Fix safety
    Safe: adds `worker_init_fn=seed_worker` and defines `seed_worker` once per
    module (reusing an existing one) after the last import of the module's
    header (as TDL001 describes it), as in the PyTorch reproducibility notes,
    seeding each worker's `random` and NumPy from `torch.initial_seed()`; it
    also re-creates, from the worker's seed, the RNG objects the analysis
    found on the dataset (through `torch.utils.data.get_worker_info().dataset`),
    since those are what made the rule fire. No fix when an RNG object cannot
    be re-created (a third-party RNG, one held by another module).

    ## Known problems
    A dataset returned by a function, or held in an attribute, cannot be
    followed: the loader is not reported (profile `strict`: reported).
    MONAI's `worker_init_fn` reseeds only objects with `set_random_state`: a
    plain RNG object held by a first-party dataset under a MONAI loader is
    copied into every worker, and is not reported.
    Arguments passed through `**kwargs` are not seen.

    ## Options
    `torch-version`, `profile`.

    ## References
    - PyTorch, Reproducibility, "DataLoader": <https://pytorch.org/docs/stable/notes/randomness.html#dataloader>
    - `torch.utils.data`, "Randomness in multi-process data loading": <https://pytorch.org/docs/stable/data.html#data-loading-randomness>
    """

    code = "TDL102"
    name = "dataloader-without-worker-init"
    summary = "a DataLoader with workers and no `worker_init_fn=` over a dataset whose RNG objects every worker copies"
    fix_availability = FixAvailability.SAFE
    bad = (
        "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng(0)\n\n"
        "    def __getitem__(self, i):\n        return self.rng.random()\n\n"
        "loader = DataLoader(Noisy(), num_workers=2)\n",
    )
    good = (
        "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Noisy(Dataset):\n    def __getitem__(self, i):\n        return np.random.rand()\n\n"
        "loader = DataLoader(Noisy(), num_workers=2)\n",
        "import numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng(0)\n\n"
        "loader = DataLoader(Noisy(), num_workers=0)\n",
    )

    def check(self, project: Project) -> Iterable[Diagnostic]:
        old_torch = project.torch_version < WORKER_RESEEDS_NUMPY
        strict = project.settings.profile == "strict"
        trainer_seeds_workers: Optional[bool] = None  # computed for the first loader handed to a Trainer
        for display, summary in sorted(project.summaries.items()):
            if not project.is_reported(display):
                continue
            for loader in summary.loaders:
                if loader.to_trainer:
                    if trainer_seeds_workers is None:
                        trainer_seeds_workers = any(
                            SEEDS_TRAINER_WORKERS in project.entry_reach(e).covers for e in project.entry_points
                        )
                    if trainer_seeds_workers:
                        continue  # Lightning adds its worker_init_fn (seed_everything(workers=True))
                rngs = self._rngs(project, display, loader)
                if rngs:
                    owner, rng, dataset_class = rngs[0]
                    dataset = f"`{dataset_class}`"
                    what = f"`self.{rng.attribute}`" if not rng.module_level else f"the module-level `{rng.attribute}`"
                    message = (
                        f"DataLoader with workers and no `worker_init_fn=`: {dataset} uses {what}, a "
                        f"`{rng.constructor.rsplit('.', 1)[-1]}` made outside the workers ({project.cite(owner, rng.line)}), "
                        "which every worker copies: the workers draw the same numbers"
                    )
                elif old_torch:
                    message = (
                        f"DataLoader with workers and no `worker_init_fn=`: before torch 1.9 (target "
                        f"{'%d.%d' % project.torch_version}) workers do not reseed NumPy's global RNG, so they "
                        "repeat the same NumPy draws"
                    )
                elif strict:
                    message = (
                        "DataLoader with workers and no `worker_init_fn=`: "
                        "the PyTorch notes seed every worker's `random` and NumPy explicitly"
                    )
                else:
                    continue
                yield Diagnostic(
                    path=display,
                    line=loader.line,
                    column=loader.column,
                    end_line=loader.end_line,
                    end_column=loader.end_column,
                    code=self.code,
                    name=self.name,
                    message=message,
                    fix=self._fix(project, display, summary, loader, rngs),
                    start_offset=loader.start_offset,
                    end_offset=loader.end_offset,
                )

    def _rngs(self, project: Project, display: str, loader: LoaderSite) -> List[Tuple[str, RngAttribute, str]]:
        """(file, RNG object, dataset class) for each RNG the loader's dataset classes hold."""
        if loader.dataset is None:
            return []
        rngs: List[Tuple[str, RngAttribute, str]] = []
        seen: Set[str] = set()
        for target in loader.dataset.targets:
            found = project.class_node(display, target)
            if found is None:
                continue
            for file, name in project.base_classes(found[0], found[1], set()):
                for rng in project.summaries[file].classes[name].rng_attributes:
                    if rng.attribute not in seen:
                        seen.add(rng.attribute)
                        rngs.append((file, rng, found[1]))
        return rngs

    # -- the fix ------------------------------------------------------------------------------------------
    def _fix(self, project: Project, display: str, summary: FileSummary, loader: LoaderSite, rngs) -> Optional[Fix]:
        if loader.worker_edit is None or summary.anchors is None:
            return None
        edits: List[Edit] = []
        names: Dict[str, str] = {}

        def module(name: str) -> Optional[str]:
            if name in names:
                return names[name]
            bound = next(
                (n for n, q in sorted(summary.exports.items()) if q == name and n in ("torch", "np", "numpy", "random")), None
            )
            bound = bound or next((n for n, q in sorted(summary.exports.items()) if q == name), None)
            if bound is None:
                planned = summary.rng_import_edits.get(name)
                if planned is None or name in summary.exports:
                    return None
                edits.append(Edit(planned[0], planned[0], planned[1].replace("\r\n", "\n")))
                bound = name
            names[name] = bound
            return bound

        worker = summary.worker_functions.get(loader.worker_function or "")
        kinds = {facts().rng_objects[r.constructor].kind for _, r, _ in rngs if r.constructor in facts().rng_objects}
        # Imports in isort's order (stdlib first): edits at one offset keep the order they are made in.
        random = module("random") if worker is None or "random" in kinds else "random"
        uses_numpy = "numpy" in kinds or (worker is None and any(q == "numpy" for q in summary.exports.values()))
        numpy = module("numpy") if uses_numpy else None
        torch = module("torch")
        if torch is None or random is None or (uses_numpy and numpy is None):
            return None
        recreate = self._recreate(display, rngs, {"torch": torch, "numpy": numpy or "numpy", "random": random})
        if recreate is None:
            return None
        edits.append(Edit(*loader.worker_edit))
        if worker is not None:
            missing = [
                rng.attribute for _, rng, _ in rngs if f"{'' if rng.module_level else '.'}{rng.attribute} =" not in worker.text
            ]
            if recreate and missing:
                body = [f"worker_seed = {torch}.initial_seed() % 2**32", *recreate]
                edits.append(Edit(worker.end_offset, worker.end_offset, "".join(worker.indent + line + "\n" for line in body)))
        else:
            lines = ["def seed_worker(worker_id):", f"    worker_seed = {torch}.initial_seed() % 2**32"]
            if numpy is not None:
                lines.append(f"    {numpy}.random.seed(worker_seed)")
            lines.append(f"    {random}.seed(worker_seed)")
            lines.extend("    " + line for line in recreate)
            offset = summary.anchors.after_imports
            source = project.sources.get(display)
            following = getattr(source, "text", "")[offset:] if source is not None else ""
            # PEP 8 (E302, E305): two blank lines before and after a top-level definition.
            blank_after = following[: len(following) - len(following.lstrip("\r\n"))].count("\n")
            prefix = "\n" if summary.anchors.after_imports_eof else ""
            suffix = "\n" * max(0, 2 - blank_after) if following.strip() else ""
            edits.append(Edit(offset, offset, prefix + "\n\n" + "\n".join(lines) + "\n" + suffix))
        return Fix("Seed each worker with `worker_init_fn=seed_worker`", Applicability.SAFE, merge_edits(edits))

    def _recreate(self, display: str, rngs, names: Dict[str, str]) -> Optional[List[str]]:
        """Lines (indented for a function body) re-creating the dataset's RNG objects from `worker_seed`."""
        if not rngs:
            return []
        table = facts().rng_objects
        attribute_lines: List[str] = []
        global_lines: List[str] = []
        for index, (file, rng, _) in enumerate(rngs):
            spec = table.get(rng.constructor)
            if spec is None or not spec.seeded or not spec.type:
                return None
            seed = "worker_seed" if index == 0 else f"(worker_seed + {index}) % 2**32"
            seeded = spec.seeded.format(seed=seed, **names)
            kind = spec.type.format(**names)
            if rng.module_level:
                if file != display:
                    return None  # the RNG lives in another module's globals
                global_lines += [f"global {rng.attribute}", f"{rng.attribute} = {seeded}"]
            else:
                attribute_lines += [
                    f'if isinstance(getattr(dataset, "{rng.attribute}", None), {kind}):',
                    f"    dataset.{rng.attribute} = {seeded}",
                ]
        lines = list(global_lines)
        if attribute_lines:
            torch = names["torch"]
            # Walk through the wrappers (Subset, random_split, ConcatDataset) to the datasets
            # holding the RNGs: one `seed_worker` may serve loaders of several shapes.
            lines += [
                f"datasets = [{torch}.utils.data.get_worker_info().dataset]",
                "while datasets:",
                "    dataset = datasets.pop()",
                f"    if isinstance(dataset, {torch}.utils.data.Subset):",
                "        datasets.append(dataset.dataset)",
                f"    elif isinstance(dataset, {torch}.utils.data.ConcatDataset):",
                "        datasets.extend(dataset.datasets)",
            ]
            lines += ["    " + line for line in attribute_lines]
        return lines
