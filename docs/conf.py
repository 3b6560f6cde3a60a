"""Sphinx configuration of gensim-jax's documentation site (``make docs``).

The pages are the Markdown files of docs/ (and README.md as the landing page), read by myst-parser; the
API reference (docs/reference/) is generated from the docstrings by autodoc and autosummary: one page per
public module (no leading underscore in its dotted name), listing every name of its ``__all__``.
The build runs with warnings as errors (``-W --keep-going``); every warning silenced here says why.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout, as the tests import it
os.environ.setdefault("JAX_PLATFORMS", "cpu")  # importing the package for autodoc needs no accelerator

from sphinx.ext import autosummary  # noqa: E402
from sphinx.pycode import ModuleAnalyzer  # noqa: E402

import gensim_jax  # noqa: E402

project = "gensim-jax"
author = "gensim-jax contributors"
copyright = "2026, gensim-jax contributors"
release = version = gensim_jax.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # the docstrings' Google-style Args:/Returns:/Raises: sections (as optax's)
    "sphinx.ext.mathjax",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    # raw benchmark logs of accelerator sessions, linked from performance_log.md as files, not pages
    "bench_results/**",
]

# ------------------------------------------------------------------ Markdown (myst-parser)

myst_enable_extensions = ["colon_fence", "dollarmath"]
# The pages link to each other's sections as GitHub does (FILE.md#a-heading): anchors for h1-h4.
myst_heading_anchors = 4

# ------------------------------------------------------------------ API reference (autodoc)


def public_modules() -> list[str]:
    """Every module and package of gensim_jax whose dotted name has no part with a leading underscore."""
    names, todo = [], ["gensim_jax"]
    while todo:
        name = todo.pop()
        names.append(name)
        module = importlib.import_module(name)
        for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
            if not info.name.startswith("_"):
                todo.append(f"{name}.{info.name}")
    return sorted(names)


def public_names(modname: str) -> list[str]:
    """A module's public names: its ``__all__``; for a module without one, the functions and classes it
    defines and the constants it documents with a ``#:`` comment (what ``automodule :members:`` shows)."""
    module = importlib.import_module(modname)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    commented = {name for (scope, name) in ModuleAnalyzer.for_module(modname).find_attr_docs() if not scope}
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        if name in commented or (
            (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", None) == modname
        ):
            names.append(name)
    return names


def _public_api() -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]:
    """Where each public name is documented in full: ``(public names of each module, names documented on each
    module's page, {module.name: the full name it is documented under})``.

    Packages re-export their modules' names (``gensim_jax.losses.gensim_loss`` is
    ``gensim_jax.losses.regression.gensim_loss``). One object under one name gets one entry, on the page of
    the shallowest public module that lists it (the name users import: ``gensim_jax.losses``), its defining
    module breaking ties; every other module that lists it links to that entry from its own table. Two
    entries for one object and name would make every reference to it ambiguous; an alias
    (``make_stimuli = synthetic_stimuli``) is another name and gets its own entry.
    """
    listed: dict = {}
    objects = {}
    names_of = {}
    for modname in public_modules():
        module = importlib.import_module(modname)
        names_of[modname] = public_names(modname)
        for name in names_of[modname]:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            # an int or str may be the same object in two modules by interning alone: one entry each
            shared = inspect.isclass(obj) or callable(obj) or isinstance(obj, (dict, list, tuple))
            key = (id(obj) if shared else modname, name)
            objects[key] = obj
            listed.setdefault(key, []).append(modname)
    documented: dict[str, list[str]] = {}
    canonical: dict[str, str] = {}
    for key, modnames in listed.items():
        name, defining = key[1], getattr(objects[key], "__module__", None)
        depth = min(m.count(".") for m in modnames)
        tied = sorted(m for m in modnames if m.count(".") == depth)
        home = defining if defining in tied else tied[0]
        documented.setdefault(home, []).append(name)
        for modname in modnames:
            canonical[f"{modname}.{name}"] = f"{home}.{name}"
    return names_of, documented, canonical


API_NAMES, API_DOCUMENTED, API_CANONICAL = _public_api()

# autosummary's table shows each object's first sentence, cut at a period followed by a space; in these
# docstrings an ellipsis inside a literal (``LABEL ... N s``, ``"... x 90 epochs"``) is no sentence end, and
# cutting there leaves the literal open (a reStructuredText error). Sphinx keeps the pattern in a module
# attribute; without it (another Sphinx) the cut is Sphinx's own.
if hasattr(autosummary, "periods_re"):
    autosummary.periods_re = re.compile(r"(?<!\.)\.(?:\s+)")


def _shadowed_modules() -> dict[str, list[str]]:
    """Submodules that their package's namespace hides behind another object of the same name
    (``gensim_jax.models.resnet`` is the factory function ``resnet``): autosummary resolves such a name to
    the object, so their pages are written here (:func:`_write_shadowed_pages`), as the template would."""
    out: dict[str, list[str]] = {}
    for modname in public_modules():
        package = importlib.import_module(modname)
        for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
            value = getattr(package, info.name, None)
            if not info.name.startswith("_") and value is not None and not inspect.ismodule(value):
                assert not info.ispkg, f"{modname}.{info.name}: a shadowed package needs its subpages too"
                out.setdefault(modname, []).append(info.name)
    return out


API_SHADOWED = _shadowed_modules()

