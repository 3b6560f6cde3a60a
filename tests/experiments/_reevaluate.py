"""The one evaluation path: a run's exports re-evaluated by `gensim-jax eval export` give its recorded numbers."""

from __future__ import annotations

import json
from pathlib import Path

from gensim_jax.commands.eval import main as eval_main
from gensim_jax.experiments import evaluate_export
from gensim_jax.jsonable import to_jsonable


def assert_exports_reproduce_the_run(workdir: Path, results: dict, arms, capsys=None) -> None:
    """Every run of ``arms``: :func:`evaluate_export` equals ``results["evaluations"][arm][r]`` exactly; the
    first arm's runs also through the command line (``eval export --export ... --out FILE --json``)."""
    recorded = json.loads((Path(workdir) / "results.json").read_text())["evaluations"]
    for i, arm in enumerate(arms):
        exports = [Path(workdir) / str(arm) / f"run{r}" / "export" for r in range(len(recorded[str(arm)]))]
        assert exports
        for r, d in enumerate(exports):
            got = evaluate_export(d)
            assert got["arm"] == str(arm) and got["evaluation"] == recorded[str(arm)][r], (arm, r)
            assert got["evaluation"] == to_jsonable(results["evaluations"][str(arm)][r])
        if i == 0:
            out = Path(workdir) / "reevaluated.json"
            assert eval_main(["export", "--export", *map(str, exports), "--out", str(out), "--json"]) == 0
            runs = json.loads(out.read_text())["runs"]
            assert [r["evaluation"] for r in runs] == recorded[str(arm)]
            if capsys is not None:  # --json: stdout holds only the JSON, the same as --out's
                printed = json.loads(capsys.readouterr().out)
                assert [r["evaluation"] for r in printed["runs"]] == recorded[str(arm)]
