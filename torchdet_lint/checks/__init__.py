"""The rule families; importing this package registers every rule."""

import importlib

FAMILIES = ("switches", "ops", "seeding", "dataloader", "performance", "determinism")

for _family in FAMILIES:
    try:
        importlib.import_module(f"{__name__}.{_family}")
    except ModuleNotFoundError as error:  # a family not written yet
        if error.name != f"{__name__}.{_family}":
            raise
