"""python -m eval --help and gensim-jax eval --help list every protocol with its one-line description."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gensim_jax.commands import main as cli
from gensim_jax.commands.eval import PROTOCOLS, main

REPO = Path(__file__).resolve().parents[3]


def test_help_lists_protocols(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in PROTOCOLS:
        assert f"  {name} " in out
    assert "Fig. 3C" in out and "--workdir" in out
    assert main(["no_such_protocol"]) == 2


@pytest.mark.slow
def test_python_m_eval_help_runs_from_the_repository_root():
    out = subprocess.run(
        [sys.executable, "-m", "eval", "--help"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert all(name in out for name in PROTOCOLS)


def test_gensim_jax_eval_help_forwards(monkeypatch):
    from gensim_jax.commands import eval as eval_cli

    calls = []
    monkeypatch.setattr(eval_cli, "main", lambda argv: calls.append(argv) or 0)
    assert cli.main(["eval", "--help"]) == 0
    assert cli.main(["eval", "-h"]) == 0
    assert calls == [["--help"], ["-h"]]
