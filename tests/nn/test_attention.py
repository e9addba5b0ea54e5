"""scaled_dot_product_attention, MultiheadAttention, TransformerEncoderLayer / TransformerEncoder:
numpy references and hand checks, PyTorch's names, init, reprs and errors, and outputs and gradients
against PyTorch with identical weights (oracle)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close

RNG = np.random.default_rng(1)
TOL = dict(rtol=1e-4, atol=1e-5)


def data(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_attention(q, k, v, bias=None, scale=None):
    scores = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    return np_softmax(scores if bias is None else scores + bias) @ v


def copy_weights(torch_module, ours):
    """Load a PyTorch module's state_dict into ours (strict: names and shapes must agree)."""
    ours.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})


def as_lib(lib, value, requires_grad=False):
    """numpy arrays as tensors of `lib` (tscript or torch); other values unchanged."""
    if isinstance(value, np.ndarray):
        return lib.tensor(value, requires_grad=requires_grad and value.dtype.kind == "f")
    return value


# -- scaled_dot_product_attention ---------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), L=st.integers(1, 5), S=st.integers(1, 5),
       E=st.integers(1, 6), Ev=st.integers(1, 4))
def test_sdpa_matches_numpy(batch, L, S, E, Ev):
    q, k, v = data(*batch, L, E), data(*batch, S, E), data(*batch, S, Ev)
    out = F.scaled_dot_product_attention(ts.tensor(q), ts.tensor(k), ts.tensor(v))
    assert_close(out, np_attention(q, k, v), **TOL)


def test_sdpa_masks_scale_and_causal():
    q, k, v = data(2, 4, 3), data(2, 6, 3), data(2, 6, 5)
    allowed = RNG.random((4, 6)) > 0.4
    allowed[:, 0] = True
    bias = np.where(allowed, 0, -np.inf).astype(np.float32)
    tq, tk, tv = ts.tensor(q), ts.tensor(k), ts.tensor(v)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=ts.tensor(allowed)),
                 np_attention(q, k, v, bias), **TOL)
    float_mask = data(4, 6)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=ts.tensor(float_mask)),
                 np_attention(q, k, v, float_mask), **TOL)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv, scale=0.3), np_attention(q, k, v, scale=0.3), **TOL)
    causal = np.where(np.tril(np.ones((4, 6), bool)), 0, -np.inf).astype(np.float32)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv, is_causal=True), np_attention(q, k, v, causal), **TOL)


def test_sdpa_fully_masked_row_gives_zero_with_finite_gradients():
    q, k, v = (ts.tensor(data(3, 4), requires_grad=True) for _ in range(3))
    allowed = ts.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    assert np.all(out.detach().numpy()[1] == 0)
    out.sum().backward()
    for t in (q, k, v):
        assert np.isfinite(t.grad.detach().numpy()).all()
    assert np.all(q.grad.detach().numpy()[1] == 0)


def test_sdpa_dropout():
    q, k, v = (ts.tensor(data(2, 5, 4)) for _ in range(3))
    assert np.all(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).detach().numpy() == 0)
    ts.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    ts.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert_close(a, b)
    assert not np.allclose(a.detach().numpy(), F.scaled_dot_product_attention(q, k, v).detach().numpy())


@pytest.mark.parametrize("call, fragment", [
    (lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=ts.ones(4, 4, dtype=ts.bool), is_causal=True),
     "Explicit attn_mask should not be set when is_causal=True"),
    (lambda q: F.scaled_dot_product_attention(q[0, 0], q[0, 0], q[0, 0]),
     "Expected query, key, and value to all be at least 2 dimensional"),
    (lambda q: F.scaled_dot_product_attention(q, q, q.double()),
     "Expected query, key, and value to have the same dtype"),
    (lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=ts.zeros(4, 4, dtype=ts.int64)),
     "Expected attn_mask dtype to be bool or float or to match query dtype"),
    (lambda q: F.scaled_dot_product_attention(q, q[..., :3], q), "query (..., L, E), key (..., S, E)"),
    (lambda q: F.scaled_dot_product_attention(q, q, q[:, :3]), "do not fit"),
    (lambda q: F.scaled_dot_product_attention(q.long(), q.long(), q.long()), "expected floating point"),
    (lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=1.5),
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=ts.zeros(3, 4)),
     "The size of tensor a (4) must match the size of tensor b (3)"),
])
def test_sdpa_errors(call, fragment):
    with pytest.raises(RuntimeError) as info:
        call(ts.tensor(data(2, 4, 8)))
    assert fragment in str(info.value)


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(attn_mask="bool"), dict(attn_mask="float"),
                                dict(scale=0.25), dict(enable_gqa=True), dict(dtype=np.float64)])
