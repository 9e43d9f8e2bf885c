"""TDL0xx seeding: entry points that reach unseeded global generators (project
rules, followed through the module graph), and, per file, late seeds,
unseeded RNG objects, `PYTHONHASHSEED` set too late, unstable seed values and
functional dropout that stays on after `model.eval()`; checkpoints of
resumable runs without the RNG states, resumes that replay an epoch's batches
and orders the ranks of a distributed run draw differently (project rules).
One module per rule (TDL001-TDL003 share one).

The registry finds the rules in the package's modules; importing the package imports none
of them, so a run imports only the rules its files need.
"""
