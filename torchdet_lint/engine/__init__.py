"""The engine runs things: the file pass, the notebook layer, the runner and its cache,
the project phase, suppressions, the fixer, discovery, configuration and workspaces."""
