"""`python -m torchdet_lint` is the command-line program."""

import sys

from torchdet_lint.cli import main

sys.exit(main())
