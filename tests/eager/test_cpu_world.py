"""The CPU-only world made explicit: what `torch.cuda`, `torch.backends`, `torch.accelerator`, devices,
`torch.jit.is_scripting/is_tracing`, `nn.parallel`, `amp`, `distributed`, `fx`, `utils.checkpoint`,
`SyncBatchNorm` and `hub` answer, as PyTorch 2.13 does on a machine without accelerators."""
import copy
import os

import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tests.conftest import assert_close


# -- devices and tensors --------------------------------------------------------------------------------------

def test_cuda_answers_no():
    assert ts.cuda.is_available() is False and ts.cuda.device_count() == 0 and not ts.cuda.is_initialized()
    assert ts.cuda.memory_allocated() == 0 and ts.cuda.max_memory_reserved() == 0
    assert not ts.cuda.is_bf16_supported()
    ts.cuda.manual_seed_all(0), ts.cuda.empty_cache()  # accepted: they concern no device
    for fn in (ts.cuda.current_device, ts.cuda.synchronize, ts.cuda.get_device_name, lambda: ts.cuda.set_device(0)):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            fn()
    with pytest.raises(RuntimeError, match="requires CUDA"):
        ts.cuda.Stream()
    with ts.cuda.stream(None), ts.cuda.device_of(ts.ones(1)):
        pass
    assert issubclass(ts.cuda.OutOfMemoryError, RuntimeError)


def test_the_usual_device_line_picks_the_cpu():
    device = "cuda" if ts.cuda.is_available() else "cpu"
    accel = ts.accelerator.current_accelerator() if ts.accelerator.is_available() else ts.device("cpu")
    assert ts.ones(2, device=device).device == accel == ts.device("cpu")


def test_accelerator_answers_none():
    assert not ts.accelerator.is_available() and ts.accelerator.device_count() == 0
    assert ts.accelerator.current_accelerator() is None
    assert ts.accelerator.current_accelerator(check_available=True) is None
    acc = ts.accelerator
    for fn in (acc.current_device_index, acc.synchronize, lambda: acc.set_device_index(0)):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            fn()
    with ts.accelerator.device_index(None):
        pass


def test_backend_flags_read_and_set():
    cudnn = ts.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)
    assert not cudnn.is_available() and cudnn.version() is None
    assert not ts.backends.mps.is_available() and not ts.backends.mps.is_built()
    assert ts.backends.cuda.matmul.allow_tf32 is False and not ts.backends.cuda.is_built()
    cudnn.benchmark = True
    ts.backends.cuda.matmul.allow_tf32 = True
    try:
        assert ts.backends.cudnn.benchmark and ts.backends.cuda.matmul.allow_tf32
        with cudnn.flags(enabled=False, deterministic=True):
            assert not cudnn.enabled and cudnn.deterministic
        assert cudnn.enabled and not cudnn.deterministic and cudnn.benchmark
    finally:
        cudnn.benchmark, ts.backends.cuda.matmul.allow_tf32 = False, False


def test_flags_match_torch(oracle):
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(ts.backends.cudnn, name) == getattr(oracle.backends.cudnn, name), name
    assert ts.backends.cuda.matmul.allow_tf32 == oracle.backends.cuda.matmul.allow_tf32
    assert ts.backends.mps.is_available() == oracle.backends.mps.is_available()
    assert ts.accelerator.is_available() == oracle.accelerator.is_available()
    assert ts.cuda.is_available() == oracle.cuda.is_available()


def test_tensors_are_on_the_cpu_and_no_accelerator():
    t = ts.ones(2)
    assert not (t.is_cuda or t.is_xpu or t.is_mps or t.is_meta or t.is_sparse or t.is_quantized) and t.is_cpu
    assert t.get_device() == -1 and not t.is_pinned()
    assert t.cpu() is t and t.to("cpu") is t and t.to(ts.device("cpu")) is t and t.to(device="cpu") is t


@pytest.mark.parametrize("move", [lambda t: t.cuda(), lambda t: t.to("cuda"), lambda t: t.to("cuda:0"),
                                  lambda t: t.to(ts.device("cuda")), lambda t: t.to("cuda", non_blocking=True),
                                  lambda t: t.to(device="cuda"), lambda t: ts.zeros(2, device="cuda")],
                         ids=["cuda()", "to(cuda)", "to(cuda:0)", "to(device)", "non_blocking", "device=", "factory"])
