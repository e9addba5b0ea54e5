"""Attention functions of nn.functional: `scaled_dot_product_attention` and
`multi_head_attention_forward` (the computation behind nn.MultiheadAttention), following PyTorch's
reference implementations step by step so results and errors agree."""
from __future__ import annotations

import math
import warnings

import tscript as torch
from tscript_runtime.errors import OpError

from .linear import linear
from .misc import dropout

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


class AttentionAssertionError(OpError, AssertionError, ValueError):
    """A bad attention argument. PyTorch raises AssertionError for these; it is also a ValueError so
    that it is one of the clean error classes every bad argument raises here."""


# -- scaled dot-product attention ----------------------------------------------------------------------

def _check_sdpa(query, key, value, attn_mask, dropout_p: float, is_causal: bool) -> None:
    name = "scaled_dot_product_attention"
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"_{name}: Explicit attn_mask should not be set when is_causal=True")
    dims = f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()}"
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(f"{name}: Expected query, key, and value to all be at least 2 dimensional, but got "
                           f"{dims} instead.")
    dtypes = f"query.dtype: {query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype}"
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"{name}: Expected query, key, and value to have the same dtype, but got {dtypes} instead.")
    if not query.is_floating_point():
        raise RuntimeError(f"{name}: expected floating point query, key and value, got {query.dtype}")
    if attn_mask is not None and attn_mask.dtype not in (torch.bool, torch.float32, query.dtype):
        raise RuntimeError(f"{name}: Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead.")
    if query.size(-1) != key.size(-1) or key.size(-2) != value.size(-2):
        raise RuntimeError(f"{name}: query (..., L, E), key (..., S, E) and value (..., S, Ev) do not fit: got "
                           f"query {list(query.shape)}, key {list(key.shape)}, value {list(value.shape)}")
    if not 0 <= dropout_p <= 1:
        raise RuntimeError(f"{name}: dropout probability has to be between 0 and 1, but got {dropout_p}")


def _attn_bias(attn_mask, is_causal: bool, L: int, S: int, dtype):
    """The additive score bias: 0 where attention is allowed, -inf where it is not (or the float mask)."""
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool).tril()
    if attn_mask is None or attn_mask.dtype != torch.bool:
        return attn_mask
    return torch.zeros(attn_mask.shape, dtype=dtype).masked_fill(attn_mask.logical_not(), float("-inf"))


def _safe_softmax(scores):
    """Softmax over the last dim whose fully masked rows (all -inf) give 0 (PyTorch's SDPA) instead of
    nan; those rows are zeroed before the softmax too so that their gradients stay finite."""
    masked_rows = (scores == float("-inf")).all(-1, keepdim=True)
    return scores.masked_fill(masked_rows, 0.0).softmax(-1).masked_fill(masked_rows, 0.0)


def _repeat_heads(x, groups: int):
    """Repeat each head of x (..., H, S, E) `groups` times in place (repeat_interleave on dim -3)."""
    if groups == 1:
        return x
    *batch, heads, s, e = x.shape
    return x.unsqueeze(-3).expand(*batch, heads, groups, s, e).reshape(*batch, heads * groups, s, e)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False):
    """softmax(Q K^T * scale + bias) V over the last two dims, batch dims broadcast. A bool `attn_mask`
    marks the positions that may be attended (True); a float mask is added to the scores; rows with no
    allowed position give 0. Dropout (p=`dropout_p`) always applies, as in PyTorch."""
    _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal)
    if enable_gqa:
        key = _repeat_heads(key, query.size(-3) // key.size(-3))
        value = _repeat_heads(value, query.size(-3) // value.size(-3))
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    bias = _attn_bias(attn_mask, is_causal, query.size(-2), key.size(-2), query.dtype)
    weights = scores.softmax(-1) if bias is None else _safe_softmax(scores + bias)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return weights @ value


# -- multi-head attention ----------------------------------------------------------------------------

def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """Check the ranks of the inputs and masks; True for batched (3-D) inputs."""
    if query.dim() not in (2, 3):
        raise AttentionAssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                                      f"{query.dim()}-D query tensor")
    batched = query.dim() == 3
    kind, rank = ("batched (3-D)", 3) if batched else ("unbatched (2-D)", 2)
    if key.dim() != rank or value.dim() != rank:
        raise AttentionAssertionError(f"For {kind} `query`, expected `key` and `value` to be {rank}-D but found "
                                      f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != rank - 1:
        raise AttentionAssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                                      f"{rank - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AttentionAssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                          f"but found {attn_mask.dim()}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
            raise AttentionAssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return batched


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type, check_other: bool = True):
    """A bool mask as a float mask of `target_type` (-inf where True, 0 elsewhere); float masks as is."""
    if mask is None:
        return None
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise AttentionAssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                      f"both instead.", stacklevel=3)
    if mask.is_floating_point():
        return mask
    return torch.zeros(mask.shape, dtype=target_type).masked_fill(mask, float("-inf"))


