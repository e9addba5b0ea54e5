"""TransformerDecoderLayer, TransformerDecoder and Transformer: PyTorch's structure, names, init,
reprs and errors; the decoder layer against a numpy reference (post- and pre-norm, masks); causal
mask detection; finite-difference gradients; outputs and every gradient against PyTorch with its
state dict loaded (all options and masks) when installed; and a Transformer traced, compiled with a
dynamic batch and with backward, saved and run by the standalone runtime."""
import math

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
import tscript_runtime as rt
from tscript import nn
from tscript.autograd import gradcheck
from tscript.nn.modules.transformer import _detect_is_causal_mask
from tests.conftest import assert_close

RNG = np.random.default_rng(11)
TOL = dict(rtol=1e-4, atol=1e-4)


def data(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def copy_weights(torch_module, ours):
    """Load a PyTorch module's state_dict into ours (strict: names and shapes must agree)."""
    ours.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})


# -- numpy reference of a decoder layer ---------------------------------------------------------------------

def np_layer_norm(x, norm):
    w, b = norm.weight.detach().numpy(), norm.bias.detach().numpy()
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + norm.eps) * w + b


def np_attention(mha, query, kv, bias):
    """(L, N, E) query attending to (S, N, E) keys/values; `bias` (N, L, S) is added to the scores."""
    E, H = mha.embed_dim, mha.num_heads
    w, b = mha.in_proj_weight.detach().numpy(), mha.in_proj_bias.detach().numpy()
    q, k, v = query @ w[:E].T + b[:E], kv @ w[E:2 * E].T + b[E:2 * E], kv @ w[2 * E:].T + b[2 * E:]
    heads = lambda t: t.reshape(t.shape[0], t.shape[1], H, E // H).transpose(1, 2, 0, 3)  # noqa: E731 (N, H, L, d)
    scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) / math.sqrt(E // H) + bias[:, None]
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    out = (weights / weights.sum(-1, keepdims=True)) @ heads(v)                           # (N, H, L, d)
    out = out.transpose(2, 0, 1, 3).reshape(query.shape)
    return out @ mha.out_proj.weight.detach().numpy().T + mha.out_proj.bias.detach().numpy()


def np_decoder_layer(layer, tgt, memory, self_bias, cross_bias):
    ff = lambda x: np.maximum(x @ layer.linear1.weight.detach().numpy().T + layer.linear1.bias.detach().numpy(),  # noqa
                              0) @ layer.linear2.weight.detach().numpy().T + layer.linear2.bias.detach().numpy()
    x = tgt
    if layer.norm_first:
        h = np_layer_norm(x, layer.norm1)
        x = x + np_attention(layer.self_attn, h, h, self_bias)
        x = x + np_attention(layer.multihead_attn, np_layer_norm(x, layer.norm2), memory, cross_bias)
        return x + ff(np_layer_norm(x, layer.norm3))
    x = np_layer_norm(x + np_attention(layer.self_attn, x, x, self_bias), layer.norm1)
    x = np_layer_norm(x + np_attention(layer.multihead_attn, x, memory, cross_bias), layer.norm2)
    return np_layer_norm(x + ff(x), layer.norm3)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_numpy_with_masks(norm_first):
    ts.manual_seed(0)
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, norm_first=norm_first).eval()
    for p in layer.parameters():  # non-trivial biases and norms
        with ts.no_grad():
            p.add_(ts.tensor(data(*p.shape) * 0.1))
    T, S, N = 4, 5, 3
    tgt, memory = data(T, N, 8), data(S, N, 8)
    causal = np.triu(np.ones((T, T), bool), 1)
    memory_padding = np.zeros((N, S), bool)
    memory_padding[1, -2:] = True
    self_bias = np.broadcast_to(np.where(causal, -np.inf, 0.0), (N, T, T))
    cross_bias = np.broadcast_to(np.where(memory_padding, -np.inf, 0.0)[:, None, :], (N, T, S))
    expected = np_decoder_layer(layer, tgt.astype(np.float64), memory.astype(np.float64), self_bias, cross_bias)
    out = layer(ts.tensor(tgt), ts.tensor(memory), tgt_mask=ts.tensor(causal),
                memory_key_padding_mask=ts.tensor(memory_padding))
    assert_close(out, expected.astype(np.float32), **TOL)
    plain = np_decoder_layer(layer, tgt.astype(np.float64), memory.astype(np.float64), np.zeros((N, T, T)),
                             np.zeros((N, T, S)))
    assert_close(layer(ts.tensor(tgt), ts.tensor(memory)), plain.astype(np.float32), **TOL)


# -- structure, init, reprs ------------------------------------------------------------------------------------