def test_sdpa_matches_pytorch(oracle, kw):
    torch = oracle
    kw = dict(kw)
    dtype = kw.pop("dtype", np.float32)
    heads_kv = 1 if kw.get("enable_gqa") else 3
    arrays = [data(2, 3, 4, 8, dtype=dtype), data(2, heads_kv, 6, 8, dtype=dtype), data(2, heads_kv, 6, 5, dtype=dtype)]
    if kw.get("attn_mask") == "bool":
        kw["attn_mask"] = RNG.random((4, 6)) > 0.5
        kw["attn_mask"][1] = False  # a fully masked row
    elif kw.get("attn_mask") == "float":
        kw["attn_mask"] = data(2, 1, 4, 6)
    results = []
    for lib in (ts, torch):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **{n: as_lib(lib, a) for n, a in kw.items()})
        (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(dtype))).sum().backward()
        results.append([out, q.grad, k.grad, v.grad])
    for a, b in zip(*results):
        assert_close(a, b, **TOL)


# -- MultiheadAttention: structure ----------------------------------------------------------------------

def test_mha_parameters_init_and_repr():
    m = ts.nn.MultiheadAttention(8, 2)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == [
        ("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)), ("out_proj.bias", (8,))]
    assert np.all(m.in_proj_bias.detach().numpy() == 0) and np.all(m.out_proj.bias.detach().numpy() == 0)
    bound = math.sqrt(6 / (24 + 8))  # xavier uniform of the packed (3E, E) weight
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    assert m.head_dim == 4 and m._qkv_same_embed_dim and m.bias_k is None and m.q_proj_weight is None
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
                       "out_features=8, bias=True)\n)")
    m2 = ts.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, bias=False)
    assert [(k, tuple(v.shape)) for k, v in m2.state_dict().items()] == [
        ("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 3)), ("v_proj_weight", (8, 5)), ("bias_k", (1, 1, 8)),
        ("bias_v", (1, 1, 8)), ("out_proj.weight", (8, 8))]
    assert m2.in_proj_weight is None and m2.in_proj_bias is None


def identity_mha(E):
    """One head, identity projections, zero biases: attention is plain softmax(q k^T / sqrt(E)) v."""
    m = ts.nn.MultiheadAttention(E, 1)
    eye = np.eye(E, dtype=np.float32)
    m.load_state_dict({"in_proj_weight": ts.tensor(np.concatenate([eye] * 3)), "in_proj_bias": ts.zeros(3 * E),
                       "out_proj.weight": ts.tensor(eye), "out_proj.bias": ts.zeros(E)})
    return m


def test_mha_with_identity_projections_is_plain_attention():
    q, k = data(3, 2, 4), data(5, 2, 4)
    out, w = identity_mha(4)(ts.tensor(q), ts.tensor(k), ts.tensor(k))
    ref_w = np_softmax(np.einsum("lbe,sbe->bls", q, k) / 2.0)
    assert_close(w, ref_w, **TOL)
    assert_close(out, np.einsum("bls,sbe->lbe", ref_w, k), **TOL)


def test_mha_weights_sum_to_one_and_respect_masks():
    m = ts.nn.MultiheadAttention(6, 3)
    x = ts.tensor(data(4, 2, 6))
    padding = ts.tensor([[False, False, True, True], [False, False, False, True]])
    _, w = m(x, x, x, key_padding_mask=padding)
    assert w.shape == (2, 4, 4)
    assert_close(w.sum(-1), np.ones((2, 4), np.float32))
    assert np.all(w.detach().numpy()[0, :, 2:] == 0) and np.all(w.detach().numpy()[1, :, 3] == 0)
    _, per_head = m(x, x, x, attn_mask=ts.ones(4, 4, dtype=ts.bool).triu(1), average_attn_weights=False)
    assert per_head.shape == (2, 3, 4, 4)
    assert_close(per_head.sum(-1), np.ones((2, 3, 4), np.float32))
    assert np.all(np.triu(per_head.detach().numpy(), 1) == 0)


def test_mha_bool_and_float_masks_agree_and_batch_first_transposes():
    m = ts.nn.MultiheadAttention(8, 2)
    x = data(5, 3, 8)
    blocked = RNG.random((5, 5)) > 0.6
    np.fill_diagonal(blocked, False)
    out_b, w_b = m(ts.tensor(x), ts.tensor(x), ts.tensor(x), attn_mask=ts.tensor(blocked))
    out_f, w_f = m(ts.tensor(x), ts.tensor(x), ts.tensor(x),
                   attn_mask=ts.tensor(np.where(blocked, -np.inf, 0).astype(np.float32)))
    assert_close(out_b, out_f)
    assert_close(w_b, w_f)
    bf = ts.nn.MultiheadAttention(8, 2, batch_first=True)
    bf.load_state_dict(m.state_dict())
    xt = ts.tensor(x.transpose(1, 0, 2).copy())
    out_t, w_t = bf(xt, xt, xt, attn_mask=ts.tensor(blocked))
    assert_close(out_t, out_b.detach().numpy().transpose(1, 0, 2), **TOL)
    assert_close(w_t, w_b, **TOL)
    out_1, w_1 = m(ts.tensor(x[:, 0]), ts.tensor(x[:, 0]), ts.tensor(x[:, 0]), attn_mask=ts.tensor(blocked))
    assert out_1.shape == (5, 8) and w_1.shape == (5, 5)
    assert_close(out_1, out_b[:, 0], **TOL)


def test_mha_need_weights_false_returns_none_and_same_output():
    m = ts.nn.MultiheadAttention(8, 4)
    q, kv = ts.tensor(data(3, 2, 8)), ts.tensor(data(6, 2, 8))
    out, w = m(q, kv, kv, need_weights=False)
    assert w is None
    assert_close(out, m(q, kv, kv)[0], **TOL)


def test_mha_gradients_reach_every_parameter():
    m = ts.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True)
    q = ts.tensor(data(3, 2, 8), requires_grad=True)
    k, v = ts.tensor(data(4, 2, 3), requires_grad=True), ts.tensor(data(4, 2, 5), requires_grad=True)
    out, w = m(q, k, v)
    (out.sum() + (w * w).sum()).backward()
    for t in [q, k, v] + list(m.parameters()):
        assert t.grad is not None and np.abs(t.grad.detach().numpy()).sum() > 0


