"""The import graph of ``gensim_jax`` keeps the layers of DESIGN.md ("Dependencies point one way").

Every module of the package is read with :mod:`ast` (nothing is imported): each ``import`` and
``from ... import`` statement, at module level or inside a function or class, relative imports
resolved against the importing module.  ``from package import name`` is an edge to the submodule
``package.name`` when there is one, else to ``package``; importing ``a.b.c`` is an edge to ``a.b.c``
only (not to the packages above it, whose ``__init__`` Python also runs).  Imports by a string
(``importlib.import_module``: the lazy attributes of :mod:`gensim_jax.data`, the experiments
registry) are not edges.

The checks:

* every module belongs to a layer of :data:`LAYERS` (a new top-level module or folder is placed in
  the table on purpose);
* no import cycle between modules (reported as the path of the cycle, each edge with its line);
* imports point down: a module imports its own package and packages of LOWER layers only; the
  foundation's helpers may import each other; :data:`ONLY_IMPORTS` and :data:`IMPORTED_ONLY_BY`
  add DESIGN.md's narrower rules; ``_extras`` and ``_quiet`` (optional-dependency messages, quiet
  native logs) are plumbing every layer may use;
* argparse is imported only under ``gensim_jax/commands/``;
* no private name across packages: ``_name`` (a module or anything in one) is private to the
  package (folder) that holds it, whether imported (``from gensim_jax.x import _name``) or reached
  through an imported module (``x._name``).

A failure names the file, the line and the import.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "gensim_jax"

#: The layers of DESIGN.md, lowest first: the top-level modules and folders of gensim_jax on each
#: ("" is gensim_jax/__init__.py).  A module may import its own package and the packages of lower
#: layers; the packages of one layer are independent of each other, except in the foundation,
#: whose small helpers may import each other.
# fmt: off
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # layer         its packages and top-level modules                  what they are
    ("foundation",  ("", "similarity", "kernels", "jsonable", "_quiet",  # similarities, closed-form kernels,
                     "_extras", "preprocessing", "provenance",           # small helpers (JSON, inputs, records,
                     "parallel", "config", "runs", "ranks",              # mesh and hosts, the config system,
                     "deprecation")),                                    # reading and comparing run records, ranks,
                                                                         # old spellings kept with a warning)
    ("losses",      ("losses",)),                                        # pure jitted losses over similarities
    ("stimuli",     ("stimuli",)),                                       # seeded generators: numpy/jax, kernels
    ("models",      ("models", "testing")),                              # encoders; the Monte Carlo kernel toolkit
    ("data",        ("data",)),                                          # input pipelines; may import stimuli
    ("training",    ("training",)),                                      # state, objectives, step, loop, runner
    ("evaluation",  ("evaluation", "planning")),                         # protocols; plans of the runner's step
    ("experiments", ("experiments", "fork")),                            # the declarations and their registry;
                                                                         # the surface a fork's file imports
    ("commands",    ("commands",)),                                      # every argparse entry point
)
# fmt: on

#: Narrower rules of DESIGN.md: these packages import only the listed ones (besides themselves and
#: the plumbing of :data:`PLUMBING`).
ONLY_IMPORTS = {
    "config": (),
    "similarity": (),
    "kernels": (),
    "losses": ("similarity",),
    "stimuli": ("kernels",),
}
#: ``planning`` compiles the very step a run executes; nothing imports it but the commands.
IMPORTED_ONLY_BY = {"planning": ("commands",)}
#: Import plumbing every layer may use.
PLUMBING = ("_extras", "_quiet")
#: Folders of the repository that use the package from outside (checked for private names).
USERS = ("bench", "scripts", "train", "eval")
#: The only package that may import argparse.
ARGPARSE_HOME = "commands"


@dataclasses.dataclass(frozen=True)
class Import:
    """One imported name: ``importer`` (module) imports ``target`` (module) at ``path:line``."""

    importer: str
    target: str
    path: str
    line: int
    text: str  # the import as written, one name: "from gensim_jax.x import y"
    dotted: str  # the full dotted name imported or reached ("gensim_jax.x.y", "gensim_jax.x.mod._name")


def discover(root: Path, package: str = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """``{module name: (path, is_package)}`` of every ``.py`` file under ``root/package``."""
    mods = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _attribute_chain(node: ast.Attribute) -> Optional[tuple[str, list[str]]]:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    return (node.id, names[::-1]) if isinstance(node, ast.Name) else None


def read_imports(root: Path, package: str = PACKAGE) -> tuple[dict, list[Import], list[Import]]:
    """``(modules, imports, third_party)``: the package's modules, its imports of its own modules
    (one per imported name, plus every ``module._private`` reached through an imported module),
    and its imports of other top-level modules (``target`` is the top-level name)."""
    mods = discover(root, package)
    own, other = [], []
    for module, (path, is_pkg) in mods.items():
        o, t = _read_file(root, path, module, is_pkg, mods, package)
        own += o
        other += t
    return mods, own, other


def read_users(root: Path, folders: tuple[str, ...], mods, package: str = PACKAGE) -> list[Import]:
    """The imports of ``package`` (and ``module._private`` uses) in the ``.py`` files under ``folders``."""
    own = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            module = ".".join(parts[:-1] if is_pkg else parts)
            own += _read_file(root, path, module, is_pkg, mods, package)[0]
    return own


def _read_file(root: Path, path: Path, module: str, is_pkg: bool, mods, package: str):
    rel = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(), filename=rel)
    own, other = [], []
    bound = {}  # local name -> the module of the package it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                text = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                if alias.name.split(".")[0] != package:
                    other.append(Import(module, alias.name.split(".")[0], rel, node.lineno, text, alias.name))
                    continue
                own.append(Import(module, alias.name, rel, node.lineno, text, alias.name))
                bound[alias.asname or package] = alias.name if alias.asname else package
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_pkg, node)
            for alias in node.names:
                text = f"from {'.' * node.level}{node.module or ''} import {alias.name}"
                if base.split(".")[0] != package:
                    other.append(Import(module, base.split(".")[0], rel, node.lineno, text, base))
                    continue
                full = f"{base}.{alias.name}"
                own.append(Import(module, full if full in mods else base, rel, node.lineno, text, full))
                if full in mods:
                    bound[alias.asname or alias.name] = full
        elif isinstance(node, ast.Call) and _literal_import(node, package):
            # importlib.import_module("gensim_jax.x.y"): an import by name, as much an edge as the statement
            name = node.args[0].value
            text = f"import_module({name!r})"
            own.append(Import(module, _longest_module(name, mods), rel, node.lineno, text, name))
    for node in ast.walk(tree):  # x._name, x.y._name on a bound module: the innermost private attribute
        chain = _attribute_chain(node) if isinstance(node, ast.Attribute) else None
        if chain and chain[0] in bound and _is_private(chain[1][-1]) and not any(map(_is_private, chain[1][:-1])):
            full = ".".join([bound[chain[0]], *chain[1]])
            text = f"{chain[0]}.{'.'.join(chain[1])}"
            own.append(Import(module, _longest_module(full, mods), rel, node.lineno, text, full))
    return own, other


def _literal_import(node: ast.Call, package: str) -> bool:
    """Whether ``node`` is ``import_module("<package>...")`` (also as ``importlib.import_module``) with the module
    named by a string literal; a name computed at run time (a registry's lookup) is no edge of the graph."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name != "import_module" or not node.args or not isinstance(node.args[0], ast.Constant):
        return False
    value = node.args[0].value
    return isinstance(value, str) and (value == package or value.startswith(package + "."))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _longest_module(dotted: str, mods) -> str:
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in mods:
            return ".".join(parts[:k])
    return parts[0]


def top(module: str, package: str = PACKAGE) -> str:
    """The top-level module or folder of ``module`` ("" for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(name: str) -> Optional[int]:
    return next((i for i, (_, members) in enumerate(LAYERS) if name in members), None)


def layer_violations(imports: list[Import]) -> list[str]:
    """Imports that point up, sideways within a layer, or break :data:`ONLY_IMPORTS` / :data:`IMPORTED_ONLY_BY`."""
    out = []
    for imp in imports:
        src, dst = top(imp.importer), top(imp.target)
        if src == dst or dst in PLUMBING:
            continue
        ls, ld = layer_of(src), layer_of(dst)
        if ls is None or ld is None:
            continue  # reported by test_every_module_is_in_a_layer
        where = f"{imp.path}:{imp.line}: `{imp.text}`"
        if src in ONLY_IMPORTS and dst not in ONLY_IMPORTS[src]:
            allowed = ", ".join(ONLY_IMPORTS[src]) or "nothing"
            out.append(
                f"{where}: {src or PACKAGE} imports {dst or PACKAGE}; it may import only {allowed} of gensim_jax"
            )
        elif dst in IMPORTED_ONLY_BY and src not in IMPORTED_ONLY_BY[dst]:
            out.append(f"{where}: {src} imports {dst}, which only {', '.join(IMPORTED_ONLY_BY[dst])} may import")
        elif ld > ls:
            out.append(
                f"{where}: {src or PACKAGE} (layer {ls}, {LAYERS[ls][0]}) imports {dst} (layer {ld}), a higher layer"
            )
        elif ld == ls and ls != 0:
            out.append(f"{where}: {src} imports {dst}, another package of its own layer ({ls}, {LAYERS[ls][0]})")
    return out


def find_cycles(imports: list[Import]) -> list[list[Import]]:
    """One cycle (as its list of edges) per strongly connected component with more than one module,
    or a module importing itself."""
    graph: dict[str, dict[str, Import]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, {}).setdefault(imp.target, imp)
    index, low, on_stack, stack, comps = {}, {}, set(), [], []

    def strongconnect(v: str) -> None:  # Tarjan (1972), iterative over the successors
        work = [(v, iter(graph.get(v, {})))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, succ = work[-1]
            for w in succ:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, {}))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    cycles = []
    for comp in comps:
        members = set(comp)
        start = min(comp)
        if len(comp) == 1 and start not in graph.get(start, {}):
            continue
        cycles.append(_path_back(graph, start, members))
    return cycles


def _path_back(graph, start: str, members: set) -> list[Import]:
    """The shortest cycle through ``start`` inside one strongly connected component (breadth first)."""
    prev: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w, imp in sorted(graph.get(v, {}).items()):
                if w not in members:
                    continue
                if w == start:
                    path = [imp]
                    while path[0].importer != start:
                        path.insert(0, prev[path[0].importer])
                    return path
                if w not in prev:
                    prev[w] = imp
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{start} is on no cycle")  # unreachable for a strongly connected component


def format_cycle(cycle: list[Import]) -> str:
    steps = [f"{imp.importer} ({imp.path}:{imp.line}: `{imp.text}`)" for imp in cycle]
    return "import cycle: " + " -> ".join(steps) + f" -> {cycle[0].importer}"


def private_violations(imports: list[Import], mods) -> list[str]:
    """Private names (modules, or anything in a module) used outside the package that holds them."""
    out = []
    for imp in imports:
        parts = imp.dotted.split(".")
        k = next((i for i, p in enumerate(parts) if _is_private(p)), None)
        if k is None:
            continue
        if ".".join(parts[: k + 1]) in mods:  # a private module: private to its package
            scope = ".".join(parts[:k])
        else:  # a private name in (or under an object of) the module that holds it: private to its package
            holder = _longest_module(".".join(parts[:k]), mods)
            scope = holder if mods.get(holder, (None, False))[1] else holder.rpartition(".")[0]
        if imp.importer != scope and not imp.importer.startswith(scope + "."):
            name = ".".join(parts[: k + 1])
            out.append(f"{imp.path}:{imp.line}: `{imp.text}` uses {name}, private to {scope}")
    return out


def argparse_violations(third_party: list[Import]) -> list[str]:
    return [
        f"{imp.path}:{imp.line}: `{imp.text}`: only gensim_jax/{ARGPARSE_HOME}/ may import argparse"
        for imp in third_party
        if imp.target == "argparse" and top(imp.importer) != ARGPARSE_HOME
    ]


# --------------------------------------------------------------------------------------------
# The package
# --------------------------------------------------------------------------------------------


class _Graph(tuple):
    def __repr__(self) -> str:  # pytest prints the fixture's value next to a failure: keep it one line
        return f"<import graph of {len(self[0])} modules of {PACKAGE}>"


@pytest.fixture(scope="module")
def graph():
    return _Graph(read_imports(ROOT))


def _report(problems: list[str]) -> str:
    return f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_every_module_is_in_a_layer(graph):
    mods, _, _ = graph
    unplaced = sorted(m for m in mods if layer_of(top(m)) is None)
    assert not unplaced, "modules in no layer of tests/test_architecture.py LAYERS (place them): " + ", ".join(unplaced)


def test_no_import_cycle(graph):
    _, imports, _ = graph
    cycles = find_cycles(imports)
    assert not cycles, _report([format_cycle(c) for c in cycles])


def test_imports_point_down_the_layers(graph):
    _, imports, _ = graph
    problems = layer_violations(imports)
    assert not problems, _report(problems)


def test_only_the_commands_import_argparse(graph):
    _, _, third_party = graph
    problems = argparse_violations(third_party)
    assert not problems, _report(problems)


def test_no_private_name_across_packages(graph):
    mods, imports, _ = graph
    problems = private_violations(imports, mods)
    assert not problems, _report(problems)


def test_benchmarks_and_scripts_use_only_public_names(graph):
    """bench/, scripts/ and the train/ and eval/ shims sit outside the package: none of its private names."""
    mods, _, _ = graph
    problems = private_violations(read_users(ROOT, USERS, mods), mods)
    assert not problems, _report(problems)


def test_docs_architecture_draws_this_table():
    """docs/ARCHITECTURE.md's layer table is this test's :data:`LAYERS`, row by row."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| ((?:`[\w.]+`(?:, )?)+) \|$", text, flags=re.M)
    drawn = [(layer, tuple(re.findall(r"`([\w.]+)`", mods))) for layer, mods in rows]
    assert [(layer, sorted(m)) for layer, m in drawn] == [
        (layer, sorted(p for p in pkgs if p)) for layer, pkgs in LAYERS
    ]


