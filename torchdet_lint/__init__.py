"""torchdet-lint: a linter that finds and fixes what makes PyTorch training runs differ."""

__version__ = "0.1.0"
