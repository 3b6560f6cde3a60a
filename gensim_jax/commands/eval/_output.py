"""What every ``gensim-jax eval PROTOCOL`` command shares: its name as typed, ``--workdir``/``--out``/``--json``,
the printed summary (a few lines and a Markdown table) and the JSON."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Callable, Optional, Sequence

from gensim_jax.jsonable import to_jsonable

__all__ = [
    "add_output_arguments",
    "emit",
    "finish",
    "markdown_table",
    "metric_rows",
    "prog",
    "runs_table",
    "typed",
]

#: Rows of the generic per-run table (:func:`runs_table`) before the rest is left to ``--json``.
MAX_ROWS = 30


def prog(protocol: str) -> str:
    """The command name of a protocol as the user typed it: ``gensim-jax eval oddball`` or ``python -m eval oddball``."""
    from gensim_jax.provenance import command_prefix

    return f"{command_prefix('eval')} {protocol}"


def typed(text: str) -> str:
    """``text`` (a docstring, a hint) with ``python -m eval`` / ``python -m train`` named as the user types them."""
    from gensim_jax.provenance import command_prefix

    return text.replace("python -m eval", command_prefix("eval")).replace("python -m train", command_prefix("train"))


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``--workdir DIR`` (writes ``DIR/<protocol>.json`` and ``DIR/<protocol>.png``), ``--out FILE`` and ``--json``."""
    p.add_argument(
        "--workdir", default=None, help="write <workdir>/<protocol>.json and the figure <workdir>/<protocol>.png"
    )
    p.add_argument("--out", default=None, help="also write the full JSON to this file")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the full JSON instead of the summary (stdout then holds only the JSON)",
    )


def emit(result, out: str | None, as_json: bool = True) -> str:
    """The JSON text of ``result``: printed when ``as_json``, written to ``out`` when given."""
    text = json.dumps(to_jsonable(result), indent=1)
    if as_json:
        print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")
    return text


def finish(
    result,
    args,
    protocol: str,
    plot: Optional[Callable[[str], object]] = None,
    summary: Optional[Callable[[dict], str]] = None,
) -> int:
    """Print the summary (or with ``--json`` the JSON), write ``--out``, and with ``--workdir`` ``<protocol>.json``
    and the figure.

    ``summary(result)`` gets the JSON-able result and returns the text printed without ``--json``: a few
    lines and a Markdown table (default: :func:`runs_table`). ``plot(path)`` draws the protocol's figure
    to ``path`` (called only with ``--workdir``).
    """
    data = to_jsonable(result)
    text = emit(data, args.out, as_json=args.json)
    written = []
    if args.out:
        written.append(args.out)
    if args.workdir:
        wd = Path(args.workdir)
        wd.mkdir(parents=True, exist_ok=True)
        (wd / f"{protocol}.json").write_text(text + "\n")
        written.append(str(wd / f"{protocol}.json"))
        if plot is not None:
            plot(str(wd / f"{protocol}.png"))
            written.append(str(wd / f"{protocol}.png"))
    if not args.json:
        print((summary or runs_table)(data).rstrip())
        print()
        where = f"; written to {', '.join(written)}" if written else ""
        print(f"The full JSON: {prog(protocol)} ... --json (or --out FILE){where}.")
    return 0


# ------------------------------------------------------------------------------------------------
# generic tables
# ------------------------------------------------------------------------------------------------


def _number(v) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def fmt(v, digits: int = 4) -> str:
    """A table cell: numbers with ``digits`` significant digits, None as ``-``."""
    if v is None:
        return "-"
    x = _number(v)
    if x is None:
        return str(v).replace("|", "/")
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return f"{x:.{digits}g}"


def metric_rows(value, prefix: str = "", max_depth: int = 3) -> dict:
    """``{dotted key: cell}`` of the numbers in a JSON-able ``value``: scalars as they are, short lists (up to
    4 numbers) written out, longer lists of numbers as ``mean m (n values)``; deeper nesting than
    ``max_depth`` and non-numeric leaves are left out (they are in the JSON)."""
    rows: dict = {}
    if isinstance(value, dict):
        if max_depth == 0:
            return rows
        for k, v in value.items():
            rows.update(metric_rows(v, f"{prefix}.{k}" if prefix else str(k), max_depth - 1))
        return rows
    if _number(value) is not None:
        rows[prefix] = fmt(value)
    elif isinstance(value, list) and value and all(_number(v) is not None for v in value):
        if len(value) <= 4:
            rows[prefix] = "[" + ", ".join(fmt(v, 3) for v in value) + "]"
        else:
            finite = [float(v) for v in value if math.isfinite(float(v))]
            mean = sum(finite) / len(finite) if finite else float("nan")
            rows[prefix] = f"mean {fmt(mean)} ({len(value)} values)"
    return rows


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A Markdown table (``| a | b |`` lines and the ``|---|`` rule); cells formatted by :func:`fmt`."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c if isinstance(c, str) else fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def runs_table(result: dict, key: str = "runs", field: Optional[str] = None, title: str = "") -> str:
    """A metric x run Markdown table of ``result[key]`` (one column per run, ``run[field]`` or the run itself
    flattened by :func:`metric_rows`), or of ``result`` itself (one column) when it has no ``key``; at most
    :data:`MAX_ROWS` rows, the number left out said below."""
    runs = result.get(key) if isinstance(result.get(key), list) else None
    if runs is None:
        columns, names = [metric_rows(result)], ["value"]
    else:
        columns = [metric_rows(r.get(field) if field else r) for r in runs]
        names = [_run_name(r, i) for i, r in enumerate(runs)]
    keys = list(dict.fromkeys(k for c in columns for k in c))
    shown = keys[:MAX_ROWS]
    table = markdown_table(["metric", *names], [[k, *(c.get(k, "-") for c in columns)] for k in shown])
    lines = [title, ""] if title else []
    lines.append(table)
    if len(keys) > len(shown):
        lines.append(f"({len(keys) - len(shown)} more numbers in the JSON)")
    return "\n".join(lines)


def _run_name(run: dict, i: int) -> str:
    """A run's column name: its arm and seed, else its run directory, else ``run i``."""
    if isinstance(run, dict):
        if "arm" in run:
            return f"{run['arm']} seed {run.get('seed', '?')}"
        for k in ("run", "export"):
            if isinstance(run.get(k), str):
                return Path(run[k]).name if k == "run" else Path(run[k]).parent.name
    return f"run {i}"