#: An experiment file holds its configs and the builder of its arms; what two experiments share, and
#: whatever is not a config or that builder, lives in the library (issue 33, DESIGN.md). 300 lines, plus
#: the one-line notes on each config that ``gensim-jax train --help`` shows (issue 38).
MAX_EXPERIMENT_LINES = 310


def test_experiment_files_hold_configs_and_one_builder():
    from gensim_jax import experiments as registry

    files = registry.available()
    assert len(files) >= 5, files  # the five of the papers, found by their EXPERIMENT
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in files.items()}
    assert all(n <= MAX_EXPERIMENT_LINES for n in lines.values()), lines
    for name, path in files.items():  # the per-arm hooks of the earlier interface are gone: one arm() per file
        text = path.read_text(encoding="utf-8")
        assert text.count("    def arm(self, name") == 1, name


def test_the_graph_is_read_from_the_whole_package(graph):
    """The reader sees what an independent walk of the sources sees: every file, and imports at any depth."""
    mods, imports, _ = graph
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / PACKAGE).rglob("*.py")}
    assert {path.relative_to(ROOT).as_posix() for path, _ in mods.values()} == files
    # known edges: at module level, inside a function (arm_batches), a top-level module
    edges = {(i.importer, i.target) for i in imports}
    assert ("gensim_jax.losses.regression", "gensim_jax.similarity") in edges
    assert ("gensim_jax.data.geoclidean", "gensim_jax.data.streams") in edges  # inside arm_batches()
    assert ("gensim_jax.data.indexing", "gensim_jax.parallel") in edges


