"""TDL010 `resume-replays-data`: a run that checkpoints in the middle of an epoch resumes at the
epoch's first batch (a project rule: the resume, the loop and the save may live in different
functions and modules)."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.rule import ProjectRule
from torchdet_lint.model.checkpoints import (
    CheckpointSite,
    ResumeCollector,
    ResumeFacts,
    load_node,
    optimizer_loads,
    wrapped_checkpoints,
)
from torchdet_lint.model.project import Located, Node, Project
from torchdet_lint.model.resume_data import BatchLoop, Place, ResumeDataCollector, ResumeDataFacts
from torchdet_lint.model.summary import Site

# How far a first-party call in the loop body is followed to a save (`self.save_checkpoint()` ->
# `save_on_master(...)` -> `torch.save`).
SAVE_DEPTH = 4


class Resume:
    """A place where training resumes: an optimizer's `load_state_dict`, `accelerator.load_state`."""

    def __init__(self, path: str, node: Node, line: int, span: Tuple[int, int, int, int, int], text: str) -> None:
        self.path, self.node, self.line, self.span, self.text = path, node, line, span, text


def resumes(project: Project) -> List[Resume]:
    """Every place where the project resumes training, with the function whose reach runs it."""
    resume = {display: summary.resume for display, summary in project.summaries.items() if summary.resume is not None}
    found = [
        Resume(path, load_node(path, load), load.line, load.span, f"`{load.receiver}.{load.method}(...)`")
        for path, load in optimizer_loads(project, resume)
    ]
    seen = {(resume.path, resume.line) for resume in found}  # Accelerate's `load_state` is read by both
    for display, summary in sorted(project.summaries.items()):
        facts = summary.resume_data
        for place in facts.resumes if facts is not None else ():
            if (display, place.line) not in seen:
                found.append(Resume(display, (display, place.key), place.line, place.span, place.text))
    return found


def _saved_with(site: CheckpointSite) -> str:
    """The call that saves the checkpoint, as messages name it."""
    return f"`{site.saved_by}(...)`" if site.saved_by else "`torch.save(...)`"


