"""TDL4xx: the performance profile, the advice of the PyTorch tuning guides
(create on the device, share NumPy memory, pin host memory, DDP, `torch.amp`,
`no_grad` for inference, `cudnn.benchmark` for fixed shapes), with fixes.
One module per rule; TDL406 is a project rule over the entry points' reach.
"""

from torchdet_lint.checks.performance.create_then_move import CreateThenMove
from torchdet_lint.checks.performance.cudnn_benchmark_off_for_speed import (
    CudnnBenchmarkOffForSpeed,
)
from torchdet_lint.checks.performance.data_parallel import DataParallelUsed
from torchdet_lint.checks.performance.dataloader_without_pin_memory import DataLoaderWithoutPinMemory
from torchdet_lint.checks.performance.deprecated_cuda_amp import DeprecatedCudaAmp
from torchdet_lint.checks.performance.inference_without_no_grad import InferenceWithoutNoGrad
from torchdet_lint.checks.performance.tensor_copies_numpy import TensorCopiesNumpy

__all__ = [
    "TensorCopiesNumpy",
    "CreateThenMove",
    "DataLoaderWithoutPinMemory",
    "DataParallelUsed",
    "DeprecatedCudaAmp",
    "CudnnBenchmarkOffForSpeed",
    "InferenceWithoutNoGrad",
]
