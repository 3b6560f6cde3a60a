"""Library noise stays off stdout (Gloo's native prints) and TensorFlow's oneDNN notice off stderr."""

import os
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
