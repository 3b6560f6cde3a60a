"""A small seeded generator of random, valid Geoclidean programs (paper Appendix P grammar).

Used by the tree-kernel benchmark to get ~1,000 distinct programs without the benchmark files in
``shared/``.  Each program recombines and mutates the 37 Appendix O concept programs of
:mod:`gensim_jax.stimuli.geoclidean.concepts`: it keeps a random prefix of one concept's
constructions, then appends new constructions drawn at random against what is already defined
(lines or circles through free points, points on one earlier object, intersections of two
earlier objects, or earlier points reused), optionally flips the visibility of a construction,
and is checked by the real parser (syntax and semantics) before it is kept.
"""

from __future__ import annotations

import numpy as np

from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_NAMES, concept_program
from gensim_jax.stimuli.geoclidean.grammar import Program, parse_program


def _point_text(p) -> str:
    return f"{p.name}({', '.join(o.name + ('*' if o.starred else '') for o in p.constraints)})"


def _construction_text(name: str, kind: str, invisible: bool, p1: str, p2: str) -> str:
    return f"{name}{'*' if invisible else ''} = {kind}({p1}, {p2})"


def _max_index(names, prefix: str) -> int:
    return max([int(n[1:]) for n in names if n[0] == prefix] + [0])


def random_program(rng: np.random.Generator, max_new: int = 6) -> str:
    """One random valid program (text, one construction per line)."""
    base: Program = concept_program(CONCEPT_NAMES[int(rng.integers(len(CONCEPT_NAMES)))])
    keep = int(rng.integers(1, len(base.constructions) + 1))
    lines, objects, points = [], [], {}
    for c in base.constructions[:keep]:
        invisible = c.invisible ^ bool(rng.random() < 0.1)  # mutation: flip visibility
        ps = [_point_text(p) for p in c.points]
        lines.append(_construction_text(c.name, c.kind, invisible, *ps))
        objects.append(c.name)
        for p, text in zip(c.points, ps):
            points.setdefault(p.name, text)
    n_new = int(rng.integers(0 if keep > 1 else 1, max_new + 1))
    n_lines, n_circles = _max_index(objects, "l"), _max_index(objects, "c")
    n_points = max(int(name[1:]) for name in points)
    for _ in range(n_new):
        kind = "line" if rng.random() < 0.55 else "circle"
        if kind == "line":
            n_lines += 1
            name = f"l{n_lines}"
        else:
            n_circles += 1
            name = f"c{n_circles}"
        chosen: list[str] = []
        while len(chosen) < 2:
            if points and rng.random() < 0.4:  # reuse an earlier point (its first spelling)
                text = points[list(points)[int(rng.integers(len(points)))]]
                if text in chosen:
                    continue
            else:
                n_points += 1
                k = int(rng.choice(3, p=[0.4, 0.3, 0.3])) if objects else 0
                refs = list(rng.choice(objects, size=min(k, len(objects)), replace=False))
                text = f"p{n_points}({', '.join(refs)})"
                points[f"p{n_points}"] = text
            chosen.append(text)
        lines.append(_construction_text(name, kind, bool(rng.random() < 0.3), *chosen))
        objects.append(name)
    text = "\n".join(lines) + "\n"
    parse_program(text, strict=True)  # raises if the generator ever produced an invalid program
    return text


def random_programs(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct random programs (seeded), see the module docstring."""
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = random_program(rng)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out
