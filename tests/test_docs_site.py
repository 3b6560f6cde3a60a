"""The documentation site (``make docs``, docs/conf.py): it builds with warnings as errors, and its API
reference has a page for every public module that names every entry of the module's ``__all__``.

The site is built from a copy of docs/ (and README.md, CHANGELOG.md, which it includes) in a scratch
directory, so that the generated reference sources land there and not in the checkout.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def public_modules() -> list[str]:
    """Every module of gensim_jax whose dotted name has no part with a leading underscore."""
    import gensim_jax

    names = ["gensim_jax"]
    for info in pkgutil.walk_packages(gensim_jax.__path__, "gensim_jax.", onerror=lambda name: None):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


@pytest.mark.slow  # imports every package of gensim_jax (flax, optax, ...)
def test_public_modules_are_found():
    modules = public_modules()
    assert {"gensim_jax.losses", "gensim_jax.losses.regression", "gensim_jax.commands.eval.export"} <= set(modules)
    assert not [m for m in modules if "._" in m]


def build_site(src: Path) -> Path:
    """The HTML site, built as ``make docs`` builds it, from a copy of the sources in ``src``.

    One Sphinx process (``-j 1``) where ``make docs`` runs one per core (``-j auto``): the pages are the
    same, and in a test session both cores are busy with the other pytest worker, so the parallel build's
    forks and pickled environments only add CPU (124 s against 112 s on 2 cores)."""
    shutil.copytree(ROOT / "docs", src / "docs", ignore=shutil.ignore_patterns("_build", "generated"))
    for name in ("README.md", "CHANGELOG.md"):
        shutil.copy(ROOT / name, src / name)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-j", "1", "-q", "docs", "html"],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(f"docs site built in {time.perf_counter() - t0:.0f} s")
    assert done.returncode == 0, f"make docs would fail:\n{done.stderr[-6000:]}"
    return src / "html"


def _ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="(gensim_jax\.[^"]+)"', html))


def check_every_public_name_is_on_its_module_page(site: Path) -> None:
    pages = {p.stem: p.read_text() for p in (site / "reference" / "generated").glob("gensim_jax*.html")}
    all_ids = set().union(*(_ids(html) for html in pages.values()))
    missing, unresolved, checked = [], [], 0
    for modname in public_modules():
        assert modname in pages, f"no API page for {modname}"
        module = importlib.import_module(modname)
        html = pages[modname]
        for name in getattr(module, "__all__", ()):
            checked += 1
            # a table row or an entry shows the name as code: <span class="pre">NAME</span>
            if f'<span class="pre">{name}</span>' not in html:
                missing.append(f"{modname}.{name}")
                continue
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                # documented here in full, or linked to the one entry of the object on another page
                here = f"{modname}.{name}" in _ids(html)
                linked = [t for t in re.findall(r'href="[^"#]*#(gensim_jax\.[^"]+)"', html) if t.endswith(f".{name}")]
                if not here and not any(t in all_ids for t in linked):
                    unresolved.append(f"{modname}.{name}")
    assert not missing, f"names of __all__ absent from their module's API page: {missing}"
    assert not unresolved, f"callables of __all__ with no documented entry: {unresolved}"
    assert checked > 500


def check_gensim_loss_is_documented_under_losses(site: Path) -> None:
    html = (site / "reference" / "generated" / "gensim_jax.losses.html").read_text()
    assert 'id="gensim_jax.losses.gensim_loss"' in html
    start = html.index('id="gensim_jax.losses.gensim_loss"')
    entry = html[start : html.find('<dl class="py', start)]  # up to the next object's entry
    assert "GenSim loss from embeddings" in entry and "Parameters" in entry, entry[:3000]
    # the defining module links to that entry rather than repeating it
    regression = (site / "reference" / "generated" / "gensim_jax.losses.regression.html").read_text()
    assert 'href="gensim_jax.losses.html#gensim_jax.losses.gensim_loss"' in regression
    # the guides are pages of the site, README is its front page
    for page in ("index", "EXPERIMENTS", "API", "ARCHITECTURE", "changelog", "results/quadrilaterals"):
        assert (site / f"{page}.html").is_file(), page


@pytest.mark.slow
def test_the_site_builds_and_documents_every_public_name(tmp_path):
    """One build (about 1.5 min on 2 cores), two checks: every name of every public ``__all__`` on its
    module's page, with an entry for each function and class; ``gensim_loss`` in full under
    ``gensim_jax.losses``."""
    site = build_site(tmp_path)
    check_every_public_name_is_on_its_module_page(site)
    check_gensim_loss_is_documented_under_losses(site)
