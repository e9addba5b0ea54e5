"""tscript.utils.data: datasets, samplers, default_collate and DataLoader batching, shuffling,
drop_last and collate_fn, with PyTorch's batch structure as the oracle."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tscript.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                                RandomSampler, SequentialSampler, Subset, TensorDataset, default_collate,
                                random_split)


def xy(n=10):
    return TensorDataset(ts.arange(2.0 * n).reshape(n, 2), ts.arange(n))


class Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": float(i), "y": i * i, "name": f"s{i}"}


# -- datasets -----------------------------------------------------------------------------------------------

def test_tensor_dataset_indexes_every_tensor():
    ds = xy(4)
    assert len(ds) == 4
    x, y = ds[2]
    assert x.tolist() == [4.0, 5.0] and y.item() == 2


def test_tensor_dataset_size_mismatch():
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(ts.zeros(3, 2), ts.zeros(4))
    with pytest.raises(AssertionError):   # PyTorch's exception type, for code that catches it
        TensorDataset(ts.zeros(3, 2), ts.zeros(4))


def test_subset_concat_and_random_split():
    ds = xy(10)
    sub = Subset(ds, [3, 1])
    assert len(sub) == 2 and sub[0][1].item() == 3
    both = ds + sub
    assert isinstance(both, ConcatDataset) and len(both) == 12 and both[11][1].item() == 1 and both[-1][1].item() == 1
    ts.manual_seed(0)
    parts = random_split(ds, [7, 3])
    indices = parts[0].indices + parts[1].indices
    assert [len(p) for p in parts] == [7, 3] and sorted(indices) == list(range(10))
    ts.manual_seed(0)
    assert random_split(ds, [7, 3])[1].indices == parts[1].indices
    assert [len(p) for p in random_split(ds, [0.5, 0.3, 0.2])] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset"):
        random_split(ds, [5, 4])


# -- samplers -------------------------------------------------------------------------------------------------

def test_batch_sampler():
    assert list(BatchSampler(SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(SequentialSampler(range(7)), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(7), 0, False)


def test_random_sampler_is_a_seeded_permutation():
    gen = ts.Generator().manual_seed(4)
    first = list(RandomSampler(range(8), generator=gen))
    assert sorted(first) == list(range(8))
    assert list(RandomSampler(range(8), generator=ts.Generator().manual_seed(4))) == first
    draws = list(RandomSampler(range(3), replacement=True, num_samples=20, generator=gen))
    assert len(draws) == 20 and set(draws) <= {0, 1, 2}


# -- default_collate ------------------------------------------------------------------------------------------

def test_default_collate_stacks_converts_and_recurses():
    Point = namedtuple("Point", "a b")
    batch = default_collate([(ts.tensor([1.0, 2.0]), 3, 0.5, True, "u", Point(1, np.float32(2))),
                             (ts.tensor([3.0, 4.0]), 4, 1.5, False, "v", Point(5, np.float32(6)))])
    assert isinstance(batch, list) and len(batch) == 6   # tuples collate to a list (as PyTorch)
    assert_close(batch[0], np.array([[1, 2], [3, 4]], np.float32))
    assert_close(batch[1], np.array([3, 4], np.int64))
    assert_close(batch[2], np.array([0.5, 1.5], np.float64))
    assert_close(batch[3], np.array([True, False]))
    assert batch[4] == ["u", "v"]
    assert isinstance(batch[5], Point) and batch[5].b.dtype == ts.float32 and batch[5].a.tolist() == [1, 5]


def test_default_collate_dicts_lists_and_arrays():
    out = default_collate([OrderedDict(x=np.ones((2,), np.float32), y=[1, 2]),
                           OrderedDict(x=np.zeros((2,), np.float32), y=[3, 4])])
    assert type(out) is OrderedDict and list(out) == ["x", "y"]
    assert_close(out["x"], np.array([[1, 1], [0, 0]], np.float32))
    assert [t.tolist() for t in out["y"]] == [[1, 3], [2, 4]]


def test_default_collate_errors():
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                                        "found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([ts.zeros(2), ts.zeros(3)])


# -- DataLoader -----------------------------------------------------------------------------------------------

def test_batches_in_order_with_a_short_last_batch():
    loader = DataLoader(xy(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2) and batches[0][0].dtype == ts.float32


def test_drop_last():
    loader = DataLoader(xy(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_reproducible_with_manual_seed_and_a_generator():
    def epoch(loader):
        return [i for _, y in loader for i in y.tolist()]

    ts.manual_seed(0)
    loader = DataLoader(xy(10), batch_size=3, shuffle=True)
    first, second = epoch(loader), epoch(loader)
    assert sorted(first) == list(range(10)) and first != second   # a new permutation each epoch
    ts.manual_seed(0)
    assert epoch(DataLoader(xy(10), batch_size=3, shuffle=True)) == first
    a = DataLoader(xy(10), batch_size=3, shuffle=True, generator=ts.Generator().manual_seed(7))
    b = DataLoader(xy(10), batch_size=3, shuffle=True, generator=ts.Generator().manual_seed(7))
    assert epoch(a) == epoch(b)


def test_collate_fn_and_dict_samples():
    loader = DataLoader(Squares(), batch_size=2, collate_fn=lambda samples: [s["y"] for s in samples])
    assert list(loader) == [[0, 1], [4, 9], [16]]
    batch = next(iter(DataLoader(Squares(), batch_size=3)))
    assert batch["x"].dtype == ts.float64 and batch["y"].tolist() == [0, 1, 4] and batch["name"] == ["s0", "s1", "s2"]


def test_no_batching_and_custom_samplers():
    samples = list(DataLoader(xy(3), batch_size=None))
    assert len(samples) == 3 and isinstance(samples[0], list) and samples[2][1].item() == 2
    loader = DataLoader(xy(6), batch_size=2, sampler=[5, 4, 3, 2])
    assert [b[1].tolist() for b in loader] == [[5, 4], [3, 2]] and len(loader) == 2
    loader = DataLoader(xy(6), batch_sampler=[[0, 5], [1]])
    assert [b[1].tolist() for b in loader] == [[0, 5], [1]]


def test_getitems_fetches_a_whole_batch():
    class Batched(Dataset):
        def __len__(self):
            return 4

        def __getitems__(self, indices):
            return [ts.tensor(float(i)) for i in indices]

    assert [b.tolist() for b in DataLoader(Batched(), batch_size=3)] == [[0.0, 1.0, 2.0], [3.0]]


def test_iterable_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(5))

        def __len__(self):
            return 5

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert len(DataLoader(Stream(), batch_size=2, drop_last=True)) == 2
    with pytest.raises(ValueError, match="IterableDataset: expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_num_workers_runs_in_the_main_process():
    with pytest.warns(UserWarning, match="num_workers=2 is not supported"):
        loader = DataLoader(xy(4), batch_size=2, num_workers=2)
    assert len(list(loader)) == 2


@pytest.mark.parametrize("kwargs,message", [
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    (dict(batch_size=0), "batch_size should be a positive integer value, but got batch_size=0"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(xy(4), **kwargs)


def test_batch_structure_matches_pytorch(oracle):
    data = oracle.utils.data
    x, y = np.arange(20, dtype=np.float32).reshape(10, 2), np.arange(10)
    t_batches = list(data.DataLoader(data.TensorDataset(oracle.tensor(x), oracle.tensor(y)), batch_size=4))
    s_batches = list(DataLoader(TensorDataset(ts.tensor(x), ts.tensor(y)), batch_size=4))
    assert len(t_batches) == len(s_batches)
    for tb, sb in zip(t_batches, s_batches):
        assert type(tb) is type(sb)
        for t, s in zip(tb, sb):
            assert_close(s, t)
    samples = [{"a": 1.5, "b": (2, np.float32(3))}, {"a": 2.5, "b": (4, np.float32(5))}]
    t_out, s_out = data.default_collate(samples), default_collate(samples)
    assert type(t_out["b"]) is type(s_out["b"])
    assert_close(s_out["a"], t_out["a"])
    for t, s in zip(t_out["b"], s_out["b"]):
        assert_close(s, t)
