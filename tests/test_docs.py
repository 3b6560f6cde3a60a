"""Docs that run (issue 32, item 5): every command and Python block of README.md and docs/ runs, or is checked.

What is extracted, from README.md, docs/*.md, docs/api/*.md and docs/results/*.md:

* Python blocks (```python): each document's blocks run in order in one fresh interpreter and one
  namespace (a page's blocks build on each other, as in a notebook), with the document's line
  numbers in tracebacks and a timeout.  A block preceded by ``<!-- docs-test: skip REASON -->`` is
  not run; marks are for what cannot run here (an accelerator, a cluster, a downloaded checkpoint),
  and a mark without a reason fails :func:`test_every_mark_is_a_skip_with_a_reason`.  README's
  ``<!-- docs-test: install -->`` and ``<!-- docs-test: quickstart -->`` blocks are no skips: they run,
  as written, in a clean virtual environment (:data:`RUN_ELSEWHERE`); here their commands are checked
  like every other.
* Shell commands: ```bash/```sh/```shell/```console blocks, untagged blocks whose lines are commands
  (``$ `` lines of a transcript), and inline `spans` of prose that start with one of the product's
  commands (``gensim-jax``, ``python -m train``, ``make``, ...).  Continuation lines are joined,
  ``for`` loops take their first value, ``{a,b}`` is expanded as the shell does, comments dropped.

What is checked, with the product's own machinery, never a copy of it:

* ``gensim-jax train`` / ``python -m train``: the command as written with ``--print-config``
  appended, through :func:`gensim_jax.commands.main.main`; ``--print-config`` parses with the real parser and
  resolves ``--config`` and every ``--set`` (unknown keys, wrong types and ranges fail) and exits
  before anything is built or trained.  Placeholders (``--set seed=S``) keep their key checked.
* ``gensim-jax plan``: the same with ``--chips`` (parses, resolves the config and the arm, prints the
  chip table without compiling: a real plan takes minutes), the ``--topology`` through
  :func:`gensim_jax.planning.parse_topology`; a line that names a GPU topology must say that it
  needs ``jax[cuda12]`` (the CUDA compiler plug-in the planner imports for GPU targets).
* ``gensim-jax eval``, ``runs compare``, ``python scripts/X.py``, ``python -m bench.X``, ...: parsed by
  the command's own argparse parser (its ``parse_args`` stopped right after parsing); ``--config-fields``
  patterns must name fields of some experiment's config; usage lines (``EXPERIMENT``, ``[--x]``)
  only name options that exist.
* ``make TARGET``: the target (and any ``VAR=``) exists in the Makefile.  ``pip install
  'gensim-jax[x,y]'``: the extras exist in pyproject.toml.
* Quick commands (``--version``, ``--help``, ``list-models``, ``info``) run, as the console script.
* Paths under ``runs/demo`` anywhere in the docs must match what ``make demo`` writes: the demo's
  recipe is read from the Makefile and run with one step, one run and a few images in a scratch
  directory, then every such path is globbed there and the commands that read the demo's outputs
  (``runs compare``, ``eval export``, a transcript's error line) run on it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_check import check_command, is_quick, is_usage, parse_with_cli, product_args, run_cli
from tests.docs_extract import (
    ALL_BLOCKS,
    ALL_COMMANDS,
    DEMO_PATH,
    DOC_FILES,
    MARK,
    ROOT,
    RUN_ELSEWHERE,
    Command,
    _brace_expand,
    fenced_blocks,
    rel,
    split_commands,
    strip_wrappers,
)

# ---------------------------------------------------------------------------------------------
# tests: extraction and marks


def test_the_docs_have_commands_and_blocks_to_check():
    langs = {b.lang for b in ALL_BLOCKS}
    assert "python" in langs and "bash" in langs
    assert len([c for c in ALL_COMMANDS if c.kind == "inline"]) > 20
    assert any(c.argv[:2] == ("make", "demo") for c in ALL_COMMANDS)


def test_extraction_joins_continuations_expands_loops_and_braces():
    text = (
        "for s in 3 4; do python -m train quadrilaterals --set seed=$s --workdir runs/q-s$s & done; wait\n"
        "python scripts/quadrilaterals_curve.py runs/q-s{0,1} \\\n    --label a  # comment\n"
        "CUDA_VISIBLE_DEVICES=-1 timeout 30 gensim-jax plan x > out.txt\n"
    )
    got = [(off, words) for off, _, words in split_commands(text)]
    assert got == [
        (0, ["python", "-m", "train", "quadrilaterals", "--set", "seed=3", "--workdir", "runs/q-s3"]),
        (0, ["wait"]),
        (1, ["python", "scripts/quadrilaterals_curve.py", "runs/q-s0", "runs/q-s1", "--label", "a"]),
        (3, ["CUDA_VISIBLE_DEVICES=-1", "timeout", "30", "gensim-jax", "plan", "x"]),
    ]
    assert strip_wrappers(got[3][1]) == ["gensim-jax", "plan", "x"]


def test_the_parser_stop_catches_a_wrong_option():
    with pytest.raises(AssertionError, match="unrecognized arguments: --no-such-flag"):
        parse_with_cli(["runs", "compare", "runs/x", "--no-such-flag"])
    _, ns = parse_with_cli(["runs", "compare", "runs/x", "--config-fields", "optim.*"])
    assert ns.config_fields == ["optim.*"] and ns.dirs == ["runs/x"]


def test_a_set_key_that_is_no_field_fails_print_config():
    cmd = Command(ROOT / "README.md", 1, "", ("gensim-jax", "train", "gaussian_mixture", "--set", "nope=1"), "inline")
    with pytest.raises(AssertionError, match="nope"):
        check_command(cmd)


def test_pip_install_lines_name_existing_extras_of_a_checkout_or_a_wheel():
    for target in ("./gensim-jax[nope]", "dist/gensim_jax-0.1.0-py3-none-any.whl[train,nope]", "gensim-jax[nope]"):
        cmd = Command(ROOT / "README.md", 1, "", ("pip", "install", target), "block")
        with pytest.raises(AssertionError, match="no extra 'nope'"):
            check_command(cmd)
    check_command(Command(ROOT / "README.md", 1, "", ("pip", "install", "./gensim-jax[train]"), "block"))


def mark_problems(path: Path) -> list[str]:
    """What is wrong with the ``docs-test`` marks of ``path``: each must be ``skip REASON`` (or a mark of
    :data:`RUN_ELSEWHERE`, alone) right before a block."""
    problems, text = [], path.read_text()
    for m in MARK.finditer(text):
        where = f"{path.name}:{text[: m.start()].count(chr(10)) + 1}"
        words = m.group(1).split()
        if len(words) == 1 and words[0] in RUN_ELSEWHERE:
            pass
        elif words[:1] != ["skip"]:
            problems.append(f"{where}: a docs-test mark is `skip REASON`, got {m.group(0)!r}")
        elif len(words) < 4:
            problems.append(f"{where}: a skip mark must say why the block cannot run here: {m.group(0)!r}")
        after = text[m.end() :].lstrip("\n").split("\n", 1)[0]
        if not after.strip().startswith("```"):
            problems.append(f"{where}: the mark is not right before a block")
    return problems


def test_every_mark_is_a_skip_with_a_reason():
    assert [p for path in DOC_FILES for p in mark_problems(path)] == []
    assert any(b.mark for b in ALL_BLOCKS)  # the marks are found where they are


def test_a_mark_without_a_reason_or_block_is_an_error(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- docs-test: skip -->\n```python\n1/0\n```\n\n<!-- docs-test: skip needs a GPU here -->\ntext\n\n"
        "<!-- docs-test: ignore because it is long -->\n```python\n1/0\n```\n"
        "<!-- docs-test: skip needs a downloaded checkpoint -->\n```python\n1/0\n```\n"
        "<!-- docs-test: install -->\n```bash\npip install gensim-jax\n```\n"
        "<!-- docs-test: quickstart now -->\n```bash\ngensim-jax --version\n```\n"
    )
    problems = mark_problems(doc)
    assert [p.split(":", 2)[1] for p in problems] == ["1", "6", "9", "21"], problems
    assert "say why" in problems[0] and "not right before" in problems[1] and "skip REASON" in problems[2]
    assert [b.mark for b in fenced_blocks(doc)] == [
        "skip",
        "ignore because it is long",
        "skip needs a downloaded checkpoint",
        "install",
        "quickstart now",
    ]


def test_print_config_validates_without_building_anything(tmp_path):
    workdir = tmp_path / "w"
    status, out, err = run_cli(
        ["train", "quadrilaterals", "--config", "demo", "--workdir", str(workdir), "--print-config"]
    )
    assert status == 0 and json.loads(out)["num_steps"] > 1 and not workdir.exists()
    status, _, err = run_cli(
        ["train", "quadrilaterals", "--config", "demo", "--set", "optim.learning_rate=-1", "--print-config"]
    )
    assert status == 2 and "learning_rate" in err


# ---------------------------------------------------------------------------------------------
# tests: commands


@pytest.mark.parametrize("cmd", ALL_COMMANDS, ids=lambda c: c.id)
def test_command_is_valid(cmd, request):
    if any("../shared/" in a for a in cmd.argv):  # a command over the reference data needs it beside the clone
        request.getfixturevalue("shared_dir")
    check_command(cmd)


QUICK = [c for c in ALL_COMMANDS if is_quick(c)]


@pytest.mark.slow  # the first one imports the train command (flax, optax, orbax)
@pytest.mark.parametrize("cmd", QUICK, ids=lambda c: c.id)
def test_quick_commands_run(cmd):
    """``--help``, ``--version``, ``list-models``, ``info`` as the docs write them, run in this process
    (the console script itself runs in tests/test_packaging.py and tests/commands)."""
    _, args = product_args(cmd.argv)
    if args[:2] == ["eval", "PROTOCOL"] or args[:2] == ["train", "EXPERIMENT"]:  # a usage line: one of them
        from gensim_jax import experiments as registry
        from gensim_jax.commands.eval import PROTOCOLS

        args = [args[0], next(iter(PROTOCOLS if args[0] == "eval" else registry.available())), *args[2:]]
    status, out, err = run_cli(args)
    assert status == 0, f"{cmd.where}: {cmd.source}\n{err[-2000:]}"
    assert out.strip()
    if cmd.output and args == ["--version"]:
        assert out.split()[0] == cmd.output[0].split()[0] == "gensim-jax"


# ---------------------------------------------------------------------------------------------
# tests: Python blocks

#: pages whose Python blocks a test of their own runs, in order, and checks what they leave behind: not run
#: here a second time
RUN_BY_OWN_TEST = {"docs/ADD_A_GENERATIVE_MODEL.md": "tests/testing/test_add_a_generative_model_doc.py"}
# pages with a Python block to run (a page whose every block is marked has nothing to run)
PY_FILES = sorted(
    {b.path for b in ALL_BLOCKS if b.lang == "python" and not (b.mark or "").startswith("skip")}
    - {ROOT / page for page in RUN_BY_OWN_TEST}
)
# Every page's blocks run in one fresh interpreter (a page's imports cost ~3 s of CPU; twelve interpreters
# spent most of their time importing jax, flax and optax again), each page in a namespace and a working
# directory of its own, in order, as a reader would run them; a page that fails is reported with its
# traceback and the next page still runs.
DRIVER = """
import json, os, sys, traceback
pages = json.load(open(sys.argv[1]))
failed = {}
for page, workdir, blocks in pages:
    os.chdir(workdir)
    ns = {"__name__": "__main__"}
    for line, text in blocks:
        print(f"running {page}:{line}", file=sys.stderr, flush=True)
        try:
            exec(compile("\\n" * (line - 1) + text, page, "exec"), ns)
        except BaseException:
            failed[page] = f"{page}:{line}\\n" + traceback.format_exc()[-3000:]
            break
