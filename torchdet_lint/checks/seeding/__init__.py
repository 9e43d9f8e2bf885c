"""TDL0xx seeding: entry points that reach unseeded global generators (project
rules, followed through the module graph), and, per file, late seeds,
unseeded RNG objects, `PYTHONHASHSEED` set too late, unstable seed values and
functional dropout that stays on after `model.eval()`; checkpoints of
resumable runs without the RNG states, resumes that replay an epoch's batches
and orders the ranks of a distributed run draw differently (project rules).
One module per rule (TDL001-TDL003 share one).
"""

from torchdet_lint.checks.seeding.checkpoint_without_rng_state import CheckpointWithoutRngState
from torchdet_lint.checks.seeding.functional_dropout_always_on import FunctionalDropoutAlwaysOn
from torchdet_lint.checks.seeding.ineffective_pythonhashseed import IneffectivePythonHashSeed
from torchdet_lint.checks.seeding.rank_divergent_order import RankDivergentOrder
from torchdet_lint.checks.seeding.resume_replays_data import ResumeReplaysData
from torchdet_lint.checks.seeding.seed_after_rng_use import SeedAfterRngUse
from torchdet_lint.checks.seeding.unseeded_global_rng import (
    UnseededNumpyRandom,
    UnseededPythonRandom,
    UnseededTorch,
)
from torchdet_lint.checks.seeding.unseeded_rng_object import UnseededRngObject
from torchdet_lint.checks.seeding.unstable_seed_value import UnstableSeedValue

__all__ = [
    "UnseededTorch",
    "UnseededPythonRandom",
    "UnseededNumpyRandom",
    "SeedAfterRngUse",
    "UnseededRngObject",
    "IneffectivePythonHashSeed",
    "UnstableSeedValue",
    "CheckpointWithoutRngState",
    "FunctionalDropoutAlwaysOn",
    "ResumeReplaysData",
    "RankDivergentOrder",
]