def _none_or_dtype(input):
    return None if input is None else input.dtype


def _in_projection_packed(q, k, v, w, b=None) -> tuple:
    """q, k, v projected by the packed (3E, E) weight: one matmul when they are the same tensor."""
    E = q.size(-1)
    if k is v and q is k:
        q_, k_, v_ = linear(q, w, b).chunk(3, -1)
        return q_, k_, v_
    if k is v:
        w_q, w_kv = w.split([E, 2 * E])
        b_q, b_kv = (None, None) if b is None else b.split([E, 2 * E])
        k_, v_ = linear(k, w_kv, b_kv).chunk(2, -1)
        return linear(q, w_q, b_q), k_, v_
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None,) * 3 if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None) -> tuple:
    """q, k, v projected by separate weights (the kdim/vdim != embed_dim case)."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for what, w, shape in (("query", w_q, (Eq, Eq)), ("key", w_k, (Eq, Ek)), ("value", w_v, (Eq, Ev))):
        if tuple(w.shape) != shape:
            raise AttentionAssertionError(f"expecting {what} weights shape of {shape}, but got {w.shape}")
    for what, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and tuple(b.shape) != (Eq,):
            raise AttentionAssertionError(f"expecting {what} bias shape of {(Eq,)}, but got {b.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _pad_last(mask):
    """Append one zero column to a float mask (for an added bias_k or zero-attention key)."""
    return None if mask is None else torch.cat([mask, mask.new_zeros(tuple(mask.shape[:-1]) + (1,))], -1)


def _check_attn_mask(attn_mask, tgt_len: int, src_len: int, bsz: int, num_heads: int):
    """The attention mask as 3-D (1 or bsz*num_heads, tgt_len, src_len), shape-checked."""
    if attn_mask is None:
        return None
    if attn_mask.dim() == 2:
        if attn_mask.size(0) != tgt_len or attn_mask.size(1) != src_len:
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                               f"({tgt_len}, {src_len}).")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() != 3:
        raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if attn_mask.size(0) != bsz * num_heads or attn_mask.size(1) != tgt_len or attn_mask.size(2) != src_len:
        raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                           f"({bsz * num_heads}, {tgt_len}, {src_len}).")
    return attn_mask


def _heads(x, static, bsz: int, num_heads: int, head_dim: int, name: str):
    """x (S, bsz, E) as (bsz*num_heads, S, head_dim), or the given static keys/values."""
    if static is None:
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.size(0) != bsz * num_heads:
        raise AttentionAssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AttentionAssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight, out_proj_bias, training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None, use_separate_proj_weight: bool = False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True, is_causal: bool = False):
    """Multi-head attention of (L, N, E) query with (S, N, E) key/value (or unbatched (L, E), (S, E)):
    (attn_output (L, N, E), attn_weights (N, L, S) averaged over heads, or (N, heads, L, S), or None)."""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask, attn_mask, is_causal = _canonical_masks(key_padding_mask, attn_mask, is_causal, need_weights,
                                                              query.dtype)
    head_dim = _check_embedding(query, key, value, embed_dim_to_check, num_heads, use_separate_proj_weight)
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                       q_proj_weight, k_proj_weight, v_proj_weight)
    attn_mask = _check_attn_mask(attn_mask, tgt_len, key.shape[0], bsz, num_heads)
    if _check_bias_kv(bias_k, bias_v, static_k, static_v):
        k = torch.cat([k, bias_k.repeat(1, bsz, 1)])
        v = torch.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "static_k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "static_v")
    if add_zero_attn:
        k = torch.cat([k, k.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        v = torch.cat([v, v.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    attn_mask = _merge_key_padding(attn_mask, key_padding_mask, bsz, num_heads, k.size(1))
    p = dropout_p if training else 0.0
    if need_weights:
        out, weights = _attend_with_weights(q, k, v, attn_mask, p, is_causal, bsz, num_heads, average_attn_weights)
    else:
        out, weights = _attend_fused(q, k, v, attn_mask, p, is_causal, bsz, num_heads, average_attn_weights)
    out = linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights


def _canonical_masks(key_padding_mask, attn_mask, is_causal: bool, need_weights: bool, dtype) -> tuple:
    """(key_padding_mask, attn_mask, is_causal) with float masks; the causal hint replaces the mask
    only on the fused path without key padding, as in PyTorch."""
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        return None, None, True
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", dtype, check_other=False)
    return key_padding_mask, attn_mask, is_causal and key_padding_mask is None


def _check_bias_kv(bias_k, bias_v, static_k, static_v) -> bool:
    """Whether bias_k and bias_v are to be appended to the keys and values (both given, no static ones)."""
    if (bias_k is None) != (bias_v is None):
        present, absent = ("bias_k", "bias_v") if bias_v is None else ("bias_v", "bias_k")
        raise AttentionAssertionError(f"{present} is set but {absent} is None")
    if bias_k is not None and static_k is not None:
        raise AttentionAssertionError("bias cannot be added to static key.")
    if bias_k is not None and static_v is not None:
        raise AttentionAssertionError("bias cannot be added to static value.")
    return bias_k is not None


def _check_embedding(query, key, value, embed_dim_to_check: int, num_heads: int, separate: bool) -> int:
    """The head dim, after checking the embedding sizes and that key and value fit together."""
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise AttentionAssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got "
                                      f"{embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AttentionAssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if separate and key.shape[:2] != value.shape[:2]:
        raise AttentionAssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                      f"{value.shape[:2]}")
    if not separate and key.shape != value.shape:
        raise AttentionAssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    return head_dim


def _project(query, key, value, in_proj_weight, in_proj_bias, separate: bool, q_w, k_w, v_w) -> tuple:
    """The input projections of query, key and value (packed weight or three separate ones)."""
    if not separate:
        if in_proj_weight is None:
            raise AttentionAssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        return _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    for name, w in (("q_proj_weight", q_w), ("k_proj_weight", k_w), ("v_proj_weight", v_w)):
        if w is None:
            raise AttentionAssertionError(f"use_separate_proj_weight is True but {name} is None")
    biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
    return _in_projection(query, key, value, q_w, k_w, v_w, *biases)


def _merge_key_padding(attn_mask, key_padding_mask, bsz: int, num_heads: int, src_len: int):
    """The attention mask with the key padding mask (bsz, src_len) added for every head."""
    if key_padding_mask is None:
        return attn_mask
    for dim, want in ((0, bsz), (1, src_len)):
        if key_padding_mask.shape[dim] != want:
            raise AttentionAssertionError(f"Expected key_padded_mask.shape[{dim}] to be {want}, but got "
                                          f"{key_padding_mask.shape[dim]}")
    kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
    kpm = kpm.reshape(bsz * num_heads, 1, src_len)
    return kpm if attn_mask is None else attn_mask + kpm


def _attend_with_weights(q, k, v, attn_mask, dropout_p, is_causal, bsz, num_heads, average):
    """Attention that also returns the weights (plain softmax: fully masked rows give nan, as PyTorch)."""
    _, tgt_len, head_dim = q.shape
    if is_causal and attn_mask is None:
        raise AttentionAssertionError("FIXME: is_causal not implemented for need_weights")
    scores = (q * math.sqrt(1.0 / float(head_dim))) @ k.transpose(-2, -1)
    if attn_mask is not None:
        scores = attn_mask + scores
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = (weights @ v).transpose(0, 1).reshape(tgt_len, bsz, num_heads * head_dim)
    weights = weights.reshape(bsz, num_heads, tgt_len, k.size(1))
    return out, weights.mean(1) if average else weights


def _attend_fused(q, k, v, attn_mask, dropout_p, is_causal, bsz, num_heads, average):
    """Attention through scaled_dot_product_attention (need_weights=False): no weights returned."""
    _, tgt_len, head_dim = q.shape
    src_len = k.size(1)
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.size(0) == 1 else \
            attn_mask.reshape(bsz, num_heads, -1, src_len)
    out = scaled_dot_product_attention(q.reshape(bsz, num_heads, tgt_len, head_dim),
                                       k.reshape(bsz, num_heads, src_len, head_dim),
                                       v.reshape(bsz, num_heads, src_len, head_dim), attn_mask, dropout_p, is_causal)
    return out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, num_heads * head_dim), None