def test_decoder_layer_structure_and_repr():
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16)
    assert [name for name, _ in layer.named_children()] == [
        "self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "norm3", "dropout1",
        "dropout2", "dropout3"]
    assert layer.activation is F.relu and not layer.norm_first and layer.dropout3.p == 0.1
    assert nn.TransformerDecoderLayer(8, 2, activation="gelu").activation is F.gelu
    assert "(activation): GELU(approximate='tanh')" in repr(nn.TransformerDecoderLayer(8, 2, activation=nn.GELU("tanh")))
    assert "(norm3): LayerNorm((8,), eps=0.001, elementwise_affine=True, bias=False)" in \
        repr(nn.TransformerDecoderLayer(8, 2, layer_norm_eps=1e-3, bias=False))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")


def test_transformer_structure_state_dict_and_init():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=16)
    assert (model.d_model, model.nhead, model.batch_first) == (8, 2, False)
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 3
    assert isinstance(model.encoder.norm, nn.LayerNorm) and isinstance(model.decoder.norm, nn.LayerNorm)
    keys = list(model.state_dict())
    assert keys[:2] == ["encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias"]
    assert "decoder.layers.2.multihead_attn.out_proj.weight" in keys and keys[-2:] == ["decoder.norm.weight",
                                                                                        "decoder.norm.bias"]
    for name, p in model.named_parameters():
        if p.dim() > 1:  # xavier-uniform: |w| <= sqrt(6 / (fan_in + fan_out))
            assert np.abs(p.detach().numpy()).max() <= math.sqrt(6 / (p.shape[0] + p.shape[1])) + 1e-6, name
    layers = model.decoder.layers
    assert layers[0].linear1.weight is not layers[1].linear1.weight
    assert not np.allclose(layers[0].linear1.weight.detach().numpy(), layers[1].linear1.weight.detach().numpy())


def test_generate_square_subsequent_mask_and_causal_detection():
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.dtype == ts.float32 and mask.tolist() == [[0, -math.inf, -math.inf], [0, 0, -math.inf], [0, 0, 0]]
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=ts.float64).dtype == ts.float64
    assert _detect_is_causal_mask(mask) and not _detect_is_causal_mask(mask, size=4)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2).eval()
    tgt, memory = ts.tensor(data(3, 2, 8)), ts.tensor(data(5, 2, 8))
    assert_close(dec(tgt, memory, tgt_mask=mask), dec(tgt, memory, tgt_mask=mask, tgt_is_causal=True))
    assert_close(dec(tgt, memory, tgt_mask=mask), dec(tgt, memory, tgt_mask=mask < 0))  # bool form, same meaning


