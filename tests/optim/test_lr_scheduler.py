"""tscript.optim.lr_scheduler: learning-rate sequences against hand values and PyTorch (which they
must equal exactly: same recursive formulas), state_dict, and the misuse warnings."""
import math
import warnings

import pytest

import tscript as ts
from tscript import optim
from tscript.optim import lr_scheduler


def make_optimizer(lr=1.0, groups=1):
    return optim.SGD([{"params": [ts.nn.Parameter(ts.zeros(1))], "lr": lr * (i + 1)} for i in range(groups)],
                     lr=lr)


def lrs(scheduler, epochs):
    """The first-group learning rate at epochs 0..epochs-1 (optimizer.step before scheduler.step)."""
    out = []
    for _ in range(epochs):
        out.append(scheduler.get_last_lr()[0])
        scheduler.optimizer.step()
        scheduler.step()
    return out


def test_step_lr_by_hand():
    sched = lr_scheduler.StepLR(make_optimizer(1.0), step_size=2, gamma=0.5)
    assert lrs(sched, 7) == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]
    assert sched.last_epoch == 7 and sched.optimizer.param_groups[0]["lr"] == 0.125  # epoch 7 is odd


def test_multistep_lr_by_hand():
    sched = lr_scheduler.MultiStepLR(make_optimizer(1.0), milestones=[2, 5, 5], gamma=0.1)
    assert lrs(sched, 7) == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.1, 0.001, 0.001])


def test_exponential_and_lambda_lr_by_hand():
    assert lrs(lr_scheduler.ExponentialLR(make_optimizer(2.0), gamma=0.5), 4) == [2.0, 1.0, 0.5, 0.25]
    assert lrs(lr_scheduler.LambdaLR(make_optimizer(2.0), lambda e: 1 / (e + 1)), 4) == \
        pytest.approx([2.0, 1.0, 2 / 3, 0.5])


def test_lambda_lr_takes_one_function_per_group():
    opt = make_optimizer(1.0, groups=2)
    sched = lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 0.5 ** e])
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [1.0, 1.0]   # base lrs 1 and 2
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])


def test_cosine_annealing_follows_the_closed_form_and_comes_back_up():
    t_max, eta_min = 4, 0.1
    sched = lr_scheduler.CosineAnnealingLR(make_optimizer(1.0), T_max=t_max, eta_min=eta_min)
    expected = [eta_min + (1 - eta_min) * (1 + math.cos(math.pi * e / t_max)) / 2 for e in range(9)]
    assert lrs(sched, 9) == pytest.approx(expected, abs=1e-12)
    assert expected[4] == pytest.approx(eta_min) and expected[8] == pytest.approx(1.0)


def test_every_group_is_scheduled_from_its_own_initial_lr():
    opt = make_optimizer(1.0, groups=2)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    assert sched.base_lrs == [1.0, 2.0] and opt.param_groups[1]["initial_lr"] == 2.0
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.5, 1.0]


def test_state_dict_round_trip_resumes_the_schedule():
    sched = lr_scheduler.CosineAnnealingLR(make_optimizer(1.0), T_max=10)
    lrs(sched, 3)
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 3 and state["T_max"] == 10
    opt = make_optimizer(1.0)
    resumed = lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    resumed.load_state_dict(state)
    opt.param_groups[0]["lr"] = sched.get_last_lr()[0]
    assert lrs(resumed, 4) == lrs(sched, 4)


def test_lambda_state_dict_skips_plain_functions():
    class Schedule:
        def __init__(self):
            self.factor = 0.5

        def __call__(self, epoch):
            return self.factor ** epoch

    sched = lr_scheduler.LambdaLR(make_optimizer(1.0, groups=2), [lambda e: 1.0, Schedule()])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"factor": 0.5}]
    state["lr_lambdas"][1]["factor"] = 0.25
    sched.load_state_dict(state)
    assert sched.lr_lambdas[1].factor == 0.25


def test_step_with_an_epoch_uses_the_closed_form_with_a_warning():
    sched = lr_scheduler.StepLR(make_optimizer(1.0), step_size=2, gamma=0.5)
    sched.optimizer.step()
    with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(5)
    assert sched.get_last_lr() == [0.25] and sched.last_epoch == 5


def test_misuse_warnings():
    sched = lr_scheduler.StepLR(make_optimizer(1.0), step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    ok = lr_scheduler.StepLR(make_optimizer(1.0), step_size=2)
    ok.optimizer.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok.step()


def test_errors():
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.StepLR([], step_size=1)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        lr_scheduler.StepLR(make_optimizer(), step_size=1, last_epoch=3)


SCHEDULES = [
    ("StepLR", dict(step_size=3, gamma=0.3)),
    ("MultiStepLR", dict(milestones=[2, 6, 6, 9], gamma=0.5)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("CosineAnnealingLR", dict(T_max=7)),
]


@pytest.mark.parametrize("name,options", SCHEDULES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULES)])
def test_sequences_equal_pytorch(oracle, name, options):
    t_param = oracle.nn.Parameter(oracle.zeros(1))
    t_opt = oracle.optim.SGD([{"params": [t_param]}, {"params": [oracle.nn.Parameter(oracle.zeros(1))],
                                                       "lr": 0.3}], lr=0.1)
    t_sched = getattr(oracle.optim.lr_scheduler, name)(t_opt, **options)
    s_opt = optim.SGD([{"params": [ts.nn.Parameter(ts.zeros(1))]}, {"params": [ts.nn.Parameter(ts.zeros(1))],
                                                                     "lr": 0.3}], lr=0.1)
    s_sched = getattr(lr_scheduler, name)(s_opt, **options)
    for _ in range(25):
        assert s_sched.get_last_lr() == t_sched.get_last_lr()   # bit-identical
        t_opt.step()
        s_opt.step()
        t_sched.step()
        s_sched.step()
    assert s_sched.last_epoch == t_sched.last_epoch


def test_lambda_lr_equals_pytorch(oracle):
    fn = lambda epoch: 0.95 ** epoch + 0.1 * (epoch % 3)  # noqa: E731
    t_opt = oracle.optim.SGD([oracle.nn.Parameter(oracle.zeros(1))], lr=0.2)
    s_opt = optim.SGD([ts.nn.Parameter(ts.zeros(1))], lr=0.2)
    t_sched, s_sched = oracle.optim.lr_scheduler.LambdaLR(t_opt, fn), lr_scheduler.LambdaLR(s_opt, fn)
    for _ in range(10):
        assert s_sched.get_last_lr() == t_sched.get_last_lr()
        t_opt.step()
        s_opt.step()
        t_sched.step()
        s_sched.step()
