"""`python -m benchmarks.coverage`: the AST walk counts PyTorch references through every import
alias, looks them up in tscript and reports the usage-weighted share and the missing names."""
from collections import Counter

import pytest

from benchmarks import coverage

CODE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.nn import Linear


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 3)

    def forward(self, x):
        y = F.relu(self.fc(x)).view(-1)
        z = torch.not_a_real_function(y) + torch.cat([y, y])
        return y.made_up_method().sum() + torch.nn.functional.gelu(z)


opt = optim.SGD(Net().parameters(), lr=0.1)
'''

SHADOWED = '''
import torch.optim as optim
import torch

optim = torch.optim.Adam([], lr=0.1)
optim.step()
'''


def test_collect_counts_references_through_aliases(tmp_path):
    (tmp_path / "model.py").write_text(CODE)
    (tmp_path / "broken.py").write_text("def (:\n")  # unparsable files are skipped
    refs, methods, files = coverage.collect([tmp_path])
    assert files == 1
    assert refs["torch.nn.Module"] == 1 and refs["torch.nn.Linear"] == 1
    assert refs["torch.nn.functional.relu"] == 1 and refs["torch.nn.functional.gelu"] == 1
    assert refs["torch.optim.SGD"] == 1 and refs["torch.cat"] == 1
    assert "torch.nn" not in refs and "torch" not in refs  # modules are not references by themselves


def test_resolution_and_report():
    assert coverage.resolves("torch.nn.functional.relu") and coverage.resolves("torch.linalg.vector_norm")
    assert not coverage.resolves("torch.not_a_real_function")
    text = coverage.report(Counter({"torch.cat": 3, "torch.not_a_real_function": 1}), Counter({"sum": 4}), 1, top=5)
    assert "resolve in tscript: 87.5% of references" in text and "torch.not_a_real_function" in text


def test_tensor_methods_need_torch(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "model.py").write_text(CODE)
    _, methods, _ = coverage.collect([tmp_path])
    assert methods["view"] == 1 and methods["sum"] == 1 and "made_up_method" not in methods


def test_main_prints_the_figure(tmp_path, capsys):
    (tmp_path / "model.py").write_text(CODE)
    assert coverage.main([str(tmp_path), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "1 files" in out and "torch.not_a_real_function" in out


def test_a_name_the_module_assigns_is_not_an_alias(tmp_path):
    (tmp_path / "train.py").write_text(SHADOWED)
    refs, _, _ = coverage.collect([tmp_path])
    assert refs == {"torch.optim.Adam": 1}
