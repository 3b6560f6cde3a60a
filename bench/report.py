"""Turn the JSON lines of :mod:`bench.run_all` into the Markdown tables of docs/PERFORMANCE.md.

Usage::

    python -m bench.run_all > results.jsonl
    python -m bench.report results.jsonl
"""

from __future__ import annotations

import json
import sys


def _fmt_s(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f} s"
    if x >= 1:
        return f"{x:.2f} s"
    return f"{x * 1e3:.3g} ms"


def _params(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items() if k not in ("dtype",))


def tables(lines: list[dict]) -> str:
    main = [ln for ln in lines if ln["bench"] not in ("machine", "summary")
            and not ln["bench"].startswith("scaling_")]
    scaling = [ln for ln in lines if ln["bench"].startswith("scaling_")]
    out = ["| benchmark | params | ours | reference | reference time | ratio (ours/ref) | target | met |",
           "|---|---|---|---|---|---|---|---|"]
    for ln in main:
        ratio = f"{ln['ratio']:.3g}"
        if "speedup" in ln:
            ratio += f" (speedup {ln['speedup']:,.0f}x)"
        out.append(f"| `{ln['bench']}` | {_params(ln['params'])} | {_fmt_s(ln['ours_s'])} | "
                   f"{ln['reference']} | {_fmt_s(ln['reference_s'])} | {ratio} | {ln['target']} | "
                   f"{'yes' if ln['met'] else 'no'} |")
    if scaling:
        out += ["", "| benchmark | B | ours | reference | ratio | torch threads (faster) |",
                "|---|---|---|---|---|---|"]
        for ln in scaling:
            b = ln["params"].get("B", ln["params"].get("N"))
            out.append(f"| `{ln['bench']}` | {b} | {_fmt_s(ln['ours_s'])} | "
                       f"{_fmt_s(ln['reference_s'])} | {ln['ratio']:.3g} | "
                       f"{ln.get('reference_threads', '')} |")
    return "\n".join(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        lines = [json.loads(s) for s in fh if s.strip().startswith("{")]
    print(tables(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
