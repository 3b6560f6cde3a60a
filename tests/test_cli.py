"""The gensim-jax command: list-models, info, and forwarding of train to python -m train."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gensim_jax import cli
from gensim_jax.models import list_models

REPO = Path(__file__).resolve().parents[1]


def test_list_models_prints_the_registry(capsys):
    assert cli.main(["list-models"]) == 0
    assert capsys.readouterr().out.split() == list_models()


def test_info_prints_devices(capsys):
    assert cli.main(["info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["device_count"] >= 1 and info["process_count"] == 1


def test_train_and_eval_forward_to_python_m(monkeypatch):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 3)
    assert cli.main(["train", "gaussian_mixture", "--config", "quick", "--set", "steps=2"]) == 3
    assert cli.main(["eval", "oddball", "--help"]) == 3
    assert cli.main(["train", "--help"]) == 3  # the experiment list comes from python -m train
    assert calls == [[sys.executable, "-m", "train", "gaussian_mixture", "--config", "quick", "--set", "steps=2"],
                     [sys.executable, "-m", "eval", "oddball", "--help"],
                     [sys.executable, "-m", "train", "--help"]]


def test_forwarding_outside_the_repository_explains_where_to_run(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != REPO])
    monkeypatch.delitem(sys.modules, "train", raising=False)
    assert cli.main(["train", "geoclidean"]) == 2
    assert "repository root" in capsys.readouterr().err and calls == []


@pytest.mark.slow
def test_training_package_imports_neither_tensorflow_nor_torch():
    code = "import sys, gensim_jax.training, gensim_jax.parallel, gensim_jax.cli; " \
           "print('tensorflow' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.split() == ["False", "False"], out
