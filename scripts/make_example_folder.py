"""Write an example folder for ``gensim-jax train folder``: PNG images of a known generative model and metadata.csv.

Usage::

    python scripts/make_example_folder.py DIR                      # 300 images, six binary features, 64 px
    python scripts/make_example_folder.py DIR --kind class_path    # twelve classes on a three-level tree
    python scripts/make_example_folder.py DIR --n 1000 --size 128 --seed 3

Then ``gensim-jax train folder --config cpu_small --set data.dir=DIR data.metadata=DIR/metadata.csv``.
The images and the table are :func:`gensim_jax.stimuli.folder_example.write_example_folder`'s
(docs/FOLDER.md shows them and the numbers measured on them).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # ``python scripts/make_example_folder.py``: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gensim_jax.stimuli.folder_example import KINDS, write_example_folder  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--kind", choices=KINDS, default="features")
    parser.add_argument("--n", type=int, default=300, help="images (default 300)")
    parser.add_argument("--size", type=int, default=64, help="side in pixels (default 64)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = write_example_folder(args.directory, args.kind, args.n, args.size, args.seed)
    print(f"wrote {args.n} images and {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