MHA_ERRORS = [
    (lambda: ts.nn.MultiheadAttention(8, 3), AssertionError, "embed_dim must be divisible by num_heads"),
    (lambda: ts.nn.MultiheadAttention(0, 3), ValueError, "embed_dim and num_heads must be greater than 0"),
    (lambda m, x: m(x, x, x[:3]), AssertionError, "key shape tscript.Size([4, 2, 8]) does not match value shape"),
    (lambda m, x: m(x[..., :4], x[..., :4], x[..., :4]), AssertionError,
     "was expecting embedding dimension of 8, but got 4"),
    (lambda m, x: m(x, x, x, attn_mask=ts.zeros(3, 4)), RuntimeError,
     "The shape of the 2D attn_mask is tscript.Size([3, 4]), but should be (4, 4)."),
    (lambda m, x: m(x, x, x, attn_mask=ts.zeros(3, 4, 4)), RuntimeError,
     "The shape of the 3D attn_mask is tscript.Size([3, 4, 4]), but should be (4, 4, 4)."),
    (lambda m, x: m(x, x, x, attn_mask=ts.zeros(4, 4, dtype=ts.int64)), AssertionError,
     "only bool and floating types of attn_mask are supported"),
    (lambda m, x: m(x, x, x, key_padding_mask=ts.zeros(3, 4, dtype=ts.bool)), AssertionError,
     "Expected key_padded_mask.shape[0] to be 2, but got 3"),
    (lambda m, x: m(x, x, x, key_padding_mask=ts.zeros(2, 5, dtype=ts.bool)), AssertionError,
     "Expected key_padded_mask.shape[1] to be 4, but got 5"),
    (lambda m, x: m(x, x, x, key_padding_mask=ts.zeros(2, 4, 1, dtype=ts.bool)), AssertionError,
     "expected `key_padding_mask` to be `None` or 2-D but found 3-D tensor instead"),
    (lambda m, x: m(x, x, x, is_causal=True), RuntimeError, "Need attn_mask if specifying the is_causal hint"),
    (lambda m, x: m(x[0], x, x), AssertionError,
     "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found 3-D and 3-D tensors"),
    (lambda m, x: m(x[0, 0], x[0, 0], x[0, 0]), AssertionError,
     "query should be unbatched 2D or batched 3D tensor but received 1-D query tensor"),
    (lambda m, x: m(x[:, 0], x[:, 0], x[:, 0], attn_mask=ts.zeros(3, 4, 4)), AssertionError,
     "Expected `attn_mask` shape to be (2, 4, 4) but got tscript.Size([3, 4, 4])"),
    (lambda m, x: m(x, x, x, attn_mask=ts.zeros(1, 4, 4, 4)), AssertionError,
     "expected `attn_mask` to be `None`, 2-D or 3-D but found 4-D tensor instead"),
    (lambda m, x: m(x[:, 0], x[:, 0], x[:, 0], key_padding_mask=ts.zeros(2, 4, dtype=ts.bool)), AssertionError,
     "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D"),
]