def test_moving_to_cuda_raises_pytorchs_assertion(move):
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled") as info:
        move(ts.ones(2))
    assert isinstance(info.value, RuntimeError)  # tscript's contract: every other device is a RuntimeError


def test_other_devices_raise_pytorchs_errors():
    with pytest.raises(AssertionError, match="Torch not compiled with XPU enabled"):
        ts.ones(2).xpu()
    with pytest.raises(RuntimeError, match="not linked with support for mps devices"):
        ts.ones(2).to("mps")
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        ts.ones(2).cuda(0)
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        ts.ones(2).pin_memory()


def test_same_exception_classes_as_torch(oracle):
    for move in (lambda m: m.ones(2).cuda(), lambda m: m.ones(2).to("cuda"), lambda m: m.ones(2).to("mps"),
                 lambda m: m.ones(2).xpu(), lambda m: m.device("nope"), lambda m: m.cuda.current_device()):
        with pytest.raises(Exception) as theirs:
            move(oracle)
        with pytest.raises(type(theirs.value)):
            move(ts)


def test_devices_can_be_named_like_pytorchs():
    d = ts.device("cuda", 1)
    assert (d.type, d.index, str(d), repr(d)) == ("cuda", 1, "cuda:1", "device(type='cuda', index=1)")
    assert ts.device("cuda:0") != ts.device("cuda") and ts.device("cuda:1") == d and ts.device(d) == d
    assert repr(ts.device("cpu")) == "device(type='cpu')" and ts.get_default_device() == ts.device("cpu")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ts.device("gpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        ts.device("cuda:x")


def test_module_cuda_raises_when_it_has_tensors():
    assert nn.Sequential().cuda() is not None  # nothing to move: as in PyTorch
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        nn.Linear(2, 2).cuda()
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        nn.Linear(2, 2).to("cuda")
    lin = nn.Linear(2, 2)
    assert lin.to("cpu") is lin and lin.cpu() is lin


# -- jit queries ------------------------------------------------------------------------------------------------

def test_is_scripting_is_false_eagerly_and_is_tracing_true_only_while_tracing():
    seen = []

    def f(x):
        seen.append((ts.jit.is_scripting(), ts.jit.is_tracing()))
        return x * 2

    f(ts.ones(2))
    traced = ts.jit.trace(f, ts.ones(2), check_trace=False)
    assert seen == [(False, False), (False, True)]
    assert traced(ts.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert not ts.jit.is_tracing()


def test_overload_declarations_return_the_function():
    class Net(nn.Module):
        @ts.jit._overload_method
        def forward(self, x: list) -> ts.Tensor:
            ...

        def forward(self, x):  # noqa: F811  (the definition that runs, as in torchvision's densenet)
            return ts.cat(x, 0) if isinstance(x, list) else x

    assert Net()([ts.ones(1), ts.zeros(1)]).tolist() == [1.0, 0.0]
    f = ts.jit._overload(len)
    assert f is len and ts.jit.annotate(int, 3) == 3 and ts.jit.script_if_tracing(abs)(-2) == 2
    from tscript.jit.annotations import List, Optional  # noqa: F401


# -- nn.parallel, SyncBatchNorm, distributed ----------------------------------------------------------------------

def test_data_parallel_is_a_pass_through_with_a_prefixed_state_dict():
    ts.manual_seed(0)
    inner = nn.Linear(3, 2)
    dp = nn.DataParallel(inner, device_ids=[0, 1])
    x = ts.randn(4, 3)
    assert dp.device_ids == [] and dp.module is inner
    assert_close(dp(x), inner(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert nn.parallel.DataParallel is nn.DataParallel
    assert_close(nn.parallel.data_parallel(inner, x, range(2)), inner(x))


def test_distributed_data_parallel_needs_a_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))


def test_distributed_is_a_single_process_without_a_group():
    dist = ts.distributed
    assert not dist.is_available() and not dist.is_initialized() and not dist.is_nccl_available()
    assert dist.group.WORLD is None and dist.ReduceOp.SUM.name == "SUM"
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier, lambda: dist.all_reduce(ts.ones(1))):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            fn()
    with pytest.raises(RuntimeError, match="single CPU process"):
        dist.init_process_group("gloo")
    from tscript import distributed  # noqa: F401  (`from torch import distributed` in library code)


def test_distributed_sampler_splits_indices_like_torch():
    ds = ts.utils.data.TensorDataset(ts.arange(10))
    assert list(ts.utils.data.DistributedSampler(ds, num_replicas=3, rank=1, shuffle=False)) == [1, 4, 7, 0]
    s = ts.utils.data.distributed.DistributedSampler(ds, num_replicas=3, rank=1, shuffle=False, drop_last=True)
    assert list(s) == [1, 4, 7] and len(s) == 3
    shuffled = ts.utils.data.DistributedSampler(ds, num_replicas=2, rank=0, seed=3)
    first = list(shuffled)
    assert len(first) == 5 and first == list(shuffled)
    shuffled.set_epoch(1)
    assert sorted(first + list(ts.utils.data.DistributedSampler(ds, num_replicas=2, rank=1, seed=3))) == list(range(10))
    with pytest.raises(ValueError, match="Default process group"):
        ts.utils.data.DistributedSampler(ds)
    with pytest.raises(ValueError, match="Invalid rank 2"):
        ts.utils.data.DistributedSampler(ds, num_replicas=2, rank=2)


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_sync_batchnorm_is_batchnorm_without_a_process_group(shape):
    ts.manual_seed(1)
    x = ts.randn(*shape)
    sync, ref = nn.SyncBatchNorm(3), {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d}[len(shape)](3)
    for mode in ("train", "eval"):
        getattr(sync, mode)(), getattr(ref, mode)()
        assert_close(sync(x), ref(x))
    assert_close(sync.running_mean, ref.running_mean) and int(sync.num_batches_tracked) == 1
    with pytest.raises(ValueError, match="expected at least 2D input"):
        sync(ts.ones(3))


def test_sync_batchnorm_subclasses_and_converts():
    class FrozenSync(nn.SyncBatchNorm):  # timm subclasses it
        pass

    assert FrozenSync(4, process_group=None).process_group is None
    net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(2)))
    net[1].running_mean.fill_(0.5)
    weight = net[1].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(net))
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert converted[1].running_mean.tolist() == [0.5] * 4
    assert nn.SyncBatchNorm.convert_sync_batchnorm(net)[1].weight is weight
    assert isinstance(converted[1], nn.modules.batchnorm._BatchNorm)


