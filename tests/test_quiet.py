"""Library noise stays off stdout (Gloo's native prints) and TensorFlow's oneDNN notice off stderr."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_native_stdout_goes_to_stderr_and_python_stdout_stays():
    done = _python(
        "import os, sys\n"
        "from gensim_jax._quiet import native_stdout_to_stderr\n"
        "assert native_stdout_to_stderr()\n"
        "os.write(1, b'[Gloo] Rank 0 is connected to 1 peer ranks\\n')  # what C++ prints to fd 1\n"
        "print('{\"step\": 1}')\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"step": 1}\n'
    assert "[Gloo] Rank 0" in done.stderr


def test_filtered_native_stderr_drops_the_known_notices_only():
    done = _python(
        "import os, sys\n"
        "from gensim_jax._quiet import filtered_native_stderr\n"
        "with filtered_native_stderr():\n"
        "    os.write(2, b'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\\n')\n"
        "    os.write(2, b'I0000 port.cc:153] oneDNN custom operations are on. You may see ...\\n')\n"
        "    os.write(2, b'a real problem\\n')\n"
        "    print('from python', file=sys.stderr)\n"
        "print('after', file=sys.stderr)\n"
    )
    assert done.returncode == 0
    assert done.stderr == "a real problem\nfrom python\nafter\n"


@pytest.mark.slow
def test_importing_tensorflow_prints_no_onednn_notice():
    done = _python("from gensim_jax.data._tf import tf; print(tf.__version__)")
    assert done.returncode == 0, done.stderr
    assert "oneDNN" not in done.stderr and "absl::InitializeLog" not in done.stderr, done.stderr


def test_quiet_libtpu_env_sets_only_what_is_unset_and_nothing_on_a_tpu_vm(tmp_path):
    from gensim_jax._quiet import LIBTPU_QUIET_ENV, quiet_libtpu_env

    env = {"TPU_WORKER_HOSTNAMES": "10.0.0.1,10.0.0.2"}  # the caller's pod stays the caller's
    added = quiet_libtpu_env(env, device_globs=(str(tmp_path / "accel*"),))
    assert added == [k for k, _ in LIBTPU_QUIET_ENV if k != "TPU_WORKER_HOSTNAMES"]
    assert env["TPU_WORKER_HOSTNAMES"] == "10.0.0.1,10.0.0.2" and env["TPU_ACCELERATOR_TYPE"] == "v5litepod-4"
    (tmp_path / "accel0").touch()  # a TPU VM's device node: libtpu is left to find its chips
    env = {}
    assert quiet_libtpu_env(env, device_globs=(str(tmp_path / "accel*"),)) == [] and env == {}


#: A line of libtpu's start-up noise (issues 32 and 38).
LIBTPU_NOISE = re.compile(r"libtpu|TPU_|E0000|Source Location Trace")


@pytest.fixture
def noisy_env():
    """The environment in which libtpu, when nothing prevents it, prints its start-up errors: no
    :data:`~gensim_jax._quiet.LIBTPU_QUIET_ENV` (the test session sets it), and ALLOW_MULTIPLE_LIBTPU_LOAD
    so that libtpu starts even while another process (a pytest worker) holds its lock file (without it
    libtpu gives up quietly, and the tests would pass without testing anything)."""
    import glob

    pytest.importorskip("libtpu")
    from gensim_jax._quiet import _TPU_DEVICE_GLOBS, LIBTPU_QUIET_ENV

    if any(glob.glob(g) for g in _TPU_DEVICE_GLOBS):
        pytest.skip("a TPU VM: libtpu starts its chips here, quietly")
    env = {k: v for k, v in os.environ.items() if k not in dict(LIBTPU_QUIET_ENV) and k != "JAX_PLATFORMS"}
    env.update(PYTHONPATH=str(REPO), ALLOW_MULTIPLE_LIBTPU_LOAD="1")
    return env


@pytest.mark.slow
def test_importing_gensim_jax_keeps_libtpu_start_up_errors_off_stderr(noisy_env):
    """Issue 32: ``E0000 ... unexpected worker hostname ... TPU_WORKER_HOSTNAMES`` on every script that
    imported JAX with libtpu installed; issue 38: also when jax is imported first (``make demo``'s first
    line imported jax alone)."""

    def run(code):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=noisy_env, timeout=120)

    bare = run("import jax; print(jax.default_backend())")
    assert bare.returncode == 0 and "TPU_WORKER_HOSTNAMES" in bare.stderr  # the noise, when nothing prevents it
    for imports in ("gensim_jax, jax", "jax, gensim_jax"):
        quiet = run(f"import {imports}; print(jax.default_backend())")
        assert quiet.returncode == 0 and quiet.stdout.strip() == "cpu"
        assert "E0000" not in quiet.stderr and "TPU" not in quiet.stderr, (imports, quiet.stderr)


@pytest.mark.slow
def test_commands_on_a_machine_without_tpus_print_no_libtpu_noise(noisy_env, tmp_path):
    """Issue 38: no libtpu, TPU_, E0000 or Source Location Trace line in ``gensim-jax info`` or a
    two-step ``gensim-jax train gaussian_mixture`` (JAX started, a run trained, evaluated and written)."""
    commands = (
        ["info"],
        ["train", "gaussian_mixture", "--workdir", str(tmp_path / "run"), "--set", "num_steps=2"]
        + ["eval.num_test_points=100", "eval.num_pairs=1000"],
    )
    for args in commands:
        done = subprocess.run(
            [sys.executable, "-m", "gensim_jax.commands", *args],
            capture_output=True,
            text=True,
            env=noisy_env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        noise = [line for line in (done.stdout + done.stderr).splitlines() if LIBTPU_NOISE.search(line)]
        assert not noise, (args, noise)