@pytest.mark.parametrize("call, exc, fragment", MHA_ERRORS)
def test_mha_errors(call, exc, fragment):
    with pytest.raises(exc) as info:
        if call.__code__.co_argcount:
            call(ts.nn.MultiheadAttention(8, 2), ts.tensor(data(4, 2, 8)))
        else:
            call()
    assert fragment in str(info.value)
    if exc is AssertionError:
        assert isinstance(info.value, ValueError)  # also one of the clean error classes


def test_mha_functional_errors():
    x, w, b = ts.randn(4, 2, 8), ts.randn(24, 8), ts.randn(24)
    mha = F.multi_head_attention_forward
    out_w = ts.randn(8, 8)
    with pytest.raises(AssertionError, match="embed_dim 8 not divisible by num_heads 3"):
        mha(x, x, x, 8, 3, w, b, None, None, False, 0.0, out_w, None)
    with pytest.raises(AssertionError, match="bias_k is set but bias_v is None"):
        mha(x, x, x, 8, 2, w, b, ts.randn(1, 1, 8), None, False, 0.0, out_w, None)
    with pytest.raises(AssertionError, match="use_separate_proj_weight is False but in_proj_weight is None"):
        mha(x, x, x, 8, 2, None, b, None, None, False, 0.0, out_w, None)
    with pytest.raises(AssertionError, match="use_separate_proj_weight is True but k_proj_weight is None"):
        mha(x, x, x, 8, 2, None, b, None, None, False, 0.0, out_w, None, use_separate_proj_weight=True,
            q_proj_weight=ts.randn(8, 8))
    with pytest.raises(AssertionError, match=r"expecting key weights shape of \(8, 8\)"):
        mha(x, x, x, 8, 2, None, b, None, None, False, 0.0, out_w, None, use_separate_proj_weight=True,
            q_proj_weight=ts.randn(8, 8), k_proj_weight=ts.randn(8, 3), v_proj_weight=ts.randn(8, 8))
    with pytest.raises(AssertionError, match="expecting static_k.size\\(0\\) of 4, but got 3"):
        mha(x, x, x, 8, 2, w, b, None, None, False, 0.0, out_w, None, static_k=ts.randn(3, 4, 4))
    with pytest.raises(AssertionError, match="bias cannot be added to static key."):
        mha(x, x, x, 8, 2, w, b, ts.randn(1, 1, 8), ts.randn(1, 1, 8), False, 0.0, out_w, None,
            static_k=ts.randn(4, 4, 4))


def test_mismatched_mask_types_warn():
    m = ts.nn.MultiheadAttention(8, 2)
    x = ts.randn(4, 2, 8)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        m(x, x, x, key_padding_mask=ts.zeros(2, 4, dtype=ts.bool), attn_mask=ts.zeros(4, 4))


