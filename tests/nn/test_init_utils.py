"""nn.init (bounds and statistics of every initialiser against PyTorch's formulas, the gain table,
orthogonality) and nn.utils (gradient clipping, parameters <-> vector), by hand and against PyTorch."""
import math

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tscript import nn
from tscript.nn import init
from tscript.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters

GAINS = {"linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "conv_transpose1d": 1.0,
         "conv_transpose2d": 1.0, "conv_transpose3d": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3,
         "relu": math.sqrt(2.0), "selu": 0.75, "leaky_relu": math.sqrt(2.0 / (1 + 0.01 ** 2))}


def sample(fn, shape=(300, 200), **kwargs):
    """Initialise a fresh parameter with `fn` and return its values."""
    p = nn.Parameter(ts.empty(*shape))
    out = fn(p, **kwargs)
    assert out is p and p.requires_grad and p.grad_fn is None
    return p.detach().numpy().astype(np.float64)


def assert_uniform(values, bound):
    """Values inside [-bound, bound], spread over it, with the uniform distribution's std."""
    assert values.min() >= -bound and values.max() <= bound
    assert values.max() > 0.99 * bound and values.min() < -0.99 * bound
    assert abs(values.mean()) < 0.02 * bound
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)


def assert_normal(values, std, mean=0.0):
    assert values.mean() == pytest.approx(mean, abs=0.02 * std)
    assert values.std() == pytest.approx(std, rel=0.02)


# -- gains and fans ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(GAINS))
def test_calculate_gain_table(name):
    assert init.calculate_gain(name) == pytest.approx(GAINS[name], rel=1e-15)


def test_calculate_gain_leaky_relu_slope_and_errors():
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("leaky_relu", 1) == 1.0
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")


def test_gain_table_matches_pytorch(oracle):
    for name in GAINS:
        assert init.calculate_gain(name) == pytest.approx(oracle.nn.init.calculate_gain(name), rel=1e-15)
    assert init.calculate_gain("leaky_relu", 0.3) == oracle.nn.init.calculate_gain("leaky_relu", 0.3)


def test_fans_need_two_dims():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
        init.xavier_uniform_(ts.empty(5))


# -- distributions --------------------------------------------------------------------------------------------

def test_uniform_normal_constant():
    assert_uniform(sample(init.uniform_, a=-2.0, b=2.0), 2.0)
    assert_normal(sample(init.normal_, mean=1.5, std=0.5), 0.5, mean=1.5)
    assert (sample(init.constant_, val=0.25) == 0.25).all()
    assert (sample(init.zeros_) == 0).all() and (sample(init.ones_) == 1).all()


def test_xavier_bounds_use_fan_in_plus_fan_out():
    # a conv weight (80, 40, 5, 5): fan_in = 40 * 25 = 1000, fan_out = 80 * 25 = 2000
    bound = 0.5 * math.sqrt(6.0 / 3000)
    assert_uniform(sample(init.xavier_uniform_, shape=(80, 40, 5, 5), gain=0.5), bound)
    assert_normal(sample(init.xavier_normal_, shape=(80, 40, 5, 5), gain=2.0), 2.0 * math.sqrt(2.0 / 3000))


@pytest.mark.parametrize("mode,fan", [("fan_in", 200), ("fan_out", 300), ("FAN_OUT", 300)])
def test_kaiming_uses_the_gain_of_the_nonlinearity_and_the_chosen_fan(mode, fan):
    gain = math.sqrt(2.0)
    assert_uniform(sample(init.kaiming_uniform_, mode=mode, nonlinearity="relu"), gain * math.sqrt(3.0 / fan))
    assert_normal(sample(init.kaiming_normal_, mode=mode, nonlinearity="relu"), gain / math.sqrt(fan))


def test_kaiming_leaky_relu_slope_a():
    gain = math.sqrt(2.0 / (1 + 5))   # a = sqrt(5): Linear's default initialisation
    assert_uniform(sample(init.kaiming_uniform_, a=math.sqrt(5)), gain * math.sqrt(3.0 / 200))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ts.empty(3, 3), mode="fan_avg")


def test_kaiming_on_an_empty_tensor_is_a_no_op_with_a_warning():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(ts.empty(0, 3)).shape == (0, 3)


def test_linear_default_initialisation_bounds():
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    assert_uniform(layer.weight.detach().numpy().astype(np.float64), bound)
    assert np.abs(layer.bias.detach().numpy()).max() <= bound


def test_trunc_normal_stays_inside_its_bounds():
    values = sample(init.trunc_normal_, mean=0.0, std=1.0, a=-1.0, b=2.0)
    assert values.min() >= -1.0 and values.max() <= 2.0
    # mean of N(0, 1) truncated to [-1, 2]: (phi(-1) - phi(2)) / (Phi(2) - Phi(-1))
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    assert values.mean() == pytest.approx((phi(-1) - phi(2)) / (cdf(2) - cdf(-1)), abs=0.02)


def test_generators_make_initialisation_reproducible():
    a = sample(init.kaiming_uniform_, generator=ts.Generator().manual_seed(3))
    b = sample(init.kaiming_uniform_, generator=ts.Generator().manual_seed(3))
    np.testing.assert_array_equal(a, b)
    ts.manual_seed(5)
    c = sample(init.normal_)
    ts.manual_seed(5)
    np.testing.assert_array_equal(c, sample(init.normal_))


