"""The report card's presentation (``gensim-jax score``): Markdown tables and the figure of a scorecard dict.

:mod:`gensim_jax.evaluation.scorecard` runs the protocols and returns the card (a dict; docs/EVALUATION.md
lists its keys); this module only reads it: :func:`format_markdown` (a table per protocol, the model
first, then the reference rows, then the human noise ceilings and the separation of the reference
rows) and :func:`scorecard_figure` / :func:`plot_scorecard` (a panel per protocol). It also holds what
the card reports: the protocols in report order and the interval's confidence.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import numpy as np

__all__ = [
    "ALL_PROTOCOLS",
    "CONFIDENCE",
    "GEOCLIDEAN_METRICS",
    "OPTIONAL_PROTOCOLS",
    "PROTOCOLS",
    "format_markdown",
    "plot_scorecard",
    "scorecard_figure",
]

#: The protocols a scorecard can hold, in report order.
PROTOCOLS = ("oddball", "hierarchy", "geoclidean")
#: Protocols that need the user's data (a trials CSV): run only when asked for.
OPTIONAL_PROTOCOLS = ("odd_one_out",)
ALL_PROTOCOLS = PROTOCOLS + OPTIONAL_PROTOCOLS
#: The confidence of every interval of the card.
CONFIDENCE = 0.95
#: The geoclidean protocol's metrics, in column order.
GEOCLIDEAN_METRICS = ("acc", "acc_close", "acc_far", "auc_close", "auc_far")


def _cell(value, interval=None, spec=".2f", seeds=None) -> str:
    """``value [interval]``, and ``; seeds [lo, hi]`` for the mean over several exports."""
    if value is None:
        return "n/a"
    text = format(value, spec)
    if interval:
        text += f" [{format(interval[0], spec)}, {format(interval[1], spec)}]"
    if seeds:
        text += f"; seeds [{format(seeds[0], spec)}, {format(seeds[1], spec)}]"
    return text


def _get(tree, *path):
    for k in path:
        if not isinstance(tree, Mapping):
            return None
        tree = tree.get(k)
    return tree


def _interval_note(e: Mapping) -> str:
    n = _get(e, "interval_seeds_method", "exports")
    head = f"{int(CONFIDENCE * 100)}% interval: {_get(e, 'interval_method', 'method') or 'none'}"
    return head + (f"; seeds: Student t over the {n} exports" if n else "")


def _separation_lines(e: Mapping) -> list:
    s = e.get("separation")
    if not s or not s.get("rows"):
        return []
    words = []
    for name, r in s["rows"].items():
        if r["separated"] is None:
            verdict = "not tested (no interval)"
        elif r["separated"]:
            verdict = "separated, model " + ("above" if r["model_above"] else "below")
        else:
            verdict = "NOT separated (intervals overlap)"
        words.append(f"{name} {_cell(r['value'], r['interval'])}: {verdict}")
    m = s["model"]
    return [
        f"Separation ({s['metric']}, {int(CONFIDENCE * 100)}% intervals): model {_cell(m['value'], m['interval'])}; "
        + "; ".join(words)
        + ".",
        "",
    ]


def _ceiling_lines(e: Mapping) -> list:
    c = e.get("ceilings")
    if not c:
        return []

    def row(label, x):
        sh, bg = x["split_half"], x["between_group"]
        between = "n/a" if bg is None else _cell(bg["r"], bg.get("interval"), ".3f")
        return f"| {label} | {sh['participants']} | {_cell(sh['reliability'], sh.get('interval'), '.3f')} | {between} |"

    lines = [
        "Human noise ceilings of the behavioural comparisons (split-half: two random halves of the participants, "
        "halved within each population, Pearson r of their pooled rates over the 11 shapes, mean of 200 splits, "
        "Spearman-Brown corrected; between groups: one human group against the other four pooled, the r a model "
        "as human as another human group reaches; intervals: bootstrap over participants):",
        "",
        "| comparison | participants | split-half reliability (the ceiling) | between groups |",
        "|---|---|---|---|",
        row("r human (pooled, 5 groups)", c["r_human"]),
        row("r baboon", c["r_baboon"]),
        *(row(f"r {p}", x) for p, x in c["r_population"].items() if p != "baboons"),
        "",
        "r / ceiling: the row's r divided by the split-half ceiling of its comparison (interval: trial and "
        "participant draws paired); r human / between groups in the JSON (`of_between_group`).",
        "",
    ]
    return lines


def _rows(card: Mapping, entry: Mapping) -> dict:
    """The model's row, then the reference rows, of one protocol's entry."""
    return {card["model"]: entry, **entry["references"]}


def _oddball_markdown(card: Mapping) -> list:
    e = card["oddball"]
    iv = e.get("interval", {})
    lines = [
        f"## Oddball ({e['stimuli']['trials']} trials; graded read-out at the humans' mean error, and the "
        f"paper's argmax rule; {int(CONFIDENCE * 100)}% interval: "
        f"{e.get('interval_method', {}).get('method', 'none')}"
        + (
            f"; seeds: Student t over the {e['interval_seeds_method']['exports']} exports"
            if "interval_seeds_method" in e
            else ""
        )
        + ")",
        "",
        "| row | rho9 | r human | r human / ceiling | r baboon | r baboon / ceiling | mean error | argmax rho9 | "
        "argmax r human | argmax r baboon |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in _rows(card, e).items():
        gi = iv if r is e else r.get("interval", {})
        si = e.get("interval_seeds", {}) if r is e else {}
        a = r.get("argmax", {})
        ai = gi.get("argmax", {})
        gg = gi.get("graded", {})
        sa = si.get("argmax", {})
        ro = r.get("readout") or {}
        if (
            ro.get("reached") is False
            and ro.get("lowest_error") is not None
            and not isinstance(ro["lowest_error"], list)
        ):
            mark = (
                f" (graded read-out CANNOT reach its target {ro['target_error']:.3f}: the lowest error it reaches is "
                f"{ro['lowest_error']:.3f}; graded = argmax)"
            )
        elif r.get("readout_note"):
            mark = " (graded read-out did not reach its target, see below)"
        else:
            mark = ""
        rel = {k: " (reliability)" if r.get(f"{k}_is") else "" for k in ("r_human", "r_baboon")}
        spec = {k: ".3f" if r.get(f"{k}_is") else ".2f" for k in ("r_human", "r_baboon")}
        frac = r.get("of_ceiling") or {}
        sf = si.get("of_ceiling", {})
        lines.append(
            f"| {name} | {_cell(r['rho9'], gg.get('rho9'), seeds=si.get('rho9'))} | "
            f"{_cell(r['r_human'], gg.get('r_human'), spec['r_human'], si.get('r_human'))}{rel['r_human']} | "
            f"{_cell(frac.get('r_human'), gg.get('r_human_of_ceiling'), seeds=sf.get('r_human'))} | "
            f"{_cell(r['r_baboon'], gg.get('r_baboon'), spec['r_baboon'], si.get('r_baboon'))}{rel['r_baboon']} | "
            f"{_cell(frac.get('r_baboon'), gg.get('r_baboon_of_ceiling'), seeds=sf.get('r_baboon'))} | "
            f"{_cell(r['mean_error'], gg.get('mean_error'), '.3f', seeds=si.get('mean_error'))}{mark} | "
            f"{_cell(a.get('rho9'), ai.get('rho9'), seeds=sa.get('rho9'))} | "
            f"{_cell(a.get('r_human'), ai.get('r_human'), seeds=sa.get('r_human'))} | "
            f"{_cell(a.get('r_baboon'), ai.get('r_baboon'), seeds=sa.get('r_baboon'))} |"
        )
    notes = [f"{name}: {r['readout_note']}." for name, r in _rows(card, e).items() if r.get("readout_note")]
    return (
        lines
        + ["", *notes, *([""] if notes else [])]
        + _ceiling_lines(e)
        + _separation_lines(e)
        + ["Paper (Fig. 2C): GenSim rho9 0.88, supervised 0.47.", ""]
    )


def _hierarchy_markdown(card: Mapping) -> list:
    e = card["hierarchy"]
    head = " | ".join(f"L{lv} ({n})" for lv, n in zip(e["levels"], e["num_labels"]))
    st = e["stimuli"]
    tree = f", tree {'x'.join(map(str, st['branching']))}" if "branching" in st else ""
    drawn = (
        f", drawn at {st['content_size']} px with noise {st['noise']}"
        + (f" and enlarged to {st['image_size']} px" if st["image_size"] != st["content_size"] else "")
        if "content_size" in st
        else ""
    )
    lines = [
        f"## Hierarchy decoding ({st['images']} images: {st.get('source', 'synthetic gratings')}{tree}{drawn}; "
        f"score = sum_l log(a_l / c_l), uniform chance; {_interval_note(e)})",
        "",
        f"| row | score | {head} |",
        "|---|---|" + "---|" * len(e["levels"]),
        "| chance | 0 | " + " | ".join(f"{c:.3f}" for c in e["chance"]) + " |",
    ]
    for name, r in _rows(card, e).items():
        ri = r.get("interval", {})
        si = e.get("interval_seeds", {}) if r is e else {}
        accs = [
            _cell(
                a,
                (ri.get("accuracy") or [None] * len(r["accuracy"]))[i],
                ".3f",
                (si.get("accuracy") or [None] * len(r["accuracy"]))[i],
            )
            for i, a in enumerate(r["accuracy"])
        ]
        lines.append(
            f"| {name} | {_cell(r['score'], ri.get('score'), seeds=si.get('score'))} | " + " | ".join(accs) + " |"
        )
    return lines + ["", *_separation_lines(e)]


def _geoclidean_markdown(card: Mapping) -> list:
    e = card["geoclidean"]
    lines = [
        f"## Geoclidean few-shot ({e['stimuli']['concepts']} concepts, {e['stimuli']['source']}; prototype "
        f"scores, per-concept thresholds; {_interval_note(e)})",
        "",
        "| row | acc | acc close | acc far | AUC close | AUC far |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in _rows(card, e).items():
        ri = r.get("interval", {})
        si = e.get("interval_seeds", {}) if r is e else {}
        lines.append(
            f"| {name} | " + " | ".join(_cell(r[k], ri.get(k), seeds=si.get(k)) for k in GEOCLIDEAN_METRICS) + " |"
        )
    return lines + [
        "",
        *_separation_lines(e),
        "Chance: AUC 0.5; the per-concept thresholds are fitted on the test images, so an accuracy "
        "without information is above 0.5 (docs/EVALUATION.md, section 2).",
        "",
    ]


def _odd_one_out_markdown(card: Mapping) -> list:
    e = card["odd_one_out"]
    st = e["stimuli"]
    lines = [
        f"## Odd-one-out ({st['trials']} trials of {st['participants']} participants, {st['trials_csv']}; mean "
        f"likelihood of the human choices, alpha fitted per participant; interval: "
        f"{e.get('interval_method', {}).get('method', 'none')})",
        "",
        "| row | mean likelihood |",
        "|---|---|",
        f"| chance | {e['chance']:.3f} |",
    ]
    for name, r in _rows(card, e).items():
        si = e.get("interval_seeds", {}) if r is e else {}
        lines.append(
            f"| {name} | {_cell(r['mean_likelihood'], r.get('interval', {}).get('mean_likelihood'), '.3f', si.get('mean_likelihood'))} |"
        )
    return lines + ["", *_separation_lines(e)]


_MARKDOWN = {
    "oddball": _oddball_markdown,
    "hierarchy": _hierarchy_markdown,
    "geoclidean": _geoclidean_markdown,
    "odd_one_out": _odd_one_out_markdown,
}


def format_markdown(card: Mapping) -> str:
    """Markdown tables of a scorecard: one per protocol (in :data:`ALL_PROTOCOLS` order), the model first, then
    the reference rows."""
    lines = [f"# Scorecard: {card['model']}", ""]
    for p in ALL_PROTOCOLS:
        if p in card:
            lines += _MARKDOWN[p](card)
    return "\n".join(lines + _separation_summary(card))


def _separation_summary(card: Mapping) -> list:
    """One line per protocol: are its embedded reference rows (pixels, untrained) separated from the model?"""
    rows = [
        (p, card[p]["separation"]) for p in ALL_PROTOCOLS if p in card and card[p].get("separation", {}).get("rows")
    ]
    if not rows:
        return []
    names = list(dict.fromkeys(n for _, s in rows for n in s["rows"]))
    out = [
        f"## Do the reference rows separate from the model? ({int(CONFIDENCE * 100)}% intervals do not overlap)",
        "",
        "| protocol | metric | " + " | ".join(names) + " | all separated |",
        "|---|---|" + "---|" * len(names) + "---|",
    ]
    word = {True: "yes", False: "no", None: "n/a"}

    def cell(r):
        if not r["separated"]:
            return word[r["separated"]]
        return "yes, model " + ("above" if r["model_above"] else "BELOW")

    for p, s in rows:
        cells = [cell(s["rows"][n]) if n in s["rows"] else "" for n in names]
        out.append(f"| {p} | {s['metric']} | " + " | ".join(cells) + f" | {word[s['all_separated']]} |")
    return out + [""]


def _oddball_panel(ax, card: Mapping) -> None:
    e = card["oddball"]
    rows = _rows(card, e)
    metrics = ("rho9", "r_human", "r_baboon")
    width = 0.8 / len(rows)
    for k, (name, r) in enumerate(rows.items()):
        iv = (e if r is e else r).get("interval", {}).get("graded", {})
        vals = [np.nan if r.get(m) is None else r[m] for m in metrics]
        err = np.array(
            [[v - iv[m][0], iv[m][1] - v] if iv.get(m) and np.isfinite(v) else [0, 0] for m, v in zip(metrics, vals)]
        ).T
        err = err if err.any() else None  # the behaviour rows have no interval
        ax.bar(np.arange(3) + k * width, vals, width, yerr=err, label=name, capsize=2)
    ax.set_xticks(np.arange(3) + 0.4 - width / 2, ["rho(9) regularity", "r humans", "r baboons"])
    c = e.get("ceilings")
    if c:  # the noise ceilings over the r humans / r baboons groups: split-half (solid, band) and between groups
        for k, key in ((1, "r_human"), (2, "r_baboon")):
            lo, hi = k - width / 2, k + 0.8 - width / 2
            sh = c[key]["split_half"]
            ax.hlines(sh["reliability"], lo, hi, color="k", lw=1.2, label="ceiling: split-half" if k == 1 else None)
            if sh.get("interval"):
                ax.fill_between([lo, hi], *sh["interval"], color="k", alpha=0.15, lw=0)
            bg = c[key]["between_group"]
            if bg is not None:
                ax.hlines(bg["r"], lo, hi, color="k", ls="--", lw=1.0, label="between human groups")
                if bg.get("interval"):
                    ax.fill_between([lo, hi], *bg["interval"], color="grey", alpha=0.15, lw=0)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylim(-1, 1.05)  # room above the ceiling lines at ~1
    ax.set_title("Oddball (graded read-out)")


def _geoclidean_panel(ax, card: Mapping) -> None:
    rows = _rows(card, card["geoclidean"])
    metrics = GEOCLIDEAN_METRICS[1:]
    width = 0.8 / len(rows)
    for k, (name, r) in enumerate(rows.items()):
        iv = r.get("interval", {})
        vals = np.array([r[m] for m in metrics])
        err = np.array([[v - iv[m][0], iv[m][1] - v] if iv.get(m) else [0, 0] for m, v in zip(metrics, vals)]).T
        ax.bar(np.arange(len(metrics)) + k * width, vals, width, yerr=err, label=name, capsize=2)
    ax.set_xticks(np.arange(len(metrics)) + 0.4 - width / 2, ["acc close", "acc far", "AUC close", "AUC far"])
    ax.axhline(0.5, color="r", ls="--", lw=0.8)
    ax.set_ylim(0, 1.05)
    ax.set_title("Geoclidean few-shot")


def _odd_one_out_panel(ax, card: Mapping) -> None:
    e = card["odd_one_out"]
    rows = _rows(card, e)
    for k, (name, r) in enumerate(rows.items()):
        iv = r.get("interval", {}).get("mean_likelihood")
        v = r["mean_likelihood"]
        ax.bar(k, v, 0.7, yerr=None if not iv else [[v - iv[0]], [iv[1] - v]], label=name, capsize=2)
    ax.axhline(e["chance"], color="r", ls="--", lw=0.8, label="chance")
    ax.set_xticks(range(len(rows)), list(rows), fontsize=7)
    ax.set_ylabel("mean likelihood of the human choices")
    ax.set_ylim(0, 1)
    ax.set_title("Odd-one-out")


def _hierarchy_panel(ax, card: Mapping) -> None:
    e = card["hierarchy"]
    for name, r in _rows(card, e).items():
        acc = np.asarray(r["accuracy"], np.float64)
        iv = (e if r is e else r).get("interval", {}).get("accuracy")
        err = None
        if iv and all(iv):
            err = np.abs(np.array([[a - lo, hi - a] for a, (lo, hi) in zip(acc, iv)]).T)
        label = f"{name} (score {r['score']:.2f})"
        ax.errorbar(r["levels"], acc, yerr=err, marker="o", capsize=2, label=label)
    ax.plot(e["levels"], e["chance"], "r--", label="chance")
    ax.set_xticks(e["levels"])
    ax.set_xlabel("tree level")
    ax.set_ylabel("decoding accuracy")
    ax.set_ylim(0, 1.05)
    ax.set_title("Hierarchy decoding")


_PANELS = {
    "oddball": _oddball_panel,
    "hierarchy": _hierarchy_panel,
    "geoclidean": _geoclidean_panel,
    "odd_one_out": _odd_one_out_panel,
}


def scorecard_figure(card: Mapping):
    """The figure of :func:`plot_scorecard` (a ``matplotlib.figure.Figure``), one panel per protocol with its
    legend below the panel, so that no legend covers a bar or an error bar."""
    from gensim_jax.evaluation.plotting import figure

    protocols = [p for p in card["protocols"] if p in card]
    fig, axes = figure(max(7.0, 5.5 * len(protocols)), 5.5, ncols=len(protocols))  # constrained layout makes room below
    for ax, p in zip(np.atleast_1d(axes), protocols):
        _PANELS[p](ax, card)
        long = max((len(x) for x in ax.get_legend_handles_labels()[1]), default=0) > 40
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1 if long else 2, frameon=False)
    return fig


def plot_scorecard(card: Mapping, path: str | os.PathLike) -> Path:
    """One figure, a panel per protocol: the model beside the reference rows (bars with their intervals)."""
    from gensim_jax.evaluation.plotting import save_figure

    return save_figure(scorecard_figure(card), path)
