"""`DataLoader`: iterate over a dataset in (optionally shuffled) mini-batches."""
from __future__ import annotations

import warnings
from typing import Callable

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, batched, check_batch_size


class DataLoader:
    """Batches of `dataset` samples merged by `collate_fn` (default: `default_collate`).

    Indices come from `sampler` (default: sequential, or a new random permutation each epoch with
    `shuffle=True`, drawn from `generator` or the default generator) grouped by `batch_size`
    (`batch_size=None`: no batching, samples pass through `default_convert`), or from a
    `batch_sampler`. Loading always runs in the main process: `num_workers > 0` is accepted (with a
    warning) and behaves like 0.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable | None = None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False):
        _check_worker_options(num_workers, timeout, persistent_workers)
        if pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", UserWarning, stacklevel=2)
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self.pin_memory = pin_memory
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        elif sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                                 "with drop_last")
        else:
            check_batch_size(batch_size)
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.batch_size, self.drop_last = batch_size, drop_last
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        """Whether samples are grouped into batches (else each sample is one item)."""
        return self.batch_size is not None if self._iterable else self.batch_sampler is not None

    def __iter__(self):
        if self._iterable:
            samples = iter(self.dataset)
            if self.batch_size is None:
                return map(self.collate_fn, samples)
            return map(self.collate_fn, batched(samples, self.batch_size, self.drop_last))
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return (self.collate_fn(self._fetch(indices)) for indices in self.batch_sampler)

    def _fetch(self, indices: list) -> list:
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def __len__(self) -> int:
        if not self._iterable:
            return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def get_worker_info():
    """None: samples are loaded in the main process (PyTorch's answer outside a worker)."""
    return None


def _check_worker_options(num_workers: int, timeout: float, persistent_workers: bool) -> None:
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                         "multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if num_workers > 0:
        warnings.warn(f"DataLoader: num_workers={num_workers} is not supported by tscript; samples are "
                      f"loaded in the main process", UserWarning, stacklevel=3)


def _check_iterable_options(shuffle, sampler, batch_sampler) -> None:
    for name, value, unset in (("shuffle", shuffle, (False, None)), ("sampler", sampler, (None,)),
                               ("batch_sampler", batch_sampler, (None,))):
        if not any(value is u for u in unset):
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                             f"{name}={value}")
