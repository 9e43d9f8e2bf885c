"""TDL4xx: the performance profile, the advice of the PyTorch tuning guides
(create on the device, share NumPy memory, pin host memory, DDP, `torch.amp`,
`no_grad` for inference, `cudnn.benchmark` for fixed shapes), with fixes.
One module per rule; TDL406 is a project rule over the entry points' reach.

The registry finds the rules in the package's modules; importing the package imports none
of them, so a run imports only the rules its files need.
"""