class ResumeReplaysData(ProjectRule):
    """
    ## Why is this bad?
    A run that saves a checkpoint in the middle of an epoch (every N steps)
    and resumes from it starts the loop over the loader again at the epoch's
    first batch: the batches it trained on before the checkpoint are seen a
    second time, and an uninterrupted run would have gone on with the ones
    after them. The weights differ from the uninterrupted run's even when
    every generator's state is restored (TDL008): the data position is state
    too. A sampler without epochs (an infinite sampler, one long-lived
    iterator) starts again at position 0 of its permutation.

    Reported at the resume (an optimizer's `load_state_dict`, as TDL008 reads
    it, or Accelerate's `accelerator.load_state`) when a run that reaches it
    also reaches a loop over a loader's batches (`for batch in loader`,
    `enumerate(loader)`, `tqdm(loader)`, or `next(it)` of `it = iter(loader)`
    in a `while`/`for` loop; a loader is a DataLoader, torchdata's
    `StatefulDataLoader`, or a name whose last part contains `loader`) whose
    body saves a checkpoint: a `torch.save` of a checkpoint as TDL008 reads
    it, a dict handed to a first-party save function, `accelerator.save_state`,
    or a first-party function that does one of these (followed four calls
    deep). The message names the loop, the test the save runs under and what
    the checkpoint holds.

    Silent when the run restores the position or skips what it consumed:

    - the loop skips the consumed batches: it iterates
      `itertools.islice(loader, start, None)` or
      `accelerator.skip_first_batches(loader, n)` (also behind a conditional
      expression, or through a name bound to one), or its body holds a
      `continue` under a test with an ordering comparison
      (`if step < resume_step: continue`), or the function fast-forwards an
      iterator (`for _ in range(n): next(it)`);
    - the run restores a loader's or sampler's state: `load_state_dict` on a
      `StatefulDataLoader` or on a name containing `loader` or `sampler`;
      a sampler or loader built with a keyword naming where to start
      (`consumed_samples=`, `start_index=`, `skip=`, `resume_step=`, ...);
      Accelerate configured with `use_stateful_dataloader=True`;
    - checkpoints are saved at epoch ends only (after the loop over the
      batches, not in it).

    The fixed forms. With torchdata's `StatefulDataLoader` (a drop-in
    DataLoader), whose `state_dict()` records where the epoch is (the
    sampler's position and the generator state the epoch's order came
    from), saved in the checkpoint and loaded back; torch's generator state
    goes in too (TDL008), for the epochs after the resumed one:

    ```python
    from torchdata.stateful_dataloader import StatefulDataLoader

    loader = StatefulDataLoader(dataset, batch_size=32, shuffle=True)
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        loader.load_state_dict(checkpoint["loader"])
        torch.set_rng_state(checkpoint["rng"])
        step = checkpoint["step"]
    for epoch in range(step // len(loader), epochs):
        for batch in loader:
            ...
            step += 1
            if step % save_every == 0:
                torch.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "loader": loader.state_dict(),
                        "rng": torch.get_rng_state(),
                        "step": step,
                    },
                    path,
                )
    ```

    (torchdata 0.11 restores a loader's own `generator=` for the rest of the
    interrupted epoch only: the epochs after it draw another order than the
    uninterrupted run. Leaving the order to torch's generator, whose state
    the checkpoint carries, resumes every epoch exactly.)

    The rule has no fix: where the position is kept (a stateful loader, a
    step counter in the checkpoint, the sampler's own state) is the
    program's design.

    Or skip the batches the interrupted run consumed (the order must be the
    same again: a seeded sampler generator whose state is restored, TDL008):

    ```python
    for epoch in range(first_epoch, epochs):
        batches = loader
        if epoch == first_epoch and resume_step:
            batches = itertools.islice(loader, resume_step, None)  # or accelerator.skip_first_batches
        for step, batch in enumerate(batches, start=resume_step if epoch == first_epoch else 0):
            ...
    ```

    ## Known problems
    A loader is recognised by its type where the loop's name is bound to it
    in the same function, else by its name (`train_loader`, `dataloader`): a
    loop over a loader held in a name without `loader` in it and built in
    another function is not seen. A checkpoint saved under a test that holds
    only on the epoch's last batch is reported. A skip written in another
    way than those listed (a sampler that reads a step counter of its own)
    is not seen; a restore that matches the listed shapes but does not
    restore the position silences the rule.

    ## Options
    `entry-points`.

    ## References
    - torchdata, `StatefulDataLoader`: <https://meta-pytorch.org/data/main/torchdata.stateful_dataloader.html>
    - Accelerate, resuming from a checkpoint mid-epoch (`skip_first_batches`): <https://huggingface.co/docs/accelerate/usage_guides/checkpoint>
    - PyTorch, Saving and loading a general checkpoint: <https://pytorch.org/tutorials/recipes/recipes/saving_and_loading_a_general_checkpoint.html>
    """

    code = "TDL010"
    collectors = (ResumeCollector, ResumeDataCollector)
    name = "resume-replays-data"
    summary = "a run resumes from a checkpoint saved mid-epoch and starts the epoch's batches again"
    bad = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n\ndef main(resume, model, dataset):\n"
        "    torch.manual_seed(0)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    loader = DataLoader(dataset, batch_size=8, shuffle=True)\n"
        '    if resume:\n        checkpoint = torch.load(resume)\n        optimizer.load_state_dict(checkpoint["optimizer"])\n'
        "    for step, batch in enumerate(loader):\n        model(batch).sum().backward()\n        optimizer.step()\n"
        "        if step % 100 == 0:\n"
        '            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "last.pt")\n\n\n'
        'if __name__ == "__main__":\n    main(None, None, None)\n',
    )
    good = (
        # Checkpoints at epoch ends only.
        "import torch\nfrom torch.utils.data import DataLoader\n\n\ndef main(resume, model, dataset):\n"
        "    torch.manual_seed(0)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    loader = DataLoader(dataset, batch_size=8, shuffle=True)\n"
        '    if resume:\n        checkpoint = torch.load(resume)\n        optimizer.load_state_dict(checkpoint["optimizer"])\n'
        "    for epoch in range(3):\n        for batch in loader:\n            model(batch).sum().backward()\n"
        "            optimizer.step()\n"
        '        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "last.pt")\n\n\n'
        'if __name__ == "__main__":\n    main(None, None, None)\n',
        # The loader's position saved and restored.
        "import torch\nfrom torchdata.stateful_dataloader import StatefulDataLoader\n\n\ndef main(resume, model, dataset):\n"
        "    torch.manual_seed(0)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    loader = StatefulDataLoader(dataset, batch_size=8, shuffle=True)\n"
        '    if resume:\n        checkpoint = torch.load(resume)\n        optimizer.load_state_dict(checkpoint["optimizer"])\n'
        '        loader.load_state_dict(checkpoint["loader"])\n'
        "    for step, batch in enumerate(loader):\n        model(batch).sum().backward()\n        optimizer.step()\n"
        "        if step % 100 == 0:\n            torch.save(\n"
        '                {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "loader": loader.state_dict()},\n'
        '                "last.pt",\n            )\n\n\n'
        'if __name__ == "__main__":\n    main(None, None, None)\n',
    )

    def check(self, project: Project) -> Iterable[Diagnostic]:
        data = {display: summary.resume_data for display, summary in project.summaries.items() if summary.resume_data}
        if not any(facts.loops for facts in data.values()):
            return
        places = resumes(project)
        if not places:
            return
        analysis = _Analysis(project, data)
        reported: Set[Node] = set()
        for entry in project.runs:
            nodes = project.reached_nodes(entry)
            reached = [place for place in places if place.node in nodes and project.is_reported(place.path)]
            if not reached or analysis.restores(nodes):
                continue
            found = analysis.replaying_loop(nodes)
            if found is None:
                continue
            display, loop, save = found
            for place in sorted(reached, key=lambda place: (place.path, place.line)):
                # One resume per function: a generator's and a discriminator's optimizer loaded
                # from the same checkpoint are one hazard, reported at the first load.
                if place.node in reported:
                    continue
                reported.add(place.node)
                yield self._diagnostic(project, place, display, loop, save)

    def _diagnostic(self, project: Project, place: Resume, display: str, loop: BatchLoop, save: Place) -> Diagnostic:
        where = project.where(Located(display, Site(loop.line, "")))
        saved = project.where(Located(display, Site(save.line, "")))
        test = loop.tests.get(save.line)
        under = f", under `if {test}:`" if test else ""
        holds = loop.holds.get(save.line)
        what = f"holds {holds} but no loader position" if holds else "holds no loader position"
        message = (
            f"training resumes here ({place.text}) from a checkpoint saved inside the loop over `{loop.loader}`'s batches "
            f"({where}; {save.text} at {saved}{under}) that {what}: after the resume the loader starts again at its "
            "first batch, so the batches seen before the checkpoint are trained on twice; restore the "
            "position (torchdata's `StatefulDataLoader`, its `state_dict()` saved in the checkpoint) or skip the "
            "consumed batches (`itertools.islice`, `accelerator.skip_first_batches`)"
        )
        column, end_line, end_column, start, end = place.span
        diagnostic = Diagnostic(
            path=place.path,
            line=place.line,
            column=column,
            end_line=end_line or place.line,
            end_column=end_column,
            code=self.code,
            name=self.name,
            message=message,
            start_offset=start,
            end_offset=end,
        )
        return project.placed(diagnostic)