json.dump(failed, open(sys.argv[2], "w"))
"""


@pytest.mark.slow
def test_python_blocks_run(tmp_path):
    pages = []
    for n, path in enumerate(PY_FILES):
        workdir = tmp_path / f"{n:02d}-{path.stem}"
        workdir.mkdir()
        runnable = [
            b for b in ALL_BLOCKS if b.path == path and b.lang == "python" and not (b.mark or "").startswith("skip")
        ]
        pages.append([str(path), str(workdir), [[b.line, b.text] for b in runnable]])
    assert len(pages) >= 10 and all(blocks for _, _, blocks in pages)
    spec, report = tmp_path / "pages.json", tmp_path / "failed.json"
    spec.write_text(json.dumps(pages))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(spec), str(report)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0 and report.is_file(), done.stderr[-4000:]
    failed = json.loads(report.read_text())
    assert not failed, "Python blocks of the docs that fail:\n\n" + "\n\n".join(failed.values())


def test_a_page_run_by_its_own_test_is_read_by_that_test():
    for page, test in RUN_BY_OWN_TEST.items():
        assert any(b.path == ROOT / page and b.lang == "python" for b in ALL_BLOCKS), page
        source = (ROOT / test).read_text()
        assert Path(page).name in source and "exec(" in source, f"{test} does not run {page}"


def test_the_blocks_driver_reports_a_failing_page_and_runs_the_next(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    pages = [
        ["docs/A.md", str(a), [[3, "x = 1"], [7, "open('here.txt', 'w').write(str(x))\nraise ValueError('boom')"]]],
        ["docs/B.md", str(b), [[2, "assert 'x' not in globals()\nopen('here.txt', 'w').write('b')"]]],
    ]
    spec, report = tmp_path / "pages.json", tmp_path / "failed.json"
    spec.write_text(json.dumps(pages))
    subprocess.run([sys.executable, "-c", DRIVER, str(spec), str(report)], check=True, timeout=60)
    failed = json.loads(report.read_text())
    assert list(failed) == ["docs/A.md"] and failed["docs/A.md"].startswith("docs/A.md:7\n")
    assert "ValueError: boom" in failed["docs/A.md"] and 'File "docs/A.md", line 8' in failed["docs/A.md"]
    # each page ran in its own directory and namespace
    assert (a / "here.txt").read_text() == "1" and (b / "here.txt").read_text() == "b"


# ---------------------------------------------------------------------------------------------
# tests: paths of make demo's outputs

DEMO_SET = [
    "num_steps=1",
    "num_runs=1",
    "optim.warmup_steps=0",
    "data.num_train_images=32",
    "eval.trials_per_condition=1",
]


def demo_path_mentions() -> list[tuple[str, str]]:
    """``(where, pattern)`` of every ``runs/demo/...`` path the docs name (prose, commands, comments)."""
    out = []
    for path in DOC_FILES:
        for n, line in enumerate(path.read_text().split("\n"), start=1):
            for m in DEMO_PATH.finditer(line):
                for p in _brace_expand(m.group(0).rstrip(".")):
                    out.append((f"{rel(path)}:{n}", p))
    return out


def run_demo_recipe(workdir: Path) -> list[list[str]]:
    """``make demo``'s recipe, as ``make -n`` expands it with this interpreter as ``PY``, run in ``workdir``
    with one step, one run and a few images (a line that is not a Python command runs in bash as it is)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    expanded = subprocess.run(
        ["make", "-s", "-n", "demo", f"PY={sys.executable}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert expanded.returncode == 0, expanded.stderr
    ran = []
    for line in expanded.stdout.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        line_env = dict(env)
        while words and "=" in words[0] and not words[0].startswith("-"):  # VAR=value before the command
            name, value = words.pop(0).split("=", 1)
            line_env[name] = value
        if not words:
            continue
        if words[0] != sys.executable:
            words = ["bash", "-c", line]
        words = [str(ROOT / w) if w.endswith(".py") and (ROOT / w).is_file() else w for w in words]
        if words[1:3] == ["-m", "train"] or words[1:4] == ["-m", "gensim_jax.commands", "train"]:
            words += ["--set", *DEMO_SET]
        done = subprocess.run(words, cwd=workdir, env=line_env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"make demo's {line!r} with {DEMO_SET}: {done.stderr[-3000:]}"
        ran.append(words)
    return ran


@pytest.mark.slow
def test_demo_paths_match_what_make_demo_writes(tmp_path):
    ran = run_demo_recipe(tmp_path)
    assert len(ran) >= 2
    for where, pattern in demo_path_mentions():
        assert glob.glob(str(tmp_path / pattern)), (
            f"{where}: {pattern} matches nothing make demo writes; it writes "
            + ", ".join(sorted(rel_p for rel_p in _tree(tmp_path, depth=4)))
        )
    # the commands that read the demo's outputs run on them
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    script = Path(sys.executable).with_name("gensim-jax")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "gensim_jax.commands"]
    checked = 0
    for cmd in ALL_COMMANDS:
        if not any("runs/demo/" in a for a in cmd.argv) or is_usage(list(cmd.argv[1:])):
            continue
        kind, args = product_args(cmd.argv)
        if kind == "cli" and args[0] == "runs" or (kind == "cli" and args[0] == "eval"):
            expanded = [x for a in args for x in (sorted(glob.glob(str(tmp_path / a))) or [a])]
            argv = cli + [a.replace(str(tmp_path) + "/", "") for a in expanded]
        elif kind == "code":
            argv = [sys.executable, "-c", args[0]]
        else:
            continue
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        checked += 1
        if cmd.kind == "transcript" and cmd.output:
            shown = [line for line in cmd.output if line.strip()]
            got = (done.stdout + done.stderr).strip().split("\n")
            assert got[0] == shown[0] or "..." in shown[0], (
                f"{cmd.where}: the docs show {shown[0]!r}, it prints {got[0]!r}"
            )
        else:
            assert done.returncode == 0, f"{cmd.where}: {cmd.source}\n{done.stderr[-3000:]}"
            assert "matches no config field" not in done.stderr, f"{cmd.where}: {done.stderr}"
    assert checked >= 2


def _tree(root: Path, depth: int) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if len(p.relative_to(root).parts) <= depth and "checkpoints" not in p.parts and "events" not in p.name
    ]


# ---------------------------------------------------------------------------------------------
# README as a front page (issue 38): short, the two set-up commands first, one command form, installs that work


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; dated measurements belong in docs/"
    head = "\n".join(lines[:25])
    assert "make demo" in head and "make test" in head, "make demo and make test belong in README's first 25 lines"
    assert any(line.startswith("![") for line in lines[:40]), "the demo's figure belongs on README's first screen"


def test_one_command_form_in_readme_and_docs():
    """``python -m train`` / ``python -m eval`` exist only in a checkout (a pip user gets `No module named
    train`): README and docs name every command as the console script, ``gensim-jax ...``."""
    found = [
        f"{rel(path)}:{number}"
        for path in DOC_FILES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"python3?\s+-m\s+(train|eval)\b|\.venv/bin/gensim-jax", line)
    ]
    assert not found, f"use `gensim-jax train` / `gensim-jax eval`: {found}"


def test_every_pip_install_in_readme_installs_from_a_path_a_wheel_or_a_url():
    """The package is not on the public index: `pip install gensim-jax` cannot work."""
    text = (ROOT / "README.md").read_text()
    installs = re.findall(r"pip install ([^`\n#]+)", text)
    assert installs
    for args in installs:
        targets = [a.strip("'\"") for a in shlex.split(args) if not a.startswith("-")]
        for target in targets:
            name = target.split("[")[0]
            local = name.startswith(("./", "../", "/", "~")) or name.endswith(".whl") or "://" in name
            assert local, f"README: pip install {args.strip()}: {target} is not a path, a wheel or a URL"
