"""TDL1xx data loading: shuffling without a seeded generator, workers that copy
the dataset's RNG objects, out-of-order loading, unseeded splits and samplers,
`set_epoch`, unsorted file listings, sets of strings put in hash order. One module per rule.
"""

from torchdet_lint.checks.dataloader.file_listing import UnorderedFileListing
from torchdet_lint.checks.dataloader.generator import DataLoaderWithoutGenerator
from torchdet_lint.checks.dataloader.out_of_order import DataLoaderOutOfOrder
from torchdet_lint.checks.dataloader.random_split import UnseededRandomSplit
from torchdet_lint.checks.dataloader.set_epoch import DistributedSamplerWithoutSetEpoch
from torchdet_lint.checks.dataloader.set_order import UnorderedSetIteration
from torchdet_lint.checks.dataloader.worker_init import DataLoaderWithoutWorkerInit

__all__ = [
    "DataLoaderWithoutGenerator",
    "DataLoaderWithoutWorkerInit",
    "DataLoaderOutOfOrder",
    "UnseededRandomSplit",
    "DistributedSamplerWithoutSetEpoch",
    "UnorderedFileListing",
    "UnorderedSetIteration",
]
