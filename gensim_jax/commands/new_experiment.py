"""``gensim-jax new-experiment NAME [--kernel KERNEL] [--dir DIR] [--force]``: a fork's experiment file that trains at once.

It writes ``DIR/NAME.py``, one experiment in one file (docs/EXPERIMENTS.md, "Adding an experiment"):
configs (``paper`` and ``cpu_small``), a small synthetic generative model of the kernel's kind (stimuli
with their generative metadata, the closed-form log similarity), a GenSim arm and a non-GenSim
baseline arm (``supervised``: cross entropy on the generating class), the held-out evaluation with
reference rows (the stimuli themselves, the untrained encoder) and a figure.
``gensim-jax train NAME.py --config cpu_small`` trains it in about half a minute on 2 CPU cores.

======================  ==============================================================================
``beta_bernoulli``      binary features drawn from sources with Beta priors (paper Eq. I3)
``hierarchy``           classes at the leaves of a tree, prototypes by a random walk down it (Eq. 4)
``categorical``         classes with random prototypes; the class-identity kernel (App. A)
``tree``                programs as parse trees of a small grammar; the subset-tree kernel (App. M)
``gaussian_mixture``    points of a mixture of Gaussians (Eq. H2)
======================  ==============================================================================

The file imports gensim-jax only through :mod:`gensim_jax.fork`, the surface whose changes go through a
deprecation period.  An existing file is kept (one line says so) unless ``--force`` is given.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from gensim_jax.commands import _experiment_templates as T

__all__ = ["KERNELS", "add_parser", "main", "render", "write"]


#: ``{kernel: (one line for --help and the file's title, the names it imports from gensim_jax.fork, its model section)}``
KERNELS = {
    "beta_bernoulli": (
        "Beta-Bernoulli binary features, Eq. I3",
        ("BetaBernoulliTarget", "beta_bernoulli"),
        T.BETA_BERNOULLI,
    ),
    "hierarchy": ("classes in a hierarchy, Eq. 4", ("TableTarget", "hierarchy"), T.HIERARCHY),
    "categorical": ("classes, the class-identity kernel", ("TableTarget", "categorical"), T.CATEGORICAL),
    "tree": ("programs as parse trees, the subset-tree kernel", ("TableTarget", "trees"), T.TREE),
    "gaussian_mixture": (
        "a mixture of Gaussians, Eq. H2",
        ("GaussianMixtureTarget", "gaussian_mixture"),
        T.GAUSSIAN_MIXTURE,
    ),
}
DEFAULT_KERNEL = "beta_bernoulli"
#: What every kernel's file imports from :mod:`gensim_jax.fork`.
_COMMON_IMPORTS = (
    "Arm",
    "ArmConfig",
    "CrossEntropy",
    "Experiment",
    "GenSimRegression",
    "OptimConfig",
    "TrainConfig",
    "figure",
    "get_model",
    "save_figure",
    "with_overrides",
)


def _class_name(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Fork"


def check_name(name: str) -> str:
    """``name`` without a ``.py`` suffix; ``ValueError`` unless it is a Python module name (the file is imported)."""
    stem = name[:-3] if name.endswith(".py") else name
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", stem) or keyword.iskeyword(stem):
        raise ValueError(f"NAME must be a Python module name (letters, digits, underscores; e.g. my_exp), got {name!r}")
    return stem


def render(name: str, kernel: str = DEFAULT_KERNEL) -> str:
    """The text of the experiment file ``NAME.py`` for ``kernel`` (one of :data:`KERNELS`)."""
    name = check_name(name)
    if kernel not in KERNELS:
        raise ValueError(f"--kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    title, imports, model = KERNELS[kernel]
    names = sorted({*_COMMON_IMPORTS, *imports}, key=lambda n: (not n[:1].isupper(), n))  # classes, then the rest
    head = T.HEAD.replace("__IMPORTS__", "\n".join(f"    {n}," for n in names))
    text = head + model + T.TAIL
    for token, value in (
        ("__NAME__", name),
        ("__TITLE__", title),
        ("__KERNEL__", kernel),
        ("__CLASS__", _class_name(name)),
    ):
        text = text.replace(token, value)
    return text


def write(name: str, kernel: str = DEFAULT_KERNEL, directory=".", force: bool = False) -> Path:
    """Write ``directory/NAME.py`` (:func:`render`); ``ValueError`` when it exists and ``force`` is false."""
    text = render(name, kernel)
    path = Path(directory) / f"{check_name(name)}.py"
    if path.exists() and not force:
        raise ValueError(f"{path} exists; kept as it is (--force overwrites it, or choose another NAME or --dir)")
    if not Path(directory).is_dir():
        raise ValueError(f"--dir {directory}: no such directory")
    path.write_text(text, encoding="utf-8")
    return path


def main(args) -> int:
    """Run ``gensim-jax new-experiment`` with the parsed ``args``."""
    path = write(args.name, args.kernel, args.dir, args.force)
    print(f"wrote {path} ({args.kernel}: {KERNELS[args.kernel][0]}); train it with")
    print(f"  gensim-jax train {path} --config cpu_small")
    return 0


def add_parser(sub) -> None:
    """Add ``new-experiment NAME [--kernel KERNEL] [--dir DIR] [--force]`` to the sub-parsers ``sub`` of ``gensim-jax``."""
    p = sub.add_parser(
        "new-experiment",
        help="write a one-file experiment of your own (configs, a generative model, a GenSim and a baseline arm, "
        "a figure) that trains at once",
        description="Write NAME.py: one experiment in one file, with configs (paper, cpu_small), a small synthetic "
        "generative model of the kernel's kind, a GenSim arm and a supervised baseline arm, the held-out evaluation "
        "and a figure. gensim-jax train NAME.py --config cpu_small trains it in about half a minute on 2 CPU "
        "cores; replace the generative model with yours. It imports gensim-jax only through gensim_jax.fork.",
    )
    p.add_argument("name", metavar="NAME", help="the experiment's name: a Python module name (the file is NAME.py)")
    p.add_argument(
        "--kernel",
        choices=list(KERNELS),
        default=DEFAULT_KERNEL,
        help="the closed-form generative similarity of the model: "
        + "; ".join(f"{k}: {v[0]}" for k, v in KERNELS.items())
        + f" (default {DEFAULT_KERNEL})",
    )
    p.add_argument("--dir", default=".", metavar="DIR", help="where to write NAME.py (default: the current directory)")
    p.add_argument("--force", action="store_true", help="overwrite an existing NAME.py")
    p.set_defaults(fn=main)
