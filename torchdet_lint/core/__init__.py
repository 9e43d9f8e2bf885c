"""The core: what every layer may use (diagnostics and fixes, the rule base, names and
scopes, source text and positions, traversal, the catalog and operation matching,
settings, the edits fixes share). It imports no other layer of the package."""
