"""``python -m eval PROTOCOL [options]``: run one evaluation protocol and print JSON.

Protocols: ``oddball`` (paper Sec. 3.1), ``geoclidean`` (Sec. 3.2), ``hierarchy`` (Sec. 3.3,
Appendix N), ``odd_one_out`` (Sec. 3.3, Levels). ``python -m eval PROTOCOL --help`` lists options.
The Gaussian-mixture replication is run by ``python -m train gaussian_mixture``.
"""

from __future__ import annotations

import importlib
import sys

PROTOCOLS = {
    "oddball": "eval.oddball",
    "geoclidean": "eval.geoclidean",
    "hierarchy": "eval.hierarchy",
    "odd_one_out": "eval.odd_one_out",
    "spurious_digits": "eval.spurious_digits",
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in PROTOCOLS:
        print(__doc__.strip())
        print("\nprotocols: " + ", ".join(PROTOCOLS))
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return importlib.import_module(PROTOCOLS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
