"""The training-step rows of `python -m benchmarks models` (benchmarks/models_training.py): selected by key,
every candidate's first step checked (tscript compiled against eager, PyTorch from the same weights), and
the table's ratios, target verdicts and disagreement marks."""
import contextlib
import dataclasses
import math

import numpy as np
import pytest

from benchmarks import models, models_training as mt
from benchmarks.models import TOLERANCE

CNN = dataclasses.replace(mt.SPECS[0], shape=(4, 3, 32, 32))  # the CNN row at batch 4


def test_rows_are_selected_by_key():
    assert [s.key for s in mt.selected(set())] == ["cnn_train", "gpt_train"]
    assert [s.key for s in mt.selected({"gpt_train", "resnet18"})] == ["gpt_train"]
    assert mt.selected({"gpt"}) == []  # the inference row's key does not select the training row


def test_compiled_first_step_matches_eager(monkeypatch):
    monkeypatch.setattr(mt, "_cold_tscript", contextlib.nullcontext)  # the object cache may serve this test
    xn, yn = CNN.example()
    candidates, compiled = mt._tscript_candidates(CNN, xn, yn)
    assert set(candidates) == {"ts.compiled", "ts.eager"}
    compiled_step = candidates["ts.compiled"]
    assert compiled_step.seconds > 0 and candidates["ts.eager"].seconds is None
    assert abs(compiled_step.loss - math.log(10)) < 1.0  # 10 classes, a fresh model
    assert set(compiled_step.grads) == set(CNN.checked) and all(np.any(g) for g in compiled_step.grads.values())
    errors = mt._errors(candidates, "ts.eager")
    assert max(errors["ts.compiled"].values()) <= TOLERANCE, errors
    second = compiled_step.step().item()  # the SGD step moved the weights
    assert second != compiled_step.loss


def test_the_torch_twin_takes_the_same_first_step():
    torch = pytest.importorskip("torch")
    xn, yn = CNN.example()
    model = mt._build(CNN)
    mine = mt._first_step(CNN, mt._step(mt.ts, model, model, mt.ts.from_numpy(xn), mt.ts.from_numpy(yn)), model)
    twin = mt._twin(CNN, mt._build(CNN))
    theirs = mt._first_step(CNN, mt._step(torch, twin, twin, torch.from_numpy(xn), torch.from_numpy(yn)), twin)
    errors = mt._errors({"ts.eager": mine, "torch": theirs}, "torch")
    assert max(errors["ts.eager"].values()) <= TOLERANCE, errors


def test_without_torch_the_tscript_candidates_still_run(monkeypatch, capsys):
    monkeypatch.setattr(mt, "torch", None)
    monkeypatch.setattr(mt, "_cold_tscript", contextlib.nullcontext)
    monkeypatch.setattr(models, "BUDGET", 0.01)  # the fewest rounds the harness takes
    mt.run([CNN])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(CNN.name))
    cells = row[len(CNN.name):].split()
    assert cells[2:4] == ["-", "-"] and "!" not in row  # no torch columns; compiled agrees with eager
    assert "PyTorch is not installed: tscript candidates only, checked against tscript eager" in out


def _result(**errors) -> mt.TrainResult:
    medians = {"ts.compiled": 0.009, "ts.eager": 0.030, "torch": 0.020, "torch.compile": 0.010}
    return mt.TrainResult(mt.SPECS[1], medians=medians, reference="torch", seconds={"ts.compiled": 6.3},
                          native={"fwd": True, "bwd": True},
                          errors={k: {"loss": errors.get(k, 0.0)} for k in medians})


def test_the_table_gives_ratios_and_the_target():
    row = mt.table([_result()]).splitlines()[2]
    assert "9.00" in row and "0.90 (torch.compile)" in row and "0.90 (<= 0.8: not met)" in row
    assert "6.3 / -" in row and "fwd+bwd" in row and "!" not in row


def test_a_disagreeing_anchor_is_marked_and_not_compared():
    result = _result(**{"torch.compile": 1e-2})
    row = mt.table([result]).splitlines()[2]
    assert "10.00!" in row and "0.45 (torch)" in row and "- (<= 0.8)" in row
    assert mt.notes([result]) == [f"! {result.spec.name}: torch.compile's first step disagrees with torch: "
                                  f"loss 1.00e-02 > {TOLERANCE:g} relative"]
