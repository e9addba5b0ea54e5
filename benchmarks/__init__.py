"""tscript benchmarks: `python -m benchmarks [suite ...]` prints medians and ratios."""
