"""The gensim-jax command: list-models, info, and forwarding of train to python -m train."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensim_jax.commands import main as cli
from gensim_jax.models import list_models

REPO = Path(__file__).resolve().parents[2]


def test_list_models_prints_the_registry(capsys):
    assert cli.main(["list-models"]) == 0
    assert capsys.readouterr().out.split() == list_models()


def test_info_prints_devices(capsys):
    assert cli.main(["info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["device_count"] >= 1 and info["process_count"] == 1


def test_train_and_eval_run_the_package_commands(monkeypatch):
    from gensim_jax.commands import eval as eval_cli
    from gensim_jax.commands import train as train_cli

    calls = []
    monkeypatch.setattr(train_cli, "main", lambda argv: calls.append(("train", argv)) or 3)
    monkeypatch.setattr(eval_cli, "main", lambda argv: calls.append(("eval", argv)) or 4)
    assert cli.main(["train", "gaussian_mixture", "--config", "quick", "--set", "steps=2"]) == 3
    assert cli.main(["eval", "oddball", "--help"]) == 4
    assert calls == [
        ("train", ["gaussian_mixture", "--config", "quick", "--set", "steps=2"]),
        ("eval", ["oddball", "--help"]),
    ]


@pytest.mark.slow
def test_train_works_outside_the_repository(tmp_path):
    """The experiments ship in the package: no train/ folder in the working directory is needed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-m", "gensim_jax.commands", "train", "quadrilaterals", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "demo" in out.stdout and "cpu_small" in out.stdout and "paper" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "gensim_jax.commands", "train", "quadrilaterals", "--config", "nope"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "unknown config 'nope'" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_training_package_imports_neither_tensorflow_nor_torch():
    code = (
        "import sys, gensim_jax.training, gensim_jax.parallel, gensim_jax.commands.main; "
        "print('tensorflow' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.split() == ["False", "False"], out


@pytest.mark.slow
def test_plan_reports_the_arm_the_overrides_and_the_resolved_config(capsys):
    argv = ["plan", "gaussian_mixture", "--topology", "v5e:2x2", "--set", "optim.learning_rate=0.02"]
    assert cli.main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["config"] == "paper" and report["arm"] == "gensim"
    assert report["overrides"] == ["optim.learning_rate=0.02"]
    assert report["resolved_config"]["optim"]["learning_rate"] == 0.02  # nested, as config.json
    assert cli.main(argv) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == "planned gaussian_mixture, arm gensim; --set overrides: optim.learning_rate=0.02"
    assert "resolved config:" in text and any(line.split() == ["optim.learning_rate", "0.02"] for line in text)


@pytest.mark.slow
def test_prepare_imagenet_is_forwarded_with_one_line_errors(tmp_path, capsys):
    from gensim_jax.commands.main import main

    assert main(["prepare-imagenet", "--data-dir", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gensim-jax prepare-imagenet: error:") and "imagenet2012" in err


def test_prepare_imagenet_help_and_argument_errors_do_not_import_tensorflow():
    """The parser reads ``prepared.FORMATS`` without TensorFlow (4-5 s); the records need it, not ``--help``."""
    code = (
        "import sys\nfrom gensim_jax.commands.main import main\n"
        "for argv in (['prepare-imagenet', '--help'], ['prepare-imagenet', '--format', 'png']):\n"
        "    try:\n        main(argv)\n    except SystemExit as e:\n        print('exit', e.code)\n"
        "print('tensorflow' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split()[-5:] == ["exit", "0", "exit", "2", "False"], done.stdout[-500:] + done.stderr[-2000:]
    assert "gensim-jax prepare-imagenet: error: argument --format: invalid choice: 'png'" in done.stderr, done.stderr


#: Every command and sub-command of the console, as a user asks it for help.
HELP_COMMANDS = [
    [],
    ["list-models"],
    ["info"],
    ["runs"],
    ["runs", "list"],
    ["runs", "compare"],
    ["train"],
    ["train", "quadrilaterals"],
    ["plan"],
    ["eval"],
    *[
        ["eval", protocol]
        for protocol in ("export", "oddball", "geoclidean", "hierarchy", "odd_one_out", "spurious_digits")
    ],
    ["score"],
    ["score", "stimuli"],
    ["prepare-imagenet"],
    ["new-experiment"],
]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=lambda c: " ".join(c) or "gensim-jax")
def test_help_shows_no_docstring_markup(command, capsys):
    """``--help`` is built from docstrings written for Sphinx: none of their markup reaches the terminal."""
    with pytest.raises(SystemExit) as exit_:
        status = cli.main([*command, "--help"])
        raise SystemExit(status)
    assert exit_.value.code in (0, None)
    text = capsys.readouterr().out
    assert text.strip(), command
    for markup in ("``", ":func:", ":attr:", ":class:", ":mod:", ":meth:"):
        assert markup not in text, (command, markup, [line for line in text.splitlines() if markup in line])
