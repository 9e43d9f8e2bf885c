"""TDL1xx data loading: shuffling without a seeded generator, workers that copy
the dataset's RNG objects, out-of-order loading, unseeded splits and samplers,
`set_epoch`, unsorted file listings, sets of strings put in hash order. One module per rule.
"""

from torchdet_lint.checks.dataloader.dataloader_out_of_order import DataLoaderOutOfOrder
from torchdet_lint.checks.dataloader.dataloader_without_generator import DataLoaderWithoutGenerator
from torchdet_lint.checks.dataloader.dataloader_without_worker_init import DataLoaderWithoutWorkerInit
from torchdet_lint.checks.dataloader.distributed_sampler_without_set_epoch import DistributedSamplerWithoutSetEpoch
from torchdet_lint.checks.dataloader.unordered_file_listing import UnorderedFileListing
from torchdet_lint.checks.dataloader.unordered_set_iteration import UnorderedSetIteration
from torchdet_lint.checks.dataloader.unseeded_random_split import UnseededRandomSplit

__all__ = [
    "DataLoaderWithoutGenerator",
    "DataLoaderWithoutWorkerInit",
    "DataLoaderOutOfOrder",
    "UnseededRandomSplit",
    "DistributedSamplerWithoutSetEpoch",
    "UnorderedFileListing",
    "UnorderedSetIteration",
]
