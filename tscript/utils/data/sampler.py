"""Samplers: iterables of dataset indices (or of index batches) that a DataLoader draws from."""
from __future__ import annotations

import itertools
from typing import Generic, Iterable, Sequence, TypeVar

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses implement `__iter__` over indices (and `__len__` when known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (or `num_samples` draws with replacement), from
    `generator` or the default generator (so `tscript.manual_seed` makes it reproducible)."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from ..._creation import randint, randperm
        n = len(self.data_source)
        if self.replacement:
            return iter(randint(n, (self.num_samples,), generator=self.generator).tolist())
        rounds = -(-self.num_samples // n)
        perms = [randperm(n, generator=self.generator).tolist() for _ in range(rounds)]
        return iter(list(itertools.chain.from_iterable(perms))[:self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        from ..._creation import randperm
        return iter([self.indices[i] for i in randperm(len(self.indices), generator=self.generator).tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one shorter, or
    dropped with `drop_last`)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        check_batch_size(batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        return batched(iter(self.sampler), self.batch_size, self.drop_last)

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)


def batched(items, size: int, drop_last: bool):
    """Lists of `size` consecutive items of the iterator `items`; the last shorter one is dropped
    with `drop_last`."""
    batch = list(itertools.islice(items, size))
    while batch and (len(batch) == size or not drop_last):
        yield batch
        batch = list(itertools.islice(items, size))


def check_batch_size(batch_size) -> None:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