def test_eye():
    values = sample(init.eye_, shape=(2, 3))
    np.testing.assert_array_equal(values, np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ts.empty(2, 2, 2))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (8, 2, 3, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    q = sample(init.orthogonal_, shape=shape, gain=2.0).reshape(shape[0], -1) / 2.0
    rows, cols = q.shape
    gram = q.T @ q if rows >= cols else q @ q.T
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-5)


def test_orthogonal_edge_cases():
    assert init.orthogonal_(ts.empty(0, 3)).shape == (0, 3)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(ts.empty(3))


def test_init_bumps_the_version_and_records_no_graph():
    p = nn.Parameter(ts.empty(3, 3))
    before = p._version
    init.xavier_uniform_(p)
    assert p._version > before and p.grad_fn is None and p.is_leaf


# -- clip_grad ------------------------------------------------------------------------------------------------

def with_grads(*grads):
    params = []
    for g in grads:
        p = nn.Parameter(ts.zeros(len(g)))
        p.grad = ts.tensor(g)
        params.append(p)
    return params


def test_clip_grad_norm_by_hand():
    params = with_grads([3.0, 4.0], [12.0])          # total 2-norm 13
    total = clip_grad_norm_(params, max_norm=6.5)
    assert total.item() == pytest.approx(13.0) and total.dtype == ts.float32
    scale = 6.5 / (13.0 + 1e-6)
    assert_close(params[0].grad, np.array([3.0, 4.0], np.float32) * np.float32(scale))
    assert_close(params[1].grad, np.array([12.0], np.float32) * np.float32(scale))


def test_clip_grad_norm_leaves_small_gradients_and_skips_missing_ones():
    params = with_grads([0.3, 0.4]) + [nn.Parameter(ts.zeros(2))]
    assert clip_grad_norm_(params, 1.0).item() == pytest.approx(0.5)
    assert params[0].grad.tolist() == pytest.approx([0.3, 0.4]) and params[1].grad is None
    assert clip_grad_norm_([nn.Parameter(ts.zeros(1))], 1.0).item() == 0.0


def test_clip_grad_norm_other_norms_and_a_single_tensor():
    assert clip_grad_norm_(with_grads([1.0, -5.0], [2.0]), 1.0, norm_type="inf").item() == 5.0
    assert clip_grad_norm_(with_grads([1.0, -5.0], [2.0]), 100.0, norm_type=1).item() == 8.0
    (p,) = with_grads([6.0, 8.0])
    assert clip_grad_norm_(p, 5.0).item() == pytest.approx(10.0)
    assert p.grad.tolist() == pytest.approx([3.0, 4.0], rel=1e-6)


def test_clip_grad_norm_nonfinite():
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        clip_grad_norm_(with_grads([float("nan"), 1.0]), 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_(with_grads([float("inf")]), 1.0).item())


def test_clip_grad_value():
    params = with_grads([-3.0, 0.5, 2.0])
    assert clip_grad_value_(params, 1.0) is None
    assert params[0].grad.tolist() == [-1.0, 0.5, 1.0]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_clip_grad_norm_matches_pytorch(oracle, norm_type):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,), (2, 2, 2)]]
    t_params = [oracle.nn.Parameter(oracle.zeros(g.shape)) for g in grads]
    s_params = [nn.Parameter(ts.zeros(*g.shape)) for g in grads]
    for tp, sp, g in zip(t_params, s_params, grads):
        tp.grad, sp.grad = oracle.tensor(g), ts.tensor(g)
    expected = oracle.nn.utils.clip_grad_norm_(t_params, 0.7, norm_type)
    assert_close(clip_grad_norm_(s_params, 0.7, norm_type), expected, rtol=1e-5)
    for tp, sp in zip(t_params, s_params):
        assert_close(sp.grad, tp.grad)
    oracle.nn.utils.clip_grad_value_(t_params, 0.01)
    clip_grad_value_(s_params, 0.01)
    for tp, sp in zip(t_params, s_params):
        assert_close(sp.grad, tp.grad)


# -- parameters <-> vector ------------------------------------------------------------------------------------

def test_parameters_to_vector_and_back():
    layer = nn.Linear(3, 2)
    vec = parameters_to_vector(layer.parameters())
    assert vec.shape == (8,)
    assert_close(vec[:6].detach(), layer.weight.detach().reshape(-1))
    assert_close(vec[6:].detach(), layer.bias.detach())
    new = ts.arange(8.0)
    vector_to_parameters(new, layer.parameters())
    assert layer.weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and layer.bias.tolist() == [6.0, 7.0]
    new[7] = 70.0   # as PyTorch, the parameters now share memory with the vector
    assert layer.bias.tolist() == [6.0, 70.0]


def test_parameters_to_vector_is_differentiable():
    layer = nn.Linear(2, 1)
    (parameters_to_vector(layer.parameters()) ** 2).sum().backward()
    assert_close(layer.weight.grad, 2 * layer.weight.detach())


def test_vector_to_parameters_errors():
    layer = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="expected a 1-D Tensor, but got list"):
        vector_to_parameters([0.0] * 8, layer.parameters())
    with pytest.raises(RuntimeError, match="vector has 5 elements, parameters need 8"):
        vector_to_parameters(ts.zeros(5), layer.parameters())


def test_parameters_to_vector_matches_pytorch(oracle):
    oracle.manual_seed(0)
    t_layer = oracle.nn.Linear(4, 3)
    s_layer = nn.Linear(4, 3)
    s_layer.load_state_dict({k: ts.tensor(v.numpy()) for k, v in t_layer.state_dict().items()})
    assert_close(parameters_to_vector(s_layer.parameters()),
                 oracle.nn.utils.parameters_to_vector(t_layer.parameters()))