def test_sync_batchnorm_matches_torch(oracle):
    ts.manual_seed(2)
    x = ts.randn(4, 3, 5)
    ours, theirs = nn.SyncBatchNorm(3, momentum=0.3), oracle.nn.SyncBatchNorm(3, momentum=0.3)
    out = theirs(oracle.from_numpy(x.numpy().copy()))
    assert_close(ours(x), out.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert_close(ours.running_var, theirs.running_var.numpy())


# -- amp -------------------------------------------------------------------------------------------------------------

def test_autocast_cpu_is_a_context_manager_and_a_decorator_that_keeps_dtypes():
    lin, x = nn.Linear(3, 2), ts.randn(4, 3)
    assert not ts.is_autocast_enabled("cpu")
    with ts.autocast("cpu"):
        assert ts.is_autocast_enabled("cpu") and not ts.is_autocast_enabled()
        assert lin(x).dtype == ts.float32
        with ts.amp.autocast("cpu", enabled=False):
            assert not ts.is_autocast_enabled("cpu")
        assert ts.is_autocast_enabled("cpu")
    assert not ts.is_autocast_enabled("cpu")

    @ts.amp.autocast("cpu")
    def run(v):
        return ts.is_autocast_enabled("cpu"), lin(v)

    enabled, out = run(x)
    assert enabled and not ts.is_autocast_enabled("cpu")
    assert_close(out, lin(x))


def test_autocast_for_an_absent_device_warns_and_is_disabled():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = ts.autocast("cuda")
    with region:
        assert not ts.is_autocast_enabled("cuda")
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        with ts.cpu.amp.autocast():
            assert ts.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        ts.autocast("cpu", dtype=ts.float32)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ts.autocast(ts.device("cpu"))
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ts.autocast("gpu")


def test_grad_scaler_for_cuda_disables_itself():
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        scaler = ts.amp.GradScaler()
    lin = nn.Linear(2, 1)
    opt = ts.optim.SGD(lin.parameters(), lr=0.1)
    loss = lin(ts.ones(1, 2)).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    loss.backward()
    before = lin.weight.detach().numpy().copy()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(lin.weight.detach().numpy(), before - 0.1)  # the optimizer stepped, unscaled


def _train_steps(make_scaler, grads):
    """Two SGD steps with a scaler on a 1-parameter model whose (unscaled) gradient is `grads[i]`."""
    p = nn.Parameter(ts.tensor([1.0]))
    opt = ts.optim.SGD([p], lr=1.0)
    scaler = make_scaler()
    for g in grads:
        opt.zero_grad()
        scaler.scale((p * g).sum()).backward()
        scaler.step(opt)
        scaler.update()
    return p, scaler


def test_grad_scaler_on_the_cpu_scales_unscales_and_skips_infinite_steps():
    p, scaler = _train_steps(lambda: ts.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1), [0.5, 0.25])
    assert p.item() == pytest.approx(1.0 - 0.5 - 0.25) and scaler.get_scale() == 32.0
    p, scaler = _train_steps(lambda: ts.amp.GradScaler("cpu", init_scale=8.0), [float("inf"), 0.5])
    assert p.item() == pytest.approx(0.5) and scaler.get_scale() == 4.0  # the inf step was skipped, scale halved
    assert scaler.state_dict()["scale"] == 4.0