# -- MultiheadAttention against PyTorch ---------------------------------------------------------------

MHA_MODULES = [dict(), dict(add_bias_kv=True), dict(add_zero_attn=True), dict(bias=False),
               dict(kdim=3, vdim=6), dict(batch_first=True), dict(add_bias_kv=True, add_zero_attn=True, kdim=5)]
MHA_CALLS = [dict(), dict(key_padding_mask="bool"), dict(attn_mask="float2d"), dict(attn_mask="bool3d"),
             dict(attn_mask="bool2d", key_padding_mask="bool", need_weights=False),
             dict(attn_mask="float2d", average_attn_weights=False), dict(key_padding_mask="float", attn_mask="float2d"),
             dict(attn_mask="causal", is_causal=True, need_weights=False)]


def mha_masks(call, L, S, N, heads):
    """Concrete numpy masks for a call description."""
    out = dict(call)
    kpm = np.zeros((N, S), bool)
    kpm[-1, S // 2:] = True
    makers = {"bool": kpm, "float": np.where(kpm, -1e4, 0.5).astype(np.float32), "float2d": data(L, S),
              "bool2d": np.triu(np.ones((L, S), bool), 1),
              "bool3d": RNG.random((N * heads, L, S)) > 0.7,
              "causal": np.triu(np.full((L, S), -np.inf, np.float32), 1)}
    for name in ("key_padding_mask", "attn_mask"):
        if name in out:
            out[name] = makers[out[name]]
    return out


def run_mha(lib, module, arrays, call):
    """Forward and backward (a fixed weighting of output and weights): outputs then input grads."""
    tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
    query, key, value = tensors if len(tensors) == 3 else tensors * 3
    out, w = module(query, key, value, **{n: as_lib(lib, a) for n, a in call.items()})
    loss = (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(np.float32))).sum()
    if w is not None:
        loss = loss + (w * w).sum()
    loss.backward()
    return [out, w] + [t.grad for t in tensors]


@pytest.mark.parametrize("config", MHA_MODULES)
@pytest.mark.parametrize("call", MHA_CALLS)
def test_mha_matches_pytorch(oracle, config, call):
    torch = oracle
    theirs, ours = torch.nn.MultiheadAttention(8, 2, **config), ts.nn.MultiheadAttention(8, 2, **config)
    copy_weights(theirs, ours)
    L, S, N = 3, 5, 2
    self_attention = "kdim" not in config and call.get("attn_mask") != "float2d"
    if self_attention:
        S = L
        arrays = [data(L, N, 8)]
    else:
        arrays = [data(L, N, 8), data(S, N, config.get("kdim", 8)), data(S, N, config.get("vdim", 8))]
    if config.get("batch_first"):
        arrays = [a.transpose(1, 0, 2).copy() for a in arrays]
    call = mha_masks(call, L, S, N, 2)
    for a, b in zip(run_mha(ts, ours, arrays, call), run_mha(torch, theirs, arrays, call)):
        assert (a is None) == (b is None)
        if a is not None:
            assert_close(a, b, **TOL)
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, tp.grad, **TOL)


def test_mha_unbatched_and_train_dropout_one_match_pytorch(oracle):
    torch = oracle
    theirs, ours = torch.nn.MultiheadAttention(8, 2, dropout=1.0), ts.nn.MultiheadAttention(8, 2, dropout=1.0)
    copy_weights(theirs, ours)
    x = data(4, 8)
    for need_weights in (True, False):
        got = ours(ts.tensor(x), ts.tensor(x), ts.tensor(x), need_weights=need_weights)
        want = theirs(torch.tensor(x), torch.tensor(x), torch.tensor(x), need_weights=need_weights)
        assert_close(got[0], want[0], **TOL)  # train mode, p=1: every attention weight is dropped
    ours.eval(), theirs.eval()
    got, want = ours(ts.tensor(x), ts.tensor(x), ts.tensor(x)), theirs(torch.tensor(x), torch.tensor(x),
                                                                        torch.tensor(x))
    assert_close(got[0], want[0], **TOL)
    assert_close(got[1], want[1], **TOL)


