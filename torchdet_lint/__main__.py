"""`python -m torchdet_lint` is the command-line program."""

from torchdet_lint.cli import console_main

console_main()
