"""`torchdet-lint report`: will each training run reproduce? A scorecard per entry
point (`scorecard.py`), rendered for the terminal, Markdown and JSON (`render.py`)."""
