"""Packaging: the lock covers pyproject.toml, extras fail by name, and the core wheel works alone.

The wheel test builds gensim-jax, installs it *without extras* into a fresh virtual environment
(jax, numpy and scipy only), runs every docstring example of the similarities, kernels and losses
there, and checks that importing a module of an extra says which ``pip install 'gensim-jax[EXTRA]'``
brings it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gensim_jax._extras import EXTRAS, require

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: modules a core install must not load (each is an extra's, and each costs seconds at import)
HEAVY = (
    "flax",
    "optax",
    "orbax",
    "chex",
    "tensorflow",
    "tensorflow_datasets",
    "torch",
    "matplotlib",
    "sklearn",
    "tqdm",
    "tensorboardX",
    "hypothesis",
    "nltk",
    "PIL",
)


def _lock() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"requirements.lock: {line!r} is not an exact pin NAME==VERSION"
            pins[canonicalize_name(name)] = version
    return pins


def test_lock_pins_every_requirement_within_its_bounds():
    pins = _lock()
    project = PYPROJECT["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    checked = 0
    for req in reqs:
        name = canonicalize_name(req.name)
        if name == "gensim-jax":
            continue
        assert name in pins, f"{req} is in pyproject.toml but not in requirements.lock (run make lock)"
        assert req.specifier.contains(pins[name], prereleases=True), f"lock has {name}=={pins[name]}, outside {req}"
        checked += 1
    assert checked >= 15
    cuda = sorted(n for n in pins if n.startswith(("nvidia-", "cuda-")))
    assert not cuda, f"requirements.lock pulls CUDA wheels {cuda}: pin torch to a CPU build"


def test_extras_are_the_ones_require_knows():
    optional = set(PYPROJECT["project"]["optional-dependencies"])
    assert set(EXTRAS) - {"core"} == optional


def test_require_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` now fails as if absent
    with pytest.raises(ImportError, match=re.escape("pip install 'gensim-jax[data]'")):
        require("tensorflow", "data")
    with pytest.raises(ValueError, match="unknown extra 'tf'"):
        require("numpy", "tf")
    assert require("numpy", "core").__name__ == "numpy"


def test_pipelines_without_tensorflow_gather_with_numpy_and_name_the_extra_for_tf_data():
    """Streams without augmentation need no TensorFlow (engine="numpy"); a tf.data one names the extra."""
    code = textwrap.dedent("""
        import sys
        sys.modules["tensorflow"] = None
        import numpy as np
        from gensim_jax.data import pipelines
        from gensim_jax.data.sources import ArraySource
        src = ArraySource({"image": np.zeros((8, 4, 4, 3), np.uint8), "label": np.arange(8)})
        batch = next(pipelines.as_numpy(pipelines.labelled_batches(src, 4, seed=0, engine="numpy")))
        print(batch["image"].shape)
        try:
            pipelines.labelled_batches(src, 4, seed=0)
        except ImportError as err:
            print(err)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "(4, 4, 4, 3)" and "pip install 'gensim-jax[data]'" in lines[1]


@pytest.mark.parametrize(
    "blocked, module, extra",
    [
        ("flax", "gensim_jax.models", "models"),
        ("tensorflow", "gensim_jax.data.imagenet", "data"),
        ("tensorflow", "gensim_jax.data.augment", "data"),
    ],
)
def test_module_of_an_extra_fails_naming_it(blocked, module, extra):
    code = textwrap.dedent(f"""
        import sys
        sys.modules[{blocked!r}] = None
        try:
            import {module}
        except ImportError as err:
            print(err)
        else:
            print("imported")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert f"pip install 'gensim-jax[{extra}]'" in out.stdout, out.stdout + out.stderr


_CORE_CHECK = """
import doctest, importlib, json, pkgutil, sys, time
t0 = time.perf_counter()
import gensim_jax.kernels, gensim_jax.losses, gensim_jax.similarity
import_s = time.perf_counter() - t0
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
names = ["gensim_jax.similarity", "gensim_jax._extras"]
for pkg in (gensim_jax.kernels, gensim_jax.losses):
    names += [pkg.__name__ + "." + m.name for m in pkgutil.iter_modules(pkg.__path__)]
flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
failed = attempted = 0
for name in names:
    r = doctest.testmod(importlib.import_module(name), optionflags=flags)
    failed += r.failed
    attempted += r.attempted
errors = {{}}
for module in ("gensim_jax.models", "gensim_jax.data.augment", "gensim_jax.evaluation.figures"):
    try:
        importlib.import_module(module)
        if module.endswith("figures"):
            importlib.import_module(module).plot_odd_one_out([0.1, 1.0], {{"p": [0.4, 0.35]}})
        errors[module] = None
    except ImportError as err:
        errors[module] = str(err)
print(json.dumps(dict(import_s=import_s, heavy=heavy, failed=failed, attempted=attempted, errors=errors,
                      file=gensim_jax.__file__)))
"""


@pytest.mark.slow
def test_core_wheel_installs_and_runs_without_extras(tmp_path):
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    pip = dict(capture_output=True, text=True, timeout=600)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)], **pip)
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("gensim_jax-*.whl")
    # a bare venv driven by this interpreter's pip (``--python``), and no byte-compiling of the
    # installed packages: the same resolution and files, 9 s less than a venv with its own pip
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    venv_pip = [sys.executable, "-m", "pip", "--python", str(py)]
    t0 = time.perf_counter()
    r = subprocess.run([*venv_pip, "install", "-q", "--no-compile", str(wheel)], **pip)
    install_s = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    installed = subprocess.run([*venv_pip, "freeze"], **pip).stdout
    names = {canonicalize_name(re.split(r"[=@ ]", ln)[0]) for ln in installed.splitlines() if ln and ln[0] != "#"}
    assert names <= {"gensim-jax", "jax", "jaxlib", "ml-dtypes", "numpy", "opt-einsum", "scipy"}, names

    out = subprocess.run([str(py), "-c", _CORE_CHECK.format(heavy=HEAVY)], cwd=tmp_path, **pip)
    assert out.returncode == 0, out.stderr
    res = __import__("json").loads(out.stdout.splitlines()[-1])
    print(f"core install {install_s:.1f} s, import {res['import_s']:.2f} s, {res['attempted']} examples")
    assert res["file"].startswith(str(venv)), res["file"]  # the wheel, not the checkout
    assert res["heavy"] == [], f"the core imported extras' modules {res['heavy']}"
    assert res["attempted"] >= 20 and res["failed"] == 0, res
    assert "pip install 'gensim-jax[models]'" in res["errors"]["gensim_jax.models"]
    assert "pip install 'gensim-jax[data]'" in res["errors"]["gensim_jax.data.augment"]
    assert "pip install 'gensim-jax[eval]'" in res["errors"]["gensim_jax.evaluation.figures"]