def test_mha_functional_static_kv_matches_pytorch(oracle):
    torch = oracle
    arrays = dict(x=data(3, 2, 8), w=data(24, 8), b=data(24), ow=data(8, 8), ob=data(8), sk=data(4, 5, 4),
                  sv=data(4, 5, 4))
    results = []
    for lib in (ts, torch):
        t = {n: lib.tensor(a) for n, a in arrays.items()}
        results.append(lib.nn.functional.multi_head_attention_forward(
            t["x"], t["x"], t["x"], 8, 2, t["w"], t["b"], None, None, False, 0.0, t["ow"], t["ob"],
            static_k=t["sk"], static_v=t["sv"]))
    for a, b in zip(*results):
        assert_close(a, b, **TOL)


# -- TransformerEncoderLayer / TransformerEncoder ----------------------------------------------------

def test_encoder_layer_structure_and_repr():
    layer = ts.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    assert [name for name, _ in layer.named_children()] == [
        "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"]
    assert layer.self_attn.dropout == 0.1 and layer.dropout.p == 0.1 and layer.norm1.eps == 1e-5
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
    assert ts.nn.TransformerEncoderLayer(8, 2, activation="gelu").activation is F.gelu
    with_module = ts.nn.TransformerEncoderLayer(8, 2, activation=ts.nn.GELU())
    assert with_module.activation_relu_or_gelu == 2 and "(activation): GELU(approximate='none')" in repr(with_module)
    assert ts.nn.TransformerEncoderLayer(8, 2, activation=ts.tanh).activation_relu_or_gelu == 0
    assert repr(layer) == """TransformerEncoderLayer(
  (self_attn): MultiheadAttention(
    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
  )
  (linear1): Linear(in_features=8, out_features=16, bias=True)
  (dropout): Dropout(p=0.1, inplace=False)
  (linear2): Linear(in_features=16, out_features=8, bias=True)
  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (dropout1): Dropout(p=0.1, inplace=False)
  (dropout2): Dropout(p=0.1, inplace=False)
)"""


def test_encoder_layer_post_norm_output_is_normalised_and_eval_deterministic():
    layer = ts.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16).eval()
    x = ts.tensor(data(5, 3, 8))
    out = layer(x).detach().numpy()
    assert_close(out.mean(-1), np.zeros((5, 3), np.float32), atol=1e-5)
    assert_close(out.var(-1), np.ones((5, 3), np.float32), rtol=1e-3, atol=1e-3)
    assert_close(layer(x), out)
    layer.train()
    assert not np.allclose(layer(x).detach().numpy(), out)  # dropout on in training mode


def test_encoder_layer_without_dropout_is_the_same_in_train_and_eval():
    layer = ts.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=True)
    x = ts.tensor(data(2, 5, 8))
    assert_close(layer(x), layer.eval()(x))


def test_encoder_clones_layers_and_detects_causal_masks():
    layer = ts.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    enc = ts.nn.TransformerEncoder(layer, num_layers=3, norm=ts.nn.LayerNorm(8))
    assert len(enc.layers) == 3 and enc.layers[0] is not layer
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    assert_close(enc.layers[2].linear1.weight, layer.linear1.weight)
    from tscript.nn.modules.transformer import _detect_is_causal_mask, _generate_square_subsequent_mask
    causal = _generate_square_subsequent_mask(4)
    assert _detect_is_causal_mask(causal) and not _detect_is_causal_mask(causal.t())
    assert not _detect_is_causal_mask(causal, is_causal=False) and _detect_is_causal_mask(None, is_causal=True)
    x = ts.tensor(data(4, 2, 8))
    assert_close(enc(x, mask=causal), enc(x, mask=causal, is_causal=True))


@pytest.mark.parametrize("call, exc, fragment", [
    (lambda: ts.nn.TransformerEncoderLayer(8, 2, activation="tanh"), RuntimeError,
     "activation should be relu/gelu, not tanh"),
    (lambda: ts.nn.TransformerEncoderLayer(8, 3), AssertionError, "embed_dim must be divisible by num_heads"),
    (lambda: ts.nn.TransformerEncoderLayer(8, 2)(ts.randn(4, 2, 8), src_key_padding_mask=ts.zeros(2, 4).long()),
     AssertionError, "only bool and floating types of src_key_padding_mask are supported"),
    (lambda: ts.nn.TransformerEncoderLayer(8, 2)(ts.randn(4, 2, 6)), AssertionError,
     "was expecting embedding dimension of 8, but got 6"),
])
def test_encoder_errors(call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value)


