"""A model of many kernels is emitted in two parts compiled at once, each in its own LLVM context on its own
thread (native/emit.py, target.optimize_and_emit_all): the parts link into one library whose entry calls
the other part's kernels; both parts are cached and read back; results equal a one-part build's."""
import numpy as np

import tscript as ts
from tscript_runtime.native import emit, target


def _many_kernels(x, y):
    """Ten distinct elementwise groups (reductions between them keep them apart)."""
    out = []
    for k in range(10):
        z = (x * (k + 1) + y).tanh() if k % 2 else (x - y * k).sigmoid()
        x = x + z.sum(-1, keepdim=True)
        out.append(z)
    return tuple(out)


def _compile(monkeypatch, tmp_path, parallel_from: int):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(emit, "PARALLEL_KERNELS", parallel_from)
    x, y = ts.randn(6, 40), ts.randn(6, 40)
    return ts.jit.compile(_many_kernels, (x, y)), x, y


def test_two_parts_match_one(monkeypatch, tmp_path):
    two, x, y = _compile(monkeypatch, tmp_path / "two", 2)
    one, _, _ = _compile(monkeypatch, tmp_path / "one", 10_000)
    assert len(list((tmp_path / "two").glob("*of2.o"))) == 2 and len(list((tmp_path / "one").glob("*.o"))) == 1
    assert two.executable.code is not None and two.executable.code.entry is not None
    for a, b, c in zip(two(x, y), one(x, y), _many_kernels(x, y)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-5, atol=1e-6)


def test_parts_come_back_from_the_cache(monkeypatch, tmp_path):
    first, x, y = _compile(monkeypatch, tmp_path, 2)
    monkeypatch.setattr(target, "optimize_and_emit_all", lambda lls: (_ for _ in ()).throw(AssertionError("emitted")))
    again, _, _ = _compile(monkeypatch, tmp_path, 2)
    for a, b in zip(first(x, y), again(x, y)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_compiling_in_parallel_is_repeatable():
    """Several rounds of two modules at once give the same object code as one at a time."""
    texts = [str(m) for m in emit.emit_parts(_plan(), 2)]
    alone = [target.optimize_and_emit(t) for t in texts]
    for _ in range(3):
        assert target.optimize_and_emit_all(texts) == alone


def _plan():
    x, y = ts.randn(6, 40), ts.randn(6, 40)
    return ts.jit.compile(_many_kernels, (x, y)).executable.plan
