"""The layering of tscript and tscript_runtime, checked with import-linter (contracts in pyproject.toml,
[tool.importlinter]; `lint-imports` runs the same check).

Bottom to top: `tscript_runtime.ops` (the op table: numpy kernels) < the rest of the runtime (executor,
model, `native`, the LLVM emitter) < `tscript.ir` < `tscript.frontend` (tracing, scripting) and
`tscript.codegen` (native plans, as data) < `tscript.autodiff` < `tscript.jit`. The runtime never
imports tscript or lark, so a saved model runs with numpy + llvmlite + the standard library alone;
codegen never imports llvmlite or the emitter, so everything the runtime runs goes through the native
plan it checks. A contract covers indirect imports too: importing any module loads all it imports.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The `lint-imports` command of this interpreter's import-linter; no cache: nothing written to the checkout.
LINT = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
        "--no-cache", "--no-logo"]


def lint(config: Path) -> tuple[int, str]:
    """(exit code, report) of import-linter on the contracts in `config`."""
    run = subprocess.run(LINT + ["--config", str(config)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return run.returncode, run.stdout + run.stderr


def test_layering_contracts_are_kept():
    code, report = lint(ROOT / "pyproject.toml")
    assert code == 0, f"import-linter: a layering contract is broken\n{report}"


def test_a_broken_contract_is_reported(tmp_path):
    """The check is live: a false contract (jit builds on the IR) fails."""
    config = tmp_path / "false_contract.toml"
    config.write_text('[tool.importlinter]\nroot_packages = ["tscript", "tscript_runtime"]\n\n'
                      '[[tool.importlinter.contracts]]\nname = "jit imports no ir"\ntype = "forbidden"\n'
                      'source_modules = ["tscript.jit"]\nforbidden_modules = ["tscript.ir"]\n')
    code, report = lint(config)
    assert code == 1, report
    assert "jit imports no ir BROKEN" in report
    assert "tscript.jit is not allowed to import tscript.ir" in report
