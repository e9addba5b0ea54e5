"""`DistributedSampler`: the share of a dataset's indices that one of `num_replicas` processes reads.

tscript has no process group, so `num_replicas` and `rank` must be given (PyTorch asks the process
group otherwise, and raises the same error without one); with them it splits indices as PyTorch does:
padded by repeating (or cut with `drop_last`) to a multiple of `num_replicas`, then every
`num_replicas`-th index from `rank`. `set_epoch` reshuffles.
"""
from __future__ import annotations

import math

from tscript_runtime.ops.random import Generator

from ... import distributed as dist
from ..._creation import randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices of `dataset` for process `rank` of `num_replicas` (shuffled from `seed + epoch`)."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / max(len(indices), 1)))[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use `epoch` in the shuffle's seed, so every epoch gets a new order (the same in every process)."""
        self.epoch = epoch
