"""Compare finished (or running) runs from their ``metrics.jsonl``, without TensorBoard.

``gensim-jax runs DIR`` lists the runs found under DIR (:func:`find_runs`: every directory holding a
``metrics.jsonl``, e.g. a training workdir's ``<arm>/run<r>``) with their steps, last loss, status and a
few final ``result/*`` numbers (:func:`list_runs`).  ``gensim-jax runs compare DIR...`` takes run
directories and directories holding runs alike and prints one row per run directory (the last step, the seed from
``config.json``, and every metric recorded at that step) and, with ``--out``, draws the loss curves
of all runs in one PNG.  ``--config-fields`` adds config fields as columns, and runs that were
produced by different gensim-jax versions or git commits (``config.json``'s ``provenance``) are
flagged.  The functions here need only the standard library, numpy and matplotlib (no JAX).

Damaged records are reported, never silently skipped: :func:`read_jsonl` (the one reader of
``metrics.jsonl`` in the package) warns with the file and line of every line it cannot read (a line
cut short by a killed process, garbage, binary content), and a row never mixes values of different
steps.
"""

from __future__ import annotations

import fnmatch
import json
import math
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

from gensim_jax.config import flatten

__all__ = [
    "find_runs",
    "expand_run_dirs",
    "list_runs",
    "read_run",
    "read_jsonl",
    "iter_jsonl",
    "read_json",
    "compare_runs",
    "format_table",
    "plot_curves",
    "provenance_differences",
    "DEFAULT_COLUMNS",
]

#: The columns ``runs compare`` shows when ``--keys`` is not given (glob patterns over the keys).
DEFAULT_COLUMNS = (
    "loss",
    "accuracy",
    "grad_norm",
    "eval/*",
    "result/*",
    "perf/examples_per_s",
    "perf/step_time_s",
)

#: Unreadable lines warned about one by one per file; the rest are counted in one more line.
MAX_LINE_WARNINGS = 5