# --------------------------------------------------------------------------------------------
# The checker, on a package written for it
# --------------------------------------------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_checker_finds_cycles_upward_and_private_imports(tmp_path):
    _write(
        tmp_path,
        {
            "gensim_jax/__init__.py": "",
            "gensim_jax/_extras.py": "def require(): pass\n",
            "gensim_jax/similarity.py": "import numpy\n",
            "gensim_jax/kernels/__init__.py": "",
            "gensim_jax/kernels/categorical.py": "def _check(): pass\ndef check(): pass\n",
            "gensim_jax/kernels/monte_carlo.py": "from gensim_jax.kernels.categorical import _check\n",
            "gensim_jax/losses/__init__.py": "from . import pairs\n",
            "gensim_jax/losses/pairs.py": "from gensim_jax import similarity\nfrom gensim_jax._extras import require\n",
            "gensim_jax/testing/__init__.py": "",
            "gensim_jax/testing/models.py": (
                "from gensim_jax.kernels.categorical import _check\n"
                "from gensim_jax.kernels import categorical as cat\n"
                "cat._check()\n"
            ),
            "gensim_jax/training/__init__.py": "",
            "gensim_jax/training/runner.py": """\
                def run():
                    from gensim_jax.experiments import registry
                    import argparse
                """,
            "gensim_jax/experiments/__init__.py": "",
            "gensim_jax/experiments/registry.py": "from ..training import runner\nfrom gensim_jax import planning\n",
            "gensim_jax/planning/__init__.py": "",
            "gensim_jax/commands/__init__.py": "import argparse\nfrom gensim_jax import planning\n",
            "gensim_jax/stray.py": "",
        },
    )
    mods, imports, other = read_imports(tmp_path)
    assert sorted(m for m in mods if layer_of(top(m)) is None) == ["gensim_jax.stray"]

    (cycle,) = find_cycles(imports)
    assert [i.importer for i in cycle] in (
        ["gensim_jax.experiments.registry", "gensim_jax.training.runner"],
        ["gensim_jax.training.runner", "gensim_jax.experiments.registry"],
    )
    message = format_cycle(cycle)
    assert "gensim_jax/training/runner.py:2: `from gensim_jax.experiments import registry`" in message
    assert "gensim_jax/experiments/registry.py:1: `from ..training import runner`" in message

    layers = layer_violations(imports)
    assert len(layers) == 2, layers
    assert layers[0].startswith("gensim_jax/experiments/registry.py:2: `from gensim_jax import planning`: experiments")
    assert "only commands may import" in layers[0]
    assert layers[1].startswith("gensim_jax/training/runner.py:2: `from gensim_jax.experiments import registry`")
    assert "training (layer 5, training) imports experiments (layer 7), a higher layer" in layers[1]

    private = private_violations(imports, mods)
    assert private == [
        "gensim_jax/testing/models.py:1: `from gensim_jax.kernels.categorical import _check` uses "
        "gensim_jax.kernels.categorical._check, private to gensim_jax.kernels",
        "gensim_jax/testing/models.py:3: `cat._check` uses gensim_jax.kernels.categorical._check, private to "
        "gensim_jax.kernels",
    ]
    assert argparse_violations(other) == [
        "gensim_jax/training/runner.py:3: `import argparse`: only gensim_jax/commands/ may import argparse"
    ]