ENCODER_CONFIGS = [dict(), dict(norm_first=True), dict(activation="gelu"), dict(bias=False), dict(batch_first=True),
                   dict(layer_norm_eps=1e-3, activation="callable"), dict(activation="module")]
ENCODER_CALLS = [dict(), dict(src_key_padding_mask="bool"), dict(src_mask="causal", is_causal=True),
                 dict(src_mask="bool"), dict(src_mask="bool3d", src_key_padding_mask="bool")]


def encoder_masks(call, S, N):
    out = dict(call)
    kpm = np.zeros((N, S), bool)
    kpm[0, -2:] = True
    makers = {"src_key_padding_mask": {"bool": kpm},
              "src_mask": {"causal": np.triu(np.full((S, S), -np.inf, np.float32), 1),
                           "bool": np.triu(np.ones((S, S), bool), 1), "bool3d": RNG.random((N * 2, S, S)) > 0.7}}
    for name in ("src_key_padding_mask", "src_mask"):
        if name in out:
            out[name] = makers[name][out[name]]
    return out


def run_encoder(lib, module, x, call):
    src = lib.tensor(x, requires_grad=True)
    out = module(src, **{n: as_lib(lib, a) for n, a in call.items()})
    (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(np.float32))).sum().backward()
    return [out, src.grad] + [p.grad for p in module.parameters()]


@pytest.mark.parametrize("config", ENCODER_CONFIGS)
@pytest.mark.parametrize("call", ENCODER_CALLS)
def test_encoder_layer_matches_pytorch(oracle, config, call):
    torch = oracle
    config = dict(config)
    if config.get("activation") == "callable":
        their_kw, our_kw = dict(config, activation=lambda x: torch.tanh(x) * 2), \
            dict(config, activation=lambda x: ts.tanh(x) * 2)
    elif config.get("activation") == "module":
        their_kw, our_kw = dict(activation=torch.nn.GELU("tanh")), dict(activation=ts.nn.GELU("tanh"))
    else:
        their_kw = our_kw = config
    theirs = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **their_kw).eval()
    ours = ts.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **our_kw).eval()
    copy_weights(theirs, ours)
    S, N = 5, 3
    x = data(N, S, 8) if config.get("batch_first") else data(S, N, 8)
    call = encoder_masks(call, S, N)
    for a, b in zip(run_encoder(ts, ours, x, call), run_encoder(torch, theirs, x, call)):
        assert_close(a, b, **TOL)


def test_encoder_layer_repr_matches_pytorch(oracle):
    torch = oracle
    for kw in (dict(), dict(bias=False, dropout=0.25, layer_norm_eps=1e-6)):
        assert repr(ts.nn.TransformerEncoderLayer(8, 2, 32, **kw)) == \
            repr(torch.nn.TransformerEncoderLayer(8, 2, 32, **kw)).replace("torch", "tscript")


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_matches_pytorch(oracle, batch_first):
    torch = oracle
    kw = dict(dim_feedforward=16, batch_first=batch_first)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, **kw), 2,
                                         norm=torch.nn.LayerNorm(8), enable_nested_tensor=False).eval()
    ours = ts.nn.TransformerEncoder(ts.nn.TransformerEncoderLayer(8, 2, **kw), 2,
                                    norm=ts.nn.LayerNorm(8)).eval()
    copy_weights(theirs, ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = data(3, 4, 8) if batch_first else data(4, 3, 8)
    for call in (dict(), dict(mask="causal"), dict(src_key_padding_mask="bool", mask="bool")):
        masks = encoder_masks({("src_" + k if k == "mask" else k): v for k, v in call.items()}, 4, 3)
        masks = {("mask" if k == "src_mask" else k): v for k, v in masks.items()}
        for a, b in zip(run_encoder(ts, ours, x, masks), run_encoder(torch, theirs, x, masks)):
            assert_close(a, b, **TOL)