def test_transformer_custom_parts_unbatched_and_errors():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 1)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 1)
    model = nn.Transformer(8, 2, custom_encoder=encoder, custom_decoder=decoder).eval()
    assert model.encoder is encoder and model.decoder is decoder
    src, tgt = ts.tensor(data(5, 8)), ts.tensor(data(3, 8))
    unbatched = model(src, tgt)
    assert unbatched.shape == (3, 8)
    assert_close(unbatched, model(src.unsqueeze(1), tgt.unsqueeze(1)).squeeze(1), **TOL)
    assert_close(unbatched, decoder(tgt, encoder(src)), **TOL)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(ts.randn(5, 2, 8), ts.randn(3, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(ts.randn(5, 2, 8), ts.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        nn.Transformer(8, 2, 1, 1, 16, batch_first=True)(ts.randn(2, 5, 8), ts.randn(3, 5, 8))


def test_transformer_gradients_match_finite_differences():
    ts.manual_seed(3)
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, dtype=ts.float64, norm_first=True)
    src = ts.tensor(data(3, 1, 4, dtype=np.float64), requires_grad=True)
    tgt = ts.tensor(data(2, 1, 4, dtype=np.float64), requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(2, dtype=ts.float64)
    assert gradcheck(lambda s, t: model(s, t, tgt_mask=mask), (src, tgt))


def test_dropout_is_used_in_training_only():
    ts.manual_seed(4)
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.5)
    src, tgt = ts.randn(4, 2, 8), ts.randn(3, 2, 8)
    model.eval()
    assert_close(model(src, tgt), model(src, tgt))
    model.train()
    assert not np.allclose(model(src, tgt).detach().numpy(), model(src, tgt).detach().numpy())


# -- against PyTorch -------------------------------------------------------------------------------------------

CONFIGS = [dict(), dict(batch_first=True), dict(norm_first=True, activation="gelu"), dict(activation="callable"),
           dict(bias=False, layer_norm_eps=1e-3), dict(batch_first=True, norm_first=True)]
CALLS = [dict(), dict(tgt_mask="causal"), dict(tgt_mask="causal", tgt_is_causal=True),
         dict(tgt_mask="causal", src_key_padding_mask="src", tgt_key_padding_mask="tgt",
              memory_key_padding_mask="src", memory_mask="bool", src_mask="float")]


def _masks(call, S, T, N):
    """The masks a call names, as numpy arrays (the same ones for both libraries)."""
    src_padding, tgt_padding = np.zeros((N, S), bool), np.zeros((N, T), bool)
    src_padding[0, -2:], tgt_padding[-1, -1] = True, True
    memory_mask = RNG.random((T, S)) < 0.3
    memory_mask[:, 0] = False
    values = {"causal": np.triu(np.full((T, T), -np.inf, np.float32), 1), "src": src_padding, "tgt": tgt_padding,
              "bool": memory_mask, "float": data(S, S) * 0.5}
    return {k: values[v] if isinstance(v, str) else v for k, v in call.items()}


def _run(lib, model, src, tgt, masks):
    a, b = lib.tensor(src, requires_grad=True), lib.tensor(tgt, requires_grad=True)
    out = model(a, b, **{k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()})
    (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(np.float32))).sum().backward()
    return [out, a.grad, b.grad] + [p.grad for p in model.parameters()]


def _pair(torch, config, **sizes):
    config = dict(config)
    ours_kw, theirs_kw = dict(config), dict(config)
    if config.get("activation") == "callable":
        ours_kw["activation"], theirs_kw["activation"] = (lambda x: ts.tanh(x) * 2), (lambda x: torch.tanh(x) * 2)
    theirs = torch.nn.Transformer(16, 4, dim_feedforward=32, dropout=0.0, **sizes, **theirs_kw)
    ours = nn.Transformer(16, 4, dim_feedforward=32, dropout=0.0, **sizes, **ours_kw)
    return ours, theirs


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("call", CALLS)
def test_transformer_matches_pytorch(oracle, config, call):
    ours, theirs = _pair(oracle, config, num_encoder_layers=2, num_decoder_layers=2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_weights(theirs, ours)
    S, T, N = 5, 4, 3
    first = config.get("batch_first", False)
    src, tgt = (data(N, S, 16), data(N, T, 16)) if first else (data(S, N, 16), data(T, N, 16))
    masks = _masks(call, S, T, N)
    for a, b in zip(_run(ts, ours, src, tgt, masks), _run(oracle, theirs, src, tgt, masks)):
        if b is None:
            assert a is None
        else:
            assert_close(a, b.detach(), **TOL)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_reprs_unbatched_and_stacks_match_pytorch(oracle):
    ours, theirs = _pair(oracle, {}, num_encoder_layers=1, num_decoder_layers=1)
    assert repr(ours) == repr(theirs)
    copy_weights(theirs, ours)
    src, tgt = data(5, 16), data(3, 16)
    assert_close(ours(ts.tensor(src), ts.tensor(tgt)), theirs(oracle.tensor(src), oracle.tensor(tgt)).detach(), **TOL)
    layer_kw = dict(dim_feedforward=32, dropout=0.0, batch_first=True)
    theirs_dec = oracle.nn.TransformerDecoder(oracle.nn.TransformerDecoderLayer(16, 4, **layer_kw), 2,
                                              oracle.nn.LayerNorm(16))
    ours_dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 4, **layer_kw), 2, nn.LayerNorm(16))
    assert repr(ours_dec) == repr(theirs_dec)
    copy_weights(theirs_dec, ours_dec)
    tgt, memory = data(2, 3, 16), data(2, 5, 16)
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert_close(ours_dec(ts.tensor(tgt), ts.tensor(memory), tgt_mask=mask),
                 theirs_dec(oracle.tensor(tgt), oracle.tensor(memory), tgt_mask=oracle.tensor(mask.numpy())).detach(),
                 **TOL)


# -- compiled ---------------------------------------------------------------------------------------------------

def test_transformer_traces_compiles_saves_and_runs_in_the_runtime(tmp_path):
    ts.manual_seed(5)
    model = nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, batch_first=True).eval()
    src, tgt = ts.randn(2, 5, 8), ts.randn(2, 4, 8)
    src3, tgt3 = ts.randn(3, 5, 8), ts.randn(3, 4, 8)
    with ts.no_grad():
        expected, expected3 = model(src, tgt), model(src3, tgt3)
    traced = ts.jit.trace(model, (src, tgt))
    assert_close(traced(src, tgt).detach(), expected, **TOL)
    compiled = ts.jit.compile(model, (src, tgt), dynamic={0: [0], 1: [0]})
    assert_close(compiled(src3, tgt3), expected3, **TOL)
    path = str(tmp_path / "transformer.tsm")
    ts.jit.save(compiled, path)
    assert_close(rt.load(path).run(src3.numpy(), tgt3.numpy()), expected3, **TOL)


def test_transformer_compiled_backward_matches_eager():
    ts.manual_seed(6)
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    src, tgt = ts.randn(5, 2, 8, requires_grad=True), ts.randn(4, 2, 8, requires_grad=True)
    compiled = ts.jit.compile(model, (src, tgt), backward=True)
    compiled(src, tgt).pow(2).sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()] + [src.grad.numpy().copy(), tgt.grad.numpy().copy()]
    model.zero_grad()
    src.grad = tgt.grad = None
    model(src, tgt).pow(2).sum().backward()
    for g, p in zip(got, list(model.parameters()) + [src, tgt]):
        assert_close(g, p.grad, rtol=1e-3, atol=1e-4)