def test_grad_scaler_matches_torch(oracle):
    ours, _ = _train_steps(lambda: ts.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2), [1.0, 3.0, 0.5])
    p = oracle.nn.Parameter(oracle.tensor([1.0]))
    opt, scaler = oracle.optim.SGD([p], lr=1.0), oracle.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    for g in (1.0, 3.0, 0.5):
        opt.zero_grad()
        scaler.scale((p * g).sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert ours.item() == pytest.approx(p.item()) and scaler.get_scale() == 8.0


# -- fx, checkpoint, data, hub --------------------------------------------------------------------------------------

def test_fx_wrap_returns_its_argument():
    def leaf(x):
        return x

    assert ts.fx.wrap(leaf) is leaf and ts.fx.wrap("len") == "len"


def test_checkpoint_runs_the_function_with_the_same_gradients():
    ts.manual_seed(3)
    block = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))
    x = ts.randn(2, 3, requires_grad=True)
    out = ts.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
    out.sum().backward()
    grads = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
    block.zero_grad(), setattr(x, "grad", None)
    block(x).sum().backward()
    for a, b in zip(grads, [p.grad for p in block.parameters()] + [x.grad]):
        assert_close(a, b)
    seq = ts.utils.checkpoint.checkpoint_sequential(block, 2, x, use_reentrant=False)
    assert_close(seq, block(x))


def test_checkpoint_keeps_pytorchs_argument_rules():
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        ts.utils.checkpoint.checkpoint(lambda v: v * 2, ts.ones(2, requires_grad=True))
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        ts.utils.checkpoint.checkpoint(lambda v, scale: v * scale, ts.ones(2), scale=2, use_reentrant=True)
    lin = nn.Linear(2, 1)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = ts.utils.checkpoint.checkpoint(lin, ts.ones(1, 2), use_reentrant=True)
    assert not out.requires_grad  # reentrant checkpoint: no input needs grad, so the output does not either
    assert ts.utils.checkpoint.checkpoint(lin, ts.ones(1, 2), use_reentrant=False).requires_grad


def test_data_classes_are_generic_and_worker_info_is_none():
    class Indices(ts.utils.data.Sampler[int]):
        def __iter__(self):
            return iter([2, 0])

    assert list(Indices()) == [2, 0] and ts.utils.data.Dataset[int] is not None
    assert ts.utils.data.get_worker_info() is None
    with pytest.warns(UserWarning, match="no accelerator is found"):
        ts.utils.data.DataLoader(ts.utils.data.TensorDataset(ts.ones(2)), pin_memory=True)


def test_hub_downloads_once_and_loads_a_checkpoint(tmp_path):
    source = tmp_path / "weights-1234abcd.tsd"
    ts.save({"w": ts.arange(3.0)}, str(source))
    cache = tmp_path / "cache"
    url = source.as_uri()
    state = ts.hub.load_state_dict_from_url(url, model_dir=str(cache), progress=False)
    assert state["w"].tolist() == [0.0, 1.0, 2.0] and os.listdir(cache) == ["weights-1234abcd.tsd"]
    source.unlink()  # the second call reads the cached copy
    assert ts.hub.load_state_dict_from_url(url, model_dir=str(cache), progress=False)["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="invalid hash value"):
        ts.hub.download_url_to_file(cache.joinpath("weights-1234abcd.tsd").as_uri(), str(tmp_path / "x"), "ffff")
    assert not (tmp_path / "x").exists()


def test_hub_dir_follows_torch_home(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert ts.hub.get_dir() == os.path.join(str(tmp_path), "hub")