class _Analysis:
    def __init__(self, project: Project, data: Dict[str, ResumeDataFacts]) -> None:
        self.project = project
        self.data = data
        self.resume: Dict[str, ResumeFacts] = {
            display: summary.resume for display, summary in project.summaries.items() if summary.resume is not None
        }
        self._saving: Optional[Dict[Node, Place]] = None

    def restores(self, nodes: Set[Node]) -> bool:
        """Whether the run restores a loader's or sampler's position somewhere."""
        return any((display, place.key) in nodes for display, facts in self.data.items() for place in facts.restores)

    def replaying_loop(self, nodes: Set[Node]) -> Optional[Tuple[str, BatchLoop, Place]]:
        """The first reached loop over a loader's batches that saves a checkpoint inside, skipping nothing."""
        for display in sorted(self.data):
            facts = self.data[display]
            for loop in facts.loops:
                if (display, loop.key) not in nodes or loop.skips or facts.skips.get(loop.key):
                    continue
                save = self._save_in(display, loop)
                if save is not None:
                    return display, loop, save
        return None

    def saving(self) -> Dict[Node, Place]:
        """The functions that save a checkpoint themselves, with one such save."""
        if self._saving is None:
            found: Dict[Node, Place] = {}
            for display, facts in sorted(self.resume.items()):
                for site in facts.checkpoints:
                    found.setdefault((display, site.key), Place(site.key, site.line, _saved_with(site)))
                for site, _ in wrapped_checkpoints(self.project, self.resume, display):
                    found.setdefault((display, site.key), Place(site.key, site.line, f"`{site.through.spelling}(...)`"))
            for display, facts in sorted(self.data.items()):
                for key, places in facts.state_saves.items():
                    found.setdefault((display, key), places[0])
            self._saving = found
        return self._saving

    def _save_in(self, display: str, loop: BatchLoop) -> Optional[Place]:
        """A checkpoint saved in the loop's body: directly, or by a first-party function it calls."""
        saving = self.saving()
        own = saving.get((display, loop.key))
        lines = {save.line for save in loop.saves} | {line for _, line in loop.calls}
        if own is not None:
            for site in self._sites(display, loop.key):
                if loop.line <= site.line <= loop.end_line and site.line in lines:
                    return site
        for target, line in loop.calls:
            for callee in self.project.resolve(display, target):
                if self._saves_through(callee):
                    return Place(loop.key, line, f"`{target.lstrip('.')}(...)`")
        return None

    def _sites(self, display: str, key: str) -> List[Place]:
        """Every save of a checkpoint in a function (direct, handed to a save function, `save_state`)."""
        places: List[Place] = []
        facts = self.resume.get(display)
        if facts is not None:
            places += [Place(key, site.line, _saved_with(site)) for site in facts.checkpoints if site.key == key]
            places += [
                Place(key, site.line, f"`{site.through.spelling}(...)`")
                for site, _ in wrapped_checkpoints(self.project, self.resume, display)
                if site.key == key
            ]
        data = self.data.get(display)
        if data is not None:
            places += data.state_saves.get(key, [])
        return places

    def _saves_through(self, start: Node) -> bool:
        saving = self.saving()
        seen = {start}
        frontier = [start]
        for _ in range(SAVE_DEPTH):
            following: List[Node] = []
            for node in frontier:
                if node in saving:
                    return True
                for successor in self.project.edges(node):
                    if successor not in seen:
                        seen.add(successor)
                        following.append(successor)
            frontier = following
        return any(node in saving for node in frontier)
