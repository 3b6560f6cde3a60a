"""Compare finished (or running) runs from their ``metrics.jsonl``, without TensorBoard.

``gensim-jax runs compare DIR...`` prints one row per run directory (the last step, the seed from
``config.json``, and the last recorded value of each metric) and, with ``--out``, draws the loss
curves of all runs in one PNG.  The functions here need only numpy and matplotlib (no JAX).
"""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path
from typing import Iterable, Optional, Sequence

__all__ = ["read_run", "compare_runs", "format_table", "plot_curves", "DEFAULT_COLUMNS"]

#: The columns ``runs compare`` shows when ``--keys`` is not given (glob patterns over the keys).
DEFAULT_COLUMNS = ("loss", "accuracy", "grad_norm", "eval/*", "perf/examples_per_s", "perf/step_time_s")


def _number(v) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def read_run(run_dir) -> dict:
    """``{"path", "records", "config"}`` of a run directory.

    ``records`` are the parsed lines of ``metrics.jsonl`` (a line cut short by a killed process is
    skipped); ``config`` is ``config.json`` or None.  ``ValueError`` when the directory or its
    ``metrics.jsonl`` is missing or holds no record.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise ValueError(f"{run_dir}: no such run directory")
    mfile = path / "metrics.jsonl"
    if not mfile.is_file():
        raise ValueError(f"{run_dir}: no metrics.jsonl (not a run directory, or the run logged nothing yet)")
    records = []
    for line in mfile.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(r, dict) and "step" in r:
            records.append(r)
    if not records:
        raise ValueError(f"{run_dir}: metrics.jsonl holds no record")
    config = None
    cfile = path / "config.json"
    if cfile.is_file():
        try:
            config = json.loads(cfile.read_text())
        except json.JSONDecodeError:
            config = None
    return {"path": path, "records": records, "config": config}


def _names(paths: Sequence[Path]) -> list[str]:
    """Short distinct names: the directory names, with parents added where they collide."""
    parts = [p.resolve().parts for p in paths]
    depth = 1
    while True:
        names = ["/".join(pp[-depth:]) for pp in parts]
        if len(set(names)) == len(names) or depth >= max(len(pp) for pp in parts):
            return names
        depth += 1


def compare_runs(run_dirs: Iterable, keys: Optional[Sequence[str]] = None) -> list[dict]:
    """One row per run: ``{"run", "path", "seed", "step", KEY: last value, ...}``.

    Args:
      run_dirs: run directories (each with a ``metrics.jsonl``).
      keys: glob patterns selecting the metric keys (e.g. ``["loss", "eval/*"]``); default: every
        numeric key of any run.  A run without a key has None there.

    ``step`` is the last recorded step; each key's value is its last recorded value (so a final
    evaluation is found even when a training record follows it).
    """
    runs = [read_run(d) for d in run_dirs]
    if not runs:
        raise ValueError("compare_runs: no run directory given")
    finals = []
    seen: dict[str, None] = {}
    for run in runs:
        last: dict[str, float] = {}
        for r in run["records"]:
            for k, v in r.items():
                x = _number(v)
                if k not in ("step", "time") and x is not None:
                    last[k] = x
                    seen.setdefault(k, None)
        finals.append(last)
    if keys is None:
        columns = sorted(seen, key=lambda k: (k != "loss", "/" in k, k))
    else:
        columns = [
            k for pat in keys for k in sorted(seen, key=lambda k: (k != "loss", k)) if fnmatch.fnmatchcase(k, pat)
        ]
        columns = list(dict.fromkeys(columns))
    rows = []
    for name, run, last in zip(_names([r["path"] for r in runs]), runs, finals):
        cfg = run["config"] or {}
        rows.append(
            {
                "run": name,
                "path": str(run["path"]),
                "seed": cfg.get("seed"),
                "step": max(int(r["step"]) for r in run["records"]),
                **{k: last.get(k) for k in columns},
            }
        )
    return rows


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.6g}"
    return str(v)


def format_table(rows: Sequence[dict], columns: Optional[Sequence[str]] = None) -> str:
    """A plain-text table of ``rows`` (``compare_runs`` output), one line per run, columns aligned."""
    if not rows:
        return ""
    columns = list(columns or [k for k in rows[0] if k != "path"])
    cells = [columns] + [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


def plot_curves(
    run_dirs: Iterable, path, metric: str = "loss", *, logy: bool = False, title: Optional[str] = None
) -> Path:
    """Draw ``metric`` against step for every run into one PNG at ``path``; returns the path.

    Runs that never recorded ``metric`` are left out (and named in the legend title); if none
    recorded it, ``ValueError``.  ``logy``: logarithmic y axis (non-positive values dropped).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    runs = [read_run(d) for d in run_dirs]
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
