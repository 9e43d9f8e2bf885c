"""TDL008's helper pair, run for real: what `rng_state_dict` saves loads back with
`torch.load`'s default `weights_only=True` (torch 2.13 here), and
`load_rng_state_dict` puts every generator back where it was."""

from __future__ import annotations

import io
import itertools
import random

import numpy as np
import pytest
import torch

from torchdet_lint.checks.seeding.checkpoint_without_rng_state import helper_source

ALL_KINDS = {"torch", "cuda", "random", "numpy", "generators"}


def _draws(generator: torch.Generator) -> list:
    return [
        torch.rand(3).tolist(),
        random.random(),
        random.gauss(0, 1),
        np.random.rand(2).tolist(),
        float(np.random.normal()),
        torch.rand(2, generator=generator).tolist(),
    ]


def _helpers(kinds, quote='"'):
    namespace = {"torch": torch, "random": random, "np": np}
    exec(compile(helper_source(set(kinds), quote), "<helpers>", "exec"), namespace)
    return namespace["rng_state_dict"], namespace["load_rng_state_dict"]


@pytest.mark.parametrize("quote", ['"', "'"])
def test_saved_states_load_with_weights_only_and_restore_every_generator(quote: str) -> None:
    save, load = _helpers(ALL_KINDS, quote)
    torch.manual_seed(1)
    random.seed(1)
    np.random.seed(1)
    generator = torch.Generator().manual_seed(2)
    random.gauss(0, 1)  # a cached Gaussian in `random`'s state,
    np.random.normal()  # and in NumPy's (has_gauss, cached_gaussian)
    buffer = io.BytesIO()
    torch.save({"optimizer": {}, "rng_state": save(generator)}, buffer)
    expected = _draws(generator)
    _draws(generator)  # move every stream on
    buffer.seek(0)
    checkpoint = torch.load(buffer)  # weights_only=True, the default since torch 2.6
    load(checkpoint["rng_state"], generator)
    assert _draws(generator) == expected


def test_only_the_kinds_asked_for() -> None:
    for size in range(1, len(ALL_KINDS) + 1):
        for kinds in itertools.combinations(sorted(ALL_KINDS), size):
            source = helper_source(set(kinds))
            compile(source, "<helpers>", "exec")
            assert ("getstate" in source) == ("random" in kinds)
            assert ("np.random" in source) == ("numpy" in kinds)
            assert ("cuda" in source) == ("cuda" in kinds)
            assert ("*generators" in source) == ("generators" in kinds)
            assert ("torch.get_rng_state" in source) == ("torch" in kinds)


def test_how_a_call_binds_the_parameters_a_save_or_load_function_records() -> None:
    """`Parameter.takes`: the argument a call passes at a position or by keyword binds a named
    parameter, the first `*args` element (what `torch.save(*args)` saves), any later one (a loop
    over `args`), or any keyword `**kwargs` gathers; `forwarded` shifts `*args` along."""
    from torchdet_lint.model.checkpoints import Parameter

    state = Parameter(0, "state")
    assert state.takes(0, None) and state.takes(None, "state")
    assert not state.takes(1, None) and not state.takes(None, "is_best")
    only = Parameter(0, None)  # positional-only
    assert only.takes(0, None) and not only.takes(None, "state")
    first = Parameter(1, None)  # `torch.save(*args)` in `def save(path, *args)`
    assert first.takes(1, None) and not first.takes(2, None) and not first.takes(None, "obj")
    spread = Parameter(1, None, rest=True)  # `for value in args`
    assert spread.takes(1, None) and spread.takes(3, None) and not spread.takes(0, None)
    assert spread.forwarded(3, 0) == 2 and state.forwarded(0, 1) == 1
    kwargs = Parameter(None, None, rest=True, named=("path", "run_variables"))
    assert kwargs.takes(None, "optimizer") and not kwargs.takes(None, "run_variables") and not kwargs.takes(0, None)


def test_the_per_rank_pair_outside_a_process_group_saves_one_rank_and_skips_missing_generators() -> None:
    """The gathered form (a distributed run) returns a list by rank; outside a process group it holds
    this process only, loads with `weights_only=True` and restores it; a generator that is still None
    (a loader TDL101's fix has not reached yet) is skipped at both ends."""
    save, load = _helpers(ALL_KINDS | {"ranks", "optional"})
    torch.manual_seed(3)
    generator = torch.Generator().manual_seed(4)
    buffer = io.BytesIO()
    torch.save({"rng_state": save(generator, None)}, buffer)
    expected = _draws(generator)
    buffer.seek(0)
    states = torch.load(buffer)["rng_state"]
    assert isinstance(states, list) and len(states) == 1 and states[0]["generators"][1] is None
    load(states, generator, None)
    assert _draws(generator) == expected
    load([], generator)  # saved by fewer processes than this rank: nothing restored, nothing raised