autosummary_generate = True
autosummary_ignore_module_all = False  # a module's __all__ is its public face: list exactly those names
# docs/_templates/autosummary/module.rst lists API_NAMES[module], documents API_DOCUMENTED[module], links the rest
autosummary_context = {
    "api_names": API_NAMES,
    "api_documented": API_DOCUMENTED,
    "api_canonical": API_CANONICAL,
    "api_shadowed": API_SHADOWED,
}
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True  # `reduction="mean"`, not the evaluated default object
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# A class's "Attributes:" section becomes :ivar: fields: autodoc documents the attributes themselves
# (dataclass and NamedTuple fields), and a second description of each would be a duplicate.
napoleon_use_ivar = True
# Experiment's docstring lists its class attributes under "Class attributes:", read as napoleon reads
# "Attributes:" (otherwise its indented continuation lines are a reStructuredText error).
napoleon_custom_sections = [("Class attributes", "Attributes")]
# The API pages' objects are found in the page's own table and the sidebar lists pages, not objects:
# with an entry per object the navigation tree that the theme renders into every page is ~10x larger
# (most of the build's time).
toc_object_entries = False

# ------------------------------------------------------------------ HTML

html_theme = "furo"
html_title = f"gensim-jax {release}"
html_static_path: list[str] = []


def _skip_foreign_modules(app, what, name, obj, skip, options):
    """A module in a package's ``__all__`` that is not part of gensim-jax (``gensim_jax.data.tf`` is
    TensorFlow itself) is listed, not documented: autosummary would otherwise recurse into it."""
    if type(obj).__name__ == "module" and not getattr(obj, "__name__", "").startswith("gensim_jax"):
        return True
    return None


def _drop_inherited_type_docs(app, what, name, obj, options, lines):
    """A module constant without a doc comment (``CHIPS = {...}``) has no docstring of its own; Python hands
    autodoc its type's (``dict(**kwargs) -> new dictionary ...``), which is not about the constant."""
    if what in ("data", "attribute") and not isinstance(obj, type) and lines:
        own = getattr(type(obj), "__doc__", None)
        if isinstance(own, str) and "\n".join(lines).strip() == inspect.cleandoc(own).strip():
            lines[:] = []


def _resolve_bare_annotations(app, doctree):
    """A bare class name in a signature (``tree: Tree``, from an annotation that autodoc could not evaluate) is
    looked up as Python does: in the module the documented object was written in. Sphinx would search every
    module instead, find ``gensim_jax.kernels.hierarchy.Tree`` and ``gensim_jax.kernels.trees.Tree``, and
    link one of them by chance (with a warning)."""
    from sphinx import addnodes

    for node in doctree.findall(addnodes.pending_xref):
        target, modname = node.get("reftarget", ""), node.get("py:module")
        if node.get("refdomain") != "py" or not modname or "." in target:
            continue
        obj = getattr(sys.modules.get(modname), target, None)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not obj.__module__.startswith("gensim_jax"):
            continue
        home = f"{obj.__module__}.{obj.__qualname__}"
        node["reftarget"] = API_CANONICAL.get(home, home)
        if "refspecific" in node:  # present at all, True or False: Sphinx would search every module
            del node["refspecific"]


def _write_shadowed_pages(app):
    """The pages of :data:`API_SHADOWED`'s modules, in the shape of _templates/autosummary/module.rst."""
    out = Path(app.srcdir) / "reference" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    for package, names in API_SHADOWED.items():
        for name in names:
            modname = f"{package}.{name}"
            title = modname.replace("_", "\\_")
            # the function of the same name holds the full name in the index; the module's page is found by its
            # link from the package's page
            lines = [title, "=" * len(title), "", f".. automodule:: {modname}", "   :no-index:"]
            if API_DOCUMENTED.get(modname):
                lines.append(f"   :members: {', '.join(API_DOCUMENTED[modname])}")
            if API_NAMES.get(modname):
                lines += ["", ".. rubric:: Contents", "", ".. autosummary::", ""]
                for item in API_NAMES[modname]:
                    home = API_CANONICAL.get(f"{modname}.{item}", f"{modname}.{item}")
                    lines.append(f"   {item if home == f'{modname}.{item}' else '~' + home}")
            page = out / f"{modname}.rst"
            text = "\n".join(lines) + "\n"
            if not page.is_file() or page.read_text() != text:  # an unchanged page keeps its build
                page.write_text(text)


#: a Markdown link or image: [label](target) / ![alt](target)
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _site_links(app, relative_path, parent_docname, content):
    """README.md and CHANGELOG.md, included from docs/ (index.md, changelog.md), link as GitHub shows the
    checkout: pages under docs/ (the include's ``relative-docs`` rewrites those), but also files outside the
    site (``Makefile``, ``pyproject.toml``, a module's source). On the site ``CHANGELOG.md`` is the changelog
    page and ``README.md`` the front page; a link to any other file of the checkout becomes its label, plain
    text (the site has no such page; linking it would be a broken link, which the build rejects)."""
    if Path(relative_path).name not in ("README.md", "CHANGELOG.md"):
        return
    pages = {"CHANGELOG.md": "docs/changelog.md", "README.md": "docs/index.md"}

    def local(m: re.Match) -> str:
        bang, label, target = m.groups()
        path, hash_, anchor = target.partition("#")
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path) or path.startswith("docs/"):
            return m.group(0)
        if path in pages:
            return f"{bang}[{label}]({pages[path]}{hash_}{anchor})"
        return label

    content[0] = _LINK.sub(local, content[0])


def setup(app):
    app.connect("include-read", _site_links)
    app.connect("builder-inited", _write_shadowed_pages)
    app.connect("doctree-read", _resolve_bare_annotations)
    app.connect("autodoc-skip-member", _skip_foreign_modules)
    app.connect("autodoc-process-docstring", _drop_inherited_type_docs)
