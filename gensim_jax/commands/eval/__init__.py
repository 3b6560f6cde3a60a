"""``python -m eval PROTOCOL [options]``: run one evaluation protocol, print JSON, write outputs.

Every protocol takes ``--workdir DIR`` (writes ``DIR/<protocol>.json`` and the figure
``DIR/<protocol>.png``) and ``--out FILE`` (the JSON only). ``python -m eval PROTOCOL --help``
lists a protocol's options. The Gaussian-mixture replication is run by
``python -m train gaussian_mixture``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

# protocol name -> driver module (with main(argv) and a docstring whose first line describes it)
PROTOCOLS = {
    "export": "gensim_jax.commands.eval.export",
    "oddball": "gensim_jax.commands.eval.oddball",
    "geoclidean": "gensim_jax.commands.eval.geoclidean",
    "hierarchy": "gensim_jax.commands.eval.hierarchy",
    "odd_one_out": "gensim_jax.commands.eval.odd_one_out",
    "spurious_digits": "gensim_jax.commands.eval.spurious_digits",
}


def _summary(module: str) -> str:
    """First docstring line of ``module`` without importing it (no jax start-up for ``--help``)."""
    spec = importlib.util.find_spec(module)
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) if spec and spec.origin else None
    line = (doc or "").strip().splitlines()[0] if doc else ""
    return line.split("``: ", 1)[-1]


def usage() -> str:
    """The ``--help`` text: this module's docstring and one line per protocol, naming the command as typed."""
    from gensim_jax.provenance import command_prefix

    prog = command_prefix("eval")
    width = max(map(len, PROTOCOLS))
    lines = [f"  {name:<{width}}  {_summary(mod)}" for name, mod in PROTOCOLS.items()]
    text = __doc__.strip().replace("python -m eval", prog).replace("python -m train", command_prefix("train"))
    from gensim_jax.commands.text import plain_text

    return plain_text(f"usage: {prog} PROTOCOL [options]\n\n{text}\n\nprotocols:\n" + "\n".join(lines))


def main(argv=None) -> int:
    """Entry point of ``gensim-jax eval`` / ``python -m eval``; returns the exit status.

    No protocol or an unknown one is one line on stderr and exit status 2.
    """
    from gensim_jax.provenance import command_prefix

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if not argv or argv[0] not in PROTOCOLS:
        prog = command_prefix("eval")
        what = f"unknown protocol {argv[0]!r}" if argv else "a protocol is required"
        print(f"{prog}: error: {what}; protocols: {', '.join(PROTOCOLS)} (see {prog} --help)", file=sys.stderr)
        return 2
    from gensim_jax.parallel import cpu_only_without_accelerators

    cpu_only_without_accelerators()  # no TPU start-up noise on a machine without one
    return importlib.import_module(PROTOCOLS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
