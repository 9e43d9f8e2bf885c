"""The rule families; importing this package registers every rule."""

import importlib

FAMILIES = ("switches", "ops", "seeding", "dataloader", "performance", "determinism")

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")
