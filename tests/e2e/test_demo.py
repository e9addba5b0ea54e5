"""`tscript demo` end to end (the README's first command runs it): eager training, tracing, native
compile, one saved file, the standalone runtime in a fresh process, and the latency table."""
from tscript import demo


def test_demo_runs_end_to_end():
    lines = []
    figures = demo.run(steps=3, out=lines.append)
    text = "\n".join(lines)
    assert "standalone runtime output matches eager" in text
    assert "tscript::FusionGroup" in text  # the fused IR was printed
    for key in ("eager_s", "compiled_s", "runtime_s", "runtime_first_s"):
        assert 0 < figures[key] < 1, (key, figures[key])
    assert lines[-3].strip().startswith("eager tscript") and lines[-1].strip().startswith("standalone runtime")