def warn(message: str) -> None:
    """Print ``warning: MESSAGE`` on stderr (the default ``warn`` of the readers here)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _number(v) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def iter_jsonl(path) -> Iterator[tuple[int, Optional[str], Optional[dict], Optional[str]]]:
    """``(line number, text, record, problem)`` for every non-empty line of a JSON-lines record file.

    ``record`` is the parsed object when the line is a JSON object with a numeric ``"step"``, else
    None and ``problem`` says why (``"not UTF-8 text"``, ``"not JSON (cut short?)"``, ``"no numeric
    'step'"``); ``text`` is None for a line that is not text.
    """
    raw = Path(path).read_bytes()
    lines = raw.split(b"\n")
    for i, b in enumerate(lines, start=1):
        if not b.strip():
            continue
        try:
            text = b.decode("utf-8")
        except UnicodeDecodeError:
            yield i, None, None, "not UTF-8 text (binary content?)"
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as err:
            cut = i == len(lines) and not raw.endswith(b"\n")
            why = "cut short (the process was killed while writing it?)" if cut else f"not JSON ({err.msg})"
            yield i, text, None, why
            continue
        if not isinstance(record, dict) or isinstance(record.get("step"), bool) or _number(record.get("step")) is None:
            yield i, text, None, "not a record with a numeric 'step'"
            continue
        yield i, text, record, None


def read_jsonl(path, *, warn: Callable[[str], None] = warn) -> list[dict]:
    """The records of a ``metrics.jsonl``; ``warn("FILE:LINE: problem; skipped")`` for every unreadable line.

    A missing file gives ``[]``.  See :func:`iter_jsonl` for what counts as unreadable.
    """
    path = Path(path)
    if not path.is_file():
        return []
    records, bad = [], 0
    for lineno, _, record, problem in iter_jsonl(path):
        if record is not None:
            records.append(record)
            continue
        bad += 1
        if bad <= MAX_LINE_WARNINGS:
            warn(f"{path}:{lineno}: {problem}; skipped")
    if bad > MAX_LINE_WARNINGS:
        warn(f"{path}: {bad - MAX_LINE_WARNINGS} more unreadable lines skipped ({bad} in all)")
    return records


def read_json(path, *, warn: Callable[[str], None] = warn) -> Optional[dict]:
    """A JSON object file (``config.json``, ``results.json``), or None with a warning naming the file when
    it is not one; a missing file is None without a warning."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, OSError) as err:
        where = f":{err.lineno}" if isinstance(err, json.JSONDecodeError) else ""
        warn(f"{path}{where}: cannot be read as JSON ({type(err).__name__}: {getattr(err, 'msg', err)}); ignored")
        return None
    if not isinstance(value, dict):
        warn(f"{path}: holds a JSON {type(value).__name__}, not an object; ignored")
        return None
    return value


def _natural(path: Path) -> list:
    """Sort key of a path: digit runs compared as numbers (``run2`` before ``run10``)."""
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def find_runs(root) -> list[Path]:
    """The run directories at or below ``root``: ``[root]`` when it holds a ``metrics.jsonl``, else every
    directory below it that holds one (not looking further inside a run, nor into hidden directories), in
    natural order.  ``ValueError`` (one line naming ``root``) when ``root`` is no directory."""
    import os

    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: no such directory")
    if (root / "metrics.jsonl").is_file():
        return [root]
    found = []
    for here, dirs, files in os.walk(root):
        if "metrics.jsonl" in files:
            found.append(Path(here))
            dirs[:] = []
        else:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
    return sorted(found, key=_natural)


def expand_run_dirs(dirs: Iterable) -> list[Path]:
    """The run directories of ``dirs`` (run directories and directories holding runs, :func:`find_runs`), each
    once, in the given order; ``ValueError`` naming the first one that is missing or holds no run."""
    out: dict[Path, None] = {}
    for d in dirs:
        found = find_runs(d)
        if not found:
            raise ValueError(f"{d}: no run in it or below it (no metrics.jsonl; train writes WORKDIR/<arm>/run<r>)")
        out.update(dict.fromkeys(found))
    return list(out)


#: ``result/*`` columns ``runs DIR`` shows at most (all of them: ``runs compare DIR``).
MAX_RESULT_COLUMNS = 3


def list_runs(root, *, warn: Callable[[str], None] = warn) -> list[dict]:
    """One row per run below ``root`` (:func:`find_runs`): ``{"run", "steps", "loss", "status", RESULT...}``.

    ``run`` is the path relative to ``root``; ``steps`` the last recorded step, ``/N`` added when the run's
    ``config.json`` names ``num_steps``; ``loss`` the last recorded loss; ``status`` ``finished`` when the run
    recorded its final evaluation (``result/*``) or wrote its export, else ``unfinished`` (running, or
    stopped: resume it with the same command); then the first :data:`MAX_RESULT_COLUMNS` ``result/*``
    values.  A run whose ``metrics.jsonl`` cannot be read is a row with status ``unreadable``.
    ``ValueError`` when ``root`` is missing or holds no run.
    """
    root = Path(root)
    found = find_runs(root)
    if not found:
        raise ValueError(f"{root}: no run in it or below it (no metrics.jsonl; train writes WORKDIR/<arm>/run<r>)")
    rows, result_keys = [], {}
    for d in found:
        name = "." if d == root else str(d.relative_to(root))
        try:
            run = read_run(d, warn=warn)
        except ValueError:
            rows.append({"run": name, "steps": None, "loss": None, "status": "unreadable", "results": {}})
            continue
        step = max(int(r["step"]) for r in run["records"])
        loss, results = None, {}
        for r in sorted(run["records"], key=lambda r: int(r["step"])):
            if _number(r.get("loss")) is not None:
                loss = float(r["loss"])
            for k, v in r.items():
                if k.startswith("result/") and _number(v) is not None:
                    results[k] = float(v)
                    result_keys.setdefault(k, None)
        planned = ((run["config"] or {}).get("config") or {}).get("num_steps")
        steps = f"{step}/{planned}" if isinstance(planned, int) and not isinstance(planned, bool) else str(step)
        finished = bool(results) or (d / "export").is_dir()
        rows.append(
            {
                "run": name,
                "steps": steps,
                "loss": loss,
                "status": "finished" if finished else "unfinished",
                "results": results,
            }
        )
    shown = list(result_keys)[:MAX_RESULT_COLUMNS]
    return [{**{k: v for k, v in r.items() if k != "results"}, **{k: r["results"].get(k) for k in shown}} for r in rows]


def read_run(run_dir, *, warn: Callable[[str], None] = warn) -> dict:
    """``{"path", "records", "config"}`` of a run directory.

    ``records`` are the readable lines of ``metrics.jsonl`` (every other line is named in a warning,
    :func:`read_jsonl`); ``config`` is ``config.json`` or None.  ``ValueError`` when the directory or its
    ``metrics.jsonl`` is missing or holds no record.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise ValueError(f"{run_dir}: no such run directory")
    mfile = path / "metrics.jsonl"
    if not mfile.is_file():
        raise ValueError(f"{run_dir}: no metrics.jsonl (not a run directory, or the run logged nothing yet)")
    try:
        records = read_jsonl(mfile, warn=warn)
    except OSError as err:
        raise ValueError(f"{mfile}: cannot be read ({err.strerror or err})") from err
    if not records:
        raise ValueError(f"{mfile} holds no readable record")
    return {"path": path, "records": records, "config": read_json(path / "config.json", warn=warn)}


def _produced_by(config: Optional[dict]) -> dict:
    """``{"version", "commit"}`` of a ``config.json`` record (None where it does not say)."""
    from gensim_jax.provenance import short_commit

    prov = (config or {}).get("provenance")
    prov = prov if isinstance(prov, dict) else None
    return {"version": prov.get("gensim_jax") if prov else None, "commit": short_commit(prov)}


def provenance_differences(rows: Sequence[dict]) -> list[str]:
    """The keys among ``"version"``, ``"commit"`` in which ``rows`` (of :func:`compare_runs`) differ."""
    return [k for k in ("version", "commit") if len({r.get(k) for r in rows}) > 1]


def _names(paths: Sequence[Path]) -> list[str]:
    """Short distinct names: the directory names, with parents added where they collide."""
    parts = [p.resolve().parts for p in paths]
    depth = 1
    while True:
        names = ["/".join(pp[-depth:]) for pp in parts]
        if len(set(names)) == len(names) or depth >= max(len(pp) for pp in parts):
            return names
        depth += 1


def compare_runs(
    run_dirs: Iterable,
    keys: Optional[Sequence[str]] = None,
    *,
    config_fields: Sequence[str] = (),
    warn: Callable[[str], None] = warn,
) -> list[dict]:
    """One row per run: ``{"run", "path", "seed", "step", "version", "commit", CONFIG FIELD..., KEY: value, ...}``.

    Args:
      run_dirs: run directories (each with a ``metrics.jsonl``).
      keys: glob patterns selecting the metric keys (e.g. ``["loss", "eval/*"]``); default: every
        numeric key of any run.  A run without a key at its last step has None there.
      config_fields: glob patterns over the run's config fields (``config.json``'s ``config``, nested
        sections joined with ``.``), shown as columns ``config.FIELD``.
      warn: called with one line per unreadable record line or file.

    ``step`` is the last recorded step and every metric is its value at that step (training,
    evaluation and final ``result/*`` records of the step merged; a later line wins): a value of an
    earlier step is never shown beside it.  ``version`` and ``commit`` say what produced the run
    (``config.json``'s ``provenance``; :func:`provenance_differences`).
    """
    runs = [read_run(d, warn=warn) for d in run_dirs]
    if not runs:
        raise ValueError("compare_runs: no run directory given")
    finals, steps = [], []
    seen: dict[str, None] = {}
    for run in runs:
        step = max(int(r["step"]) for r in run["records"])
        last: dict[str, float] = {}
        for r in run["records"]:
            for k, v in r.items():
                x = _number(v)
                if k not in ("step", "time") and x is not None:
                    seen.setdefault(k, None)
                    if int(r["step"]) == step:
                        last[k] = x
        finals.append(last)
        steps.append(step)
    if keys is None:
        columns = sorted(seen, key=lambda k: (k != "loss", "/" in k, k))
    else:
        columns = [
            k for pat in keys for k in sorted(seen, key=lambda k: (k != "loss", k)) if fnmatch.fnmatchcase(k, pat)
        ]
        columns = list(dict.fromkeys(columns))
    configs = [flatten((r["config"] or {}).get("config") or {}) for r in runs]
    fields = list(
        dict.fromkeys(k for pat in config_fields for cfg in configs for k in sorted(cfg) if fnmatch.fnmatchcase(k, pat))
    )
    for pat in config_fields:
        if not any(fnmatch.fnmatchcase(k, pat) for cfg in configs for k in cfg):
            warn(f"--config-fields {pat!r} matches no config field of these runs")
    rows = []
    for name, run, last, step, cfg in zip(_names([r["path"] for r in runs]), runs, finals, steps, configs):
        record = run["config"] or {}
        rows.append(
            {
                "run": name,
                "path": str(run["path"]),
                "seed": record.get("seed"),
                "step": step,
                **_produced_by(record),
                **{f"config.{k}": _cell(cfg.get(k)) for k in fields},
                **{k: last.get(k) for k in columns},
            }
        )
    return rows


def _cell(v):
    """A config value as a table cell: scalars as they are, anything else as compact JSON."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return json.dumps(v, separators=(",", ":"))


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.6g}"
    return str(v)


def format_table(rows: Sequence[dict], columns: Optional[Sequence[str]] = None) -> str:
    """A plain-text table of ``rows`` (``compare_runs`` output), one line per run, columns aligned.

    Default columns: every key of the rows but ``path``, and ``version`` / ``commit`` only where the
    runs differ in them.
    """
    if not rows:
        return ""
    if columns is None:
        hidden = {"path", "version", "commit"} - set(provenance_differences(rows))
        columns = [k for k in rows[0] if k not in hidden]
    columns = list(columns)
    cells = [columns] + [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


def plot_curves(
    run_dirs: Iterable,
    path,
    metric: str = "loss",
    *,
    logy: bool = False,
    title: Optional[str] = None,
    warn: Callable[[str], None] = warn,
) -> Path:
    """Draw ``metric`` against step for every run into one PNG at ``path``; returns the path.

    Runs that never recorded ``metric`` are left out (and named in the legend title); if none
    recorded it, ``ValueError``.  ``logy``: logarithmic y axis (non-positive values dropped).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    runs = [read_run(d, warn=warn) for d in run_dirs]
    names = _names([r["path"] for r in runs])
    fig = Figure(figsize=(7.0, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    drawn, missing = 0, []
    for name, run in zip(names, runs):
        pts = [(int(r["step"]), _number(r.get(metric))) for r in run["records"]]
        pts = sorted((s, v) for s, v in pts if v is not None and math.isfinite(v) and (v > 0 or not logy))
        if not pts:
            missing.append(name)
            continue
        ax.plot(
            [s for s, _ in pts], [v for _, v in pts], label=name, linewidth=1.2, marker="o" if len(pts) == 1 else None
        )
        drawn += 1
    if drawn == 0:
        raise ValueError(f"no run recorded {metric!r} (runs: {', '.join(names)})")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric} of {drawn} run{'s' if drawn > 1 else ''}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, title=f"no {metric}: {', '.join(missing)}" if missing else None, title_fontsize=7)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out