def test_the_checker_reads_an_import_by_a_literal_name_as_an_edge(tmp_path):
    """A module loaded with ``importlib.import_module("gensim_jax....")`` (a lazy re-export, say) is imported: a
    cycle through it is found; a name computed at run time is not read."""
    _write(
        tmp_path,
        {
            "gensim_jax/__init__.py": "",
            "gensim_jax/evaluation/__init__.py": "",
            "gensim_jax/evaluation/card.py": (
                "import importlib\n\n\ndef __getattr__(name):\n"
                "    return getattr(importlib.import_module('gensim_jax.evaluation.card_runs'), name)\n"
            ),
            "gensim_jax/evaluation/card_runs.py": "from gensim_jax.evaluation.card import x\n",
            "gensim_jax/evaluation/registry.py": (
                "from importlib import import_module\n\n\ndef get(n):\n"
                "    return import_module(f'gensim_jax.evaluation.{n}')\n"
            ),
        },
    )
    _, imports, _ = read_imports(tmp_path)
    (cycle,) = find_cycles(imports)
    assert "gensim_jax/evaluation/card.py:5: `import_module('gensim_jax.evaluation.card_runs')`" in format_cycle(cycle)
    assert not [i for i in imports if i.importer == "gensim_jax.evaluation.registry"]


def test_the_checker_reports_a_longer_cycle_as_a_path(tmp_path):
    _write(
        tmp_path,
        {
            "gensim_jax/__init__.py": "",
            "gensim_jax/data/__init__.py": "",
            "gensim_jax/data/a.py": "from gensim_jax.data import b\n",
            "gensim_jax/data/b.py": "import gensim_jax.data.c as c\n",
            "gensim_jax/data/c.py": "\n\ndef f():\n    from gensim_jax.data.a import f\n",
            "gensim_jax/data/d.py": "from gensim_jax.data import a\n",  # into the cycle, not on it
        },
    )
    _, imports, _ = read_imports(tmp_path)
    (cycle,) = find_cycles(imports)
    assert format_cycle(cycle) == (
        "import cycle: gensim_jax.data.a (gensim_jax/data/a.py:1: `from gensim_jax.data import b`) -> "
        "gensim_jax.data.b (gensim_jax/data/b.py:1: `import gensim_jax.data.c as c`) -> "
        "gensim_jax.data.c (gensim_jax/data/c.py:4: `from gensim_jax.data.a import f`) -> gensim_jax.data.a"
    )
