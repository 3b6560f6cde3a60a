"""Every command fails in one line: bad input to every subcommand, in a full and in a core-only environment.

A core-only install (``pip install gensim-jax``: jax, numpy, scipy) is reproduced by a subprocess whose
``sys.meta_path`` refuses the optional dependencies (flax, optax, orbax, TensorFlow, ...), as if they
were not installed.  Each bad input must end as exactly one line on stderr (``warning:`` lines that
name a damaged file aside), a non-zero exit status and no traceback; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gensim_jax.commands import errors
from gensim_jax.commands import main as cli

REPO = Path(__file__).resolve().parents[2]

#: What a core-only install lacks (the extras' top-level modules).
OPTIONAL = (
    "flax",
    "optax",
    "orbax",
    "tensorflow",
    "tensorflow_datasets",
    "torch",
    "sklearn",
    "matplotlib",
    "tensorboardX",
    "tqdm",
    "PIL",
    "safetensors",
    "nltk",
)

BLOCKER = f"""
import sys
class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _NotInstalled())
"""

# Runs each argv through gensim_jax.commands.main.main in this one process and prints [{argv, rc, out, err}].
DRIVER = """
import contextlib, io, json, sys
from gensim_jax.commands import errors
from gensim_jax.commands import main as cli
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as e:
            rc = e.code
        except BaseException as e:
            rc = f"uncaught {type(e).__name__}: {e}"
    results.append({"argv": argv, "rc": rc, "out": out.getvalue(), "err": err.getvalue()})
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> Path:
    """A directory of damaged inputs: exports, npz files, an experiment file, run directories."""
    d = tmp_path_factory.mktemp("bad")
    (d / "empty").mkdir()
    (d / "damaged_export").mkdir()
    (d / "damaged_export" / "variables.msgpack").write_bytes(b"\x00garbage")
    (d / "json_export").mkdir()
    (d / "json_export" / "model.json").write_text("{not json")
    (d / "json_export" / "variables.msgpack").write_bytes(b"\x80")
    (d / "damaged_workdir").mkdir()
    (d / "damaged_workdir" / "config.json").write_text('{"seed": 0, "conf')
    (d / "not.npz").write_text("not an npz archive")
    np.savez(d / "partial.npz", embeddings=np.zeros((2, 6, 3)))
    (d / "broken.py").write_text("EXPERIMENT = (\n")
    (d / "binary_run").mkdir()
    (d / "binary_run" / "metrics.jsonl").write_bytes(bytes(range(256)) * 2)
    (d / "run").mkdir()
    (d / "run" / "metrics.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    return d


def bad_inputs(d: Path) -> list[tuple[list[str], str]]:
    """``(argv, what the one line must contain)`` for every subcommand (full install)."""
    return [
        (["--nope"], "gensim-jax: error: unrecognized arguments: --nope"),
        ([], "gensim-jax: error: a command is required"),
        (["list-models", "extra"], "unrecognized arguments: extra"),
        (["info", "--bogus"], "unrecognized arguments: --bogus"),
        (["runs", "/nonexistent/runs-dir"], "gensim-jax runs: error: /nonexistent/runs-dir: no such directory"),
        (["runs", "compare"], "gensim-jax runs compare: error: the following arguments are required: DIR"),
        (["train"], "gensim-jax train: error: the following arguments are required: EXPERIMENT"),
        (["train", "nope"], "gensim-jax train: error: unknown experiment 'nope'"),
        (["train", "quadrilaterals", "--config", "nope"], "unknown config 'nope' for quadrilaterals"),
        (["train", "quadrilaterals", "--set", "lr=1"], "unknown key 'lr'"),
        (["train", "quadrilaterals", "--set", "optim.lr=1"], "did you mean optim.learning_rate"),
        (["train", "quadrilaterals", "--set", "num_steps=abc"], "--set num_steps: expected"),
        (["train", str(d / "missing.py")], f"experiment file {d / 'missing.py'} does not exist"),
        (["train", str(d / "broken.py")], f"error: {d / 'broken.py'}:1: '(' was never closed"),
        (["train", "quadrilaterals", "--profile-steps", "x"], "--profile-steps must be START:END"),
        (["train", "quadrilaterals", "--peak-tflops", "-1"], "--peak-tflops must be positive"),
        (["plan", "nope"], "gensim-jax plan: unknown experiment 'nope'"),
        (["plan", "quadrilaterals"], "--topology is required"),
        (["plan", "quadrilaterals", "--topology", "zz:1"], "unknown chip 'zz'"),
        (["eval"], "gensim-jax eval: error: a protocol is required"),
        (["eval", "nope"], "gensim-jax eval: error: unknown protocol 'nope'"),
        (["eval", "oddball"], "gensim-jax eval oddball: error: one of the arguments --trials --export is required"),
        (["eval", "oddball", "--export", str(d / "missing")], f"error: no such directory: {d / 'missing'}"),
        (["eval", "export", "--export", str(d / "missing")], f"error: no such directory: {d / 'missing'}"),
        (["eval", "oddball", "--export", str(d / "empty")], f"{d / 'empty'} is not an export"),
        (["eval", "oddball", "--export", str(d / "damaged_export")], f"{d / 'damaged_export'} is not an export"),
        (["eval", "oddball", "--export", str(d / "json_export")], f"{d / 'json_export'} is a damaged export"),
        (["eval", "oddball", "--trials", str(d / "missing.npz")], f"{d / 'missing.npz'}: no such file"),
        (["eval", "oddball", "--trials", str(d / "not.npz")], f"{d / 'not.npz'} is not an .npz archive"),
        (["eval", "oddball", "--trials", str(d / "partial.npz")], "missing arrays ['deviant', 'shapes']"),
        (
            ["eval", "oddball", "--trials", str(d / "partial.npz"), "--error-rates", str(d / "missing.csv")],
            str(d / "missing.csv"),
        ),
        (["eval", "oddball", "--trials", str(d / "partial.npz"), "--target-error", "2"], "--target-error must lie"),
        (["eval", "hierarchy", "--embeddings", str(d / "missing.npz")], f"{d / 'missing.npz'}: no such file"),
        (["eval", "spurious_digits", "--workdir", str(d / "missing")], "has no config.json"),
        (
            ["eval", "spurious_digits", "--workdir", str(d / "damaged_workdir")],
            f"{d / 'damaged_workdir' / 'config.json'} cannot be read as JSON",
        ),
        (["runs", "compare", str(d / "missing")], f"{d / 'missing'}: no such directory"),
        (["runs", "compare", str(d / "empty")], f"{d / 'empty'}: no run in it or below it (no metrics.jsonl"),
        (["runs", "compare", str(d / "binary_run")], f"{d / 'binary_run' / 'metrics.jsonl'} holds no readable record"),
        (["runs", "compare", str(d / "run"), "--out", str(d / "run" / "metrics.jsonl" / "x.png")], "x.png"),
        (["info", "--distributed"], "found no cluster to join"),  # last: it starts JAX's distributed client
    ]


def _drive(argvs: list[list[str]], *, core_only: bool) -> list[dict]:
    code = (BLOCKER if core_only else "") + DRIVER
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GENSIM_JAX_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(argvs)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _the_one_line(result: dict) -> str:
    """The error line of a failed command; fails unless it is the only line but ``warning:`` ones."""
    assert result["rc"] not in (0, None) and isinstance(result["rc"], int), result
    assert "Traceback" not in result["err"], result["err"]
    lines = [line for line in result["err"].splitlines() if line.strip() and not line.startswith("warning: ")]
    assert len(lines) == 1, result
    return lines[0]


@pytest.mark.slow
def test_every_subcommand_fails_in_one_line(bad):
    cases = bad_inputs(bad)
    for (argv, expected), result in zip(cases, _drive([a for a, _ in cases], core_only=False)):
        line = _the_one_line(result)
        assert expected in line, (argv, line)
        assert result["rc"] == 2, (argv, result["rc"])


@pytest.mark.slow
def test_every_subcommand_fails_in_one_line_on_a_core_only_install(bad):
    """Without the extras every bad input is still one line, and a missing extra names the pip command."""
    cases = bad_inputs(bad)
    extra_needed = [
        (["list-models"], "flax is not installed; it comes with pip install 'gensim-jax[models]'"),
        (["train", "quadrilaterals", "--config", "demo"], "is not installed; it comes with pip install 'gensim-jax["),
        (["plan", "quadrilaterals", "--topology", "v5e:2x2"], "is not installed; it comes with pip install"),
        (["runs", "compare", str(bad / "run"), "--out", str(bad / "c.png")], "matplotlib is not installed"),
    ]
    argvs = [a for a, _ in cases] + [a for a, _ in extra_needed]
    results = _drive(argvs, core_only=True)
    for result in results[: len(cases)]:
        _the_one_line(result)
    for (argv, expected), result in zip(extra_needed, results[len(cases) :]):
        line = _the_one_line(result)
        assert expected in line, (argv, line)


def _console(args: list[str], *, core_only: bool = False, module: str = "gensim_jax.commands", env_extra=None):
    """Run a real command-line process (the console script's main, or a ``python -m`` shim)."""
    launch = (
        f"import runpy, sys; sys.argv = [{module!r}] + sys.argv[1:]; runpy.run_module({module!r}, run_name='__main__')"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    env.pop("GENSIM_JAX_DEBUG", None) if not env_extra else None
    return subprocess.run(
        [sys.executable, "-c", (BLOCKER if core_only else "") + launch, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )


@pytest.mark.slow
def test_core_only_train_and_list_models_are_one_line():
    """The two commands of the issue: a 34-line traceback before, one line naming the extra now."""
    for args, prog in ((["train", "quadrilaterals"], "gensim-jax train"), (["list-models"], "gensim-jax list-models")):
        done = _console(args, core_only=True)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert lines[0].startswith(f"{prog}: error: ") and "it comes with pip install 'gensim-jax[" in lines[0]


@pytest.mark.slow
def test_shims_name_the_command_typed_and_debug_shows_the_traceback(tmp_path):
    done = _console(["oddball", "--export", str(tmp_path / "missing")], module="eval")
    assert done.returncode == 2
    assert done.stderr.strip() == f"python -m eval oddball: error: no such directory: {tmp_path / 'missing'}"
    done = _console(["nope"], module="train")
    assert done.returncode == 2 and done.stderr.startswith("python -m train: error: unknown experiment 'nope'")
    done = _console(["oddball", "--help"], module="eval")
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m eval oddball")
    done = _console(["eval", "oddball", "--export", str(tmp_path / "missing"), "--debug"])
    assert done.returncode != 0 and "Traceback (most recent call last)" in done.stderr
    assert "FileNotFoundError" in done.stderr
    done = _console(["eval", "oddball", "--export", str(tmp_path / "missing")], env_extra={"GENSIM_JAX_DEBUG": "1"})
    assert done.returncode != 0 and "Traceback (most recent call last)" in done.stderr


# -- in-process: the pieces of run_command ---------------------------------------------------------
def _raise(err):
    def fn(_argv):
        raise err

    return fn


@pytest.fixture(scope="module")
def library_thrower(tmp_path_factory):
    """A function that raises its argument from a module under ``site-packages``: an error raised in an
    installed library, as opposed to one raised in the user's own code (the test file)."""
    import functools
    import importlib.util

    src = tmp_path_factory.mktemp("lib") / "site-packages" / "thrower.py"
    src.parent.mkdir()
    src.write_text("def throw(err, _argv):\n    raise err\n")
    spec = importlib.util.spec_from_file_location("thrower", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lambda err: functools.partial(module.throw, err)  # partial: no frame of this file in between


@pytest.mark.parametrize(
    "err, line",
    [
        (
            ImportError("optax is not installed; it comes with pip install 'gensim-jax[train]'", name="optax"),
            "prog: error: optax is not installed; it comes with pip install 'gensim-jax[train]'",
        ),
        (ModuleNotFoundError("No module named 'sklearn'", name="sklearn"), "prog: error: sklearn is not installed"),
        (FileNotFoundError("DIR is not an export: variables.msgpack is missing"), "prog: error: DIR is not an export"),
        (PermissionError(13, "Permission denied", "/x/y.json"), "prog: error: /x/y.json: Permission denied"),
        (ValueError("bad value\n  on two lines"), "prog: error: bad value on two lines"),
        (KeyError("nope"), "prog: error: nope"),
        (RuntimeError("boom"), "prog: internal error: RuntimeError: boom (run again with --debug"),
        (SyntaxError("'(' was never closed", ("exp.py", 3, 1, "x = (")), "prog: error: exp.py:3: '(' was never closed"),
    ],
)
def test_errors_become_one_line(err, line, capsys, library_thrower):
    status = errors.run_command(library_thrower(err), [], "prog")
    out = capsys.readouterr()
    assert status == (1 if isinstance(err, RuntimeError) else 2)
    assert out.err.count("\n") == 1 and out.err.startswith(line) and " (at " not in out.err, out.err


def test_the_packages_own_errors_are_user_errors(capsys):
    """An error class of gensim_jax (e.g. a damaged checkpoint's) is raised on purpose: its message, status 2."""
    from gensim_jax.training.checkpoints import CheckpointRestoreError

    err = CheckpointRestoreError("none of the 1 checkpoints in W could be restored; delete W to start over", {})
    assert errors.run_command(_raise(err), [], "gensim-jax train") == 2
    assert capsys.readouterr().err.startswith(f"gensim-jax train: error: {err} (at {__file__}:")


def test_debug_flag_and_environment_show_the_traceback(monkeypatch):
    seen = []

    def fn(argv):
        seen.append(argv)
        raise ValueError("shown with its traceback")

    with pytest.raises(ValueError, match="shown with its traceback"):
        errors.run_command(fn, ["a", "--debug", "b"], "prog")
    assert seen == [["a", "b"]]  # --debug is not passed on
    monkeypatch.setenv(errors.DEBUG_ENV, "1")
    with pytest.raises(ValueError):
        errors.run_command(fn, [], "prog")


def test_ctrl_c_is_one_line_and_status_130(capsys):
    assert errors.run_command(_raise(KeyboardInterrupt()), [], "gensim-jax train") == 130
    assert capsys.readouterr().err == "gensim-jax train: interrupted\n"


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["runs", "compare"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "gensim-jax runs compare: error: the following arguments are required: DIR (see gensim-jax runs compare --help)"
    ]


def test_help_names_no_python_m_plan(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert "python -m plan" not in text and "plan" in text and "--version" in text


@pytest.mark.slow
def test_debug_before_or_after_the_command_and_in_the_environment_shows_the_traceback():
    """The issue's three forms end in a traceback and a non-zero status; without debug: one line, no traceback."""
    for argv, env in (
        (["--debug", "train", "nosuch"], {}),
        (["train", "nosuch", "--debug"], {}),
        (["train", "nosuch"], {"GENSIM_JAX_DEBUG": "1"}),
        (["--debug", "runs", "compare", "/nonexistent/dir"], {}),
    ):
        done = _console(argv, env_extra=env or {"GENSIM_JAX_DEBUG": "0"})
        assert done.returncode != 0 and "Traceback (most recent call last)" in done.stderr, (argv, done.stderr)
    done = _console(["train", "nosuch"])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "gensim-jax train: error: unknown experiment 'nosuch'"
    )


def test_the_bare_command_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    assert exit_.value.code == 2
    line = capsys.readouterr().err
    for command in ("list-models", "info", "runs", "train", "eval", "plan", "prepare-imagenet", "score"):
        assert command in line, line


def test_an_error_in_the_users_own_code_names_its_file_and_line(tmp_path, capsys):
    """An exception raised in a file outside gensim_jax and the installed libraries (a fork, a script) names
    that file's innermost frame; one raised in the library names none."""
    import importlib.util

    src = tmp_path / "user_code.py"
    src.write_text("import numpy as np\n\n\ndef step(_argv):\n    return np.ones((4, 3)) + np.ones((4, 2))\n")
    spec = importlib.util.spec_from_file_location("user_code", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert errors.run_command(module.step, [], "prog") == 2
    line = capsys.readouterr().err
    assert line.startswith("prog: error: operands could not be broadcast"), line
    assert line.endswith(f" (at {src}:5 in step)\n"), line
    assert line.count("\n") == 1
    try:
        np.zeros(3).reshape(2, 2)
    except ValueError as err:
        assert errors.user_code_location(err) is None or str(Path(__file__)) in errors.user_code_location(err)
    with pytest.raises(ValueError):  # --debug: the exception itself, its traceback through the user's line
        errors.run_command(module.step, ["--debug"], "prog")
    assert not errors.debugging()  # --debug does not outlive its command
