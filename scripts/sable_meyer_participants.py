"""Derive the per-participant oddball counts shipped as package data (issue 42: the human noise ceilings).

Reads the trial-level files of Sable-Meyer et al. (2021, PNAS 118(16) e2023123118; ``behavior/<population>.csv``
of the reference data: five human groups and ``baboons_target.csv``) and writes
``gensim_jax/assets/sable_meyer_participants.csv``: one row per participant with the number of trials and errors
on each of the 11 reference shapes (columns ``trials_<shape>``, ``errors_<shape>`` in
:data:`gensim_jax.evaluation.sable_meyer.SHAPES` order). Participants are numbered within their population in
the order they first appear in the file (``p0001``...); the authors' IDs are not copied.
Summed over a population's participants, the counts are those of ``sable_meyer_error_rates.csv``
(tests/evaluation/test_sable_meyer.py checks it).

    python scripts/sable_meyer_participants.py [--behavior ../shared/reference/sable_meyer/behavior] [--out FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gensim_jax.evaluation.sable_meyer import HUMAN_POPULATIONS, SHAPES, read_behavior

ROOT = Path(__file__).resolve().parents[1]
FILES = {**{p: f"{p}.csv" for p in HUMAN_POPULATIONS}, "baboons": "baboons_target.csv"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--behavior", type=Path, default=ROOT.parent / "shared/reference/sable_meyer/behavior")
    ap.add_argument("--out", type=Path, default=ROOT / "gensim_jax/assets/sable_meyer_participants.csv")
    a = ap.parse_args(argv)
    lines = [
        "# Per-participant counts of the quadrilateral oddball task (Sable-Meyer et al. 2021, PNAS 118(16) "
        "e2023123118), derived by scripts/sable_meyer_participants.py",
        "# from the authors' trial-level files behavior/<population>.csv (baboons: baboons_target.csv); participants "
        "numbered within their population in order of appearance.",
        ",".join(["population", "participant"] + [f"trials_{s}" for s in SHAPES] + [f"errors_{s}" for s in SHAPES]),
    ]
    for pop, name in FILES.items():
        trials = [t for t in read_behavior(a.behavior / name) if t["population"] == pop]
        order = list(dict.fromkeys(str(t["subject"]) for t in trials))
        counts = {s: (np.zeros(len(SHAPES), np.int64), np.zeros(len(SHAPES), np.int64)) for s in order}
        for t in trials:
            n, e = counts[str(t["subject"])]
            i = SHAPES.index(str(t["shape"]))
            n[i] += 1
            e[i] += 0 if t["success"] else 1
        for k, s in enumerate(order, start=1):
            n, e = counts[s]
            lines.append(",".join([pop, f"p{k:04d}", *map(str, n), *map(str, e)]))
        print(f"{pop}: {len(order)} participants, {sum(int(c[0].sum()) for c in counts.values())} trials")
    a.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
