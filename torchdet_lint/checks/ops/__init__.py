"""TDL2xx: operations whose determinism depends on `torch.use_deterministic_algorithms`.

The matcher (`torchdet_lint.core.operations`) finds the catalog operations a call
performs; the three rules only phrase and filter its answers. One module per rule;
`op_findings` holds what they share.
"""
