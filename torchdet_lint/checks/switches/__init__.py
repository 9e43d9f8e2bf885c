"""TDL3xx: the global determinism switches (cuDNN flags, deterministic mode,
cuBLAS workspace), in every spelling: `torch.backends.cudnn.benchmark`,
`from torch.backends import cudnn`, aliases, Lightning's `Trainer(...)`.
One module per rule; `switch_settings` reads the switches for all of them.
"""
