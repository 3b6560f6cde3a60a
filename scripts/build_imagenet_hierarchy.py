"""Regenerate ``gensim_jax/assets/imagenet1k_hierarchy.json`` from WordNet 3.0.

The ImageNet-1k (ILSVRC 2012) classes are WordNet 3.0 noun synsets. This script reads
their WordNet ids in label order from the ``labels.txt`` that ships inside
tensorflow-datasets (located with ``importlib.util.find_spec``, so TensorFlow is never
imported), walks each class up its hypernym chain to ``entity.n.01`` and merges the
chains into one rooted tree (paper Sec. 3.3, Fig. 4A, Appendix N).

Choice of hypernym path (WordNet gives some synsets several parents): every synset
gets exactly ONE parent, namely the hypernym (``hypernyms()`` plus
``instance_hypernyms()``) with the greatest depth, i.e. the longest chain of hypernyms
up to ``entity.n.01``; ties go to the hypernym with the smallest WordNet offset. Hence
each class's path is one of its longest hypernym paths, and since the rule picks one
parent per synset the paths of all classes merge into a tree.

Node order in the output: nodes ``0..999`` are the classes in ImageNet label order;
the internal nodes follow, sorted by (depth, wnid). Only ancestors of the classes are
kept, so the branching factor of a node counts its children within this tree.

WordNet 3.0 comes from Debian's ``wordnet-base`` package (``/usr/share/wordnet``).
NLTK's reader wants a ``lexnames`` file beside the database files and refuses paths
outside its data roots, so the files are copied into a folder of our own (a temporary
directory unless ``--work-dir`` is given), ``lexnames`` is written there, and the folder
is added to ``nltk.data.path``.

Usage::

    python scripts/build_imagenet_hierarchy.py            # rewrites the asset
    python scripts/build_imagenet_hierarchy.py --check    # exit 1 if it differs
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

WORDNET_DIR = Path("/usr/share/wordnet")
REPO_ROOT = Path(__file__).resolve().parents[1]
ASSET_PATH = REPO_ROOT / "gensim_jax" / "assets" / "imagenet1k_hierarchy.json"

# The 45 WordNet lexicographer files, numbered 00-44 (WordNet 3.0 ``lexnames(5WN)``),
# with the syntactic category number (1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES = (
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
)
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

DATABASE_FILES = (
    "data.noun",
    "data.verb",
    "data.adj",
    "data.adv",
    "index.noun",
    "index.verb",
    "index.adj",
    "index.adv",
    "noun.exc",
    "verb.exc",
    "adj.exc",
    "adv.exc",
)

ROOT_NAME = "entity.n.01"


def imagenet_labels_path() -> Path:
    """Path of tensorflow-datasets' ``imagenet2012/labels.txt``, found without importing it."""
    spec = importlib.util.find_spec("tensorflow_datasets")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("tensorflow_datasets is not installed; pass --labels")
    for location in spec.submodule_search_locations:
        path = Path(location) / "datasets" / "imagenet2012" / "labels.txt"
        if path.is_file():
            return path
    raise FileNotFoundError("imagenet2012/labels.txt not found in tensorflow_datasets")


def read_wnids(path: Path) -> list[str]:
    wnids = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    if len(wnids) != 1000 or len(set(wnids)) != 1000:
        raise ValueError(f"{path}: expected 1000 distinct wnids, found {len(wnids)}")
    for w in wnids:
        if len(w) != 9 or w[0] != "n" or not w[1:].isdigit():
            raise ValueError(f"{path}: {w!r} is not a noun wnid like 'n01440764'")
    return wnids


def prepare_wordnet_dir(source: Path, target: Path) -> Path:
    """Copy the WordNet 3.0 database files into ``target`` and write ``lexnames``."""
    source, target = Path(source), Path(target)
    missing = [f for f in DATABASE_FILES if not (source / f).is_file()]
    if missing:
        raise FileNotFoundError(f"WordNet database in {source} lacks {missing}")
    target.mkdir(parents=True, exist_ok=True)
    for name in DATABASE_FILES:
        # copyfile follows symlinks, so the copies are plain files (NLTK rejects links).
        shutil.copyfile(source / name, target / name)
    lines = [f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)]
    (target / "lexnames").write_text("".join(lines))
    return target


def open_wordnet(folder: Path):
    """Open a prepared WordNet 3.0 folder with NLTK's ``WordNetCorpusReader``."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _WordNet30Reader(WordNetCorpusReader):
        # The reader maps synsets of another WordNet version onto 3.0 through the
        # ``index.sense`` of the default NLTK corpus. These files ARE WordNet 3.0, so
        # the mapping is the identity; it only serves multilingual look-ups anyway.
        def map_wn(self, version="wordnet"):
            return None

    folder = str(Path(folder).resolve())
    if folder not in nltk.data.path:
        nltk.data.path.append(folder)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The multilingual functions")
        reader = _WordNet30Reader(folder, None)
    version = reader.get_version()
    if version != "3.0":
        raise ValueError(f"expected WordNet 3.0 in {folder}, found version {version!r}")
    return reader


def _wnid(synset) -> str:
    return f"{synset.pos()}{synset.offset():08d}"


def build_hierarchy(wordnet, wnids: list[str]) -> dict:
    """Merge the classes' hypernym chains into one tree; returns the JSON-ready dict."""
    depth_memo: dict = {}

    def hypernyms(s):
        return s.hypernyms() + s.instance_hypernyms()

    def depth(s) -> int:  # length of the longest hypernym chain up to the root
        if s not in depth_memo:
            ups = hypernyms(s)
            depth_memo[s] = 0 if not ups else 1 + max(depth(h) for h in ups)
        return depth_memo[s]

    def parent(s):
        ups = hypernyms(s)
        if not ups:
            return None
        return min(ups, key=lambda h: (-depth(h), h.offset()))

    classes = [wordnet.synset_from_pos_and_offset("n", int(w[1:])) for w in wnids]
    for w, s in zip(wnids, classes):
        if _wnid(s) != w:
            raise ValueError(f"wnid {w} resolved to {s.name()} ({_wnid(s)})")

    parent_of: dict = {}
    for s in classes:
        node = s
        while node not in parent_of:
            up = parent(node)
            parent_of[node] = up
            if up is None:
                if node.name() != ROOT_NAME:
                    raise ValueError(f"{s.name()} reaches root {node.name()}, not {ROOT_NAME}")
                break
            node = up

    class_set = set(classes)
    internal = sorted((s for s in parent_of if s not in class_set), key=lambda s: (depth(s), _wnid(s)))
    order = classes + internal
    index = {s: i for i, s in enumerate(order)}
    parents = [-1 if parent_of[s] is None else index[parent_of[s]] for s in order]
    depths = []
    for s in order:  # depth in the merged tree = length of the chosen chain
        d, node = 0, s
        while parent_of[node] is not None:
            node, d = parent_of[node], d + 1
        if d != depth(s):
            raise AssertionError(f"chosen chain of {s.name()} is not a longest one")
        depths.append(d)

    children_count = [0] * len(order)
    for p in parents:
        if p >= 0:
            children_count[p] += 1
    class_with_children = [order[i].name() for i in range(len(classes)) if children_count[i]]
    max_depth = max(depths)
    per_level_classes = [
        len({_ancestor_at(i, level, parents, depths) for i in range(len(classes))}) for level in range(max_depth + 1)
    ]
    return {
        "description": (
            "WordNet 3.0 hierarchy of the 1,000 ImageNet-1k (ILSVRC 2012) classes. Nodes 0-999 "
            "are the classes in ImageNet label order, the rest their hypernyms sorted by "
            "(depth, wnid). parents[i] is the parent node of node i (-1 for entity.n.01), "
            "depth[i] its number of edges below the root."
        ),
        "source": "Princeton WordNet 3.0; class wnids from tensorflow_datasets imagenet2012/labels.txt",
        "path_rule": (
            "each synset's parent is its hypernym (hypernyms + instance hypernyms) with the "
            "longest chain to entity.n.01, ties to the smaller WordNet offset"
        ),
        "generator": "scripts/build_imagenet_hierarchy.py",
        "num_classes": len(classes),
        "num_nodes": len(order),
        "wnids": [_wnid(s) for s in order],
        "names": [s.name() for s in order],
        "parents": parents,
        "depth": depths,
        "stats": {
            "max_depth": max_depth,
            "num_internal_nodes": sum(1 for c in children_count if c > 0),
            "classes_with_children": class_with_children,
            "class_depth_min": min(depths[: len(classes)]),
            "class_depth_max": max(depths[: len(classes)]),
            "nodes_per_level": [depths.count(d) for d in range(max_depth + 1)],
            "level_classes": per_level_classes,
        },
    }


def _ancestor_at(node: int, level: int, parents: list[int], depths: list[int]) -> int:
    """Ancestor of ``node`` at ``level``; a node shallower than ``level`` stands for itself."""
    while depths[node] > level:
        node = parents[node]
    return node


def dumps(hierarchy: dict) -> str:
    """Serialise deterministically: one top-level key per line, compact lists."""
    lines = [json.dumps(k) + ": " + json.dumps(v, separators=(",", ":")) for k, v in hierarchy.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def generate(wordnet_dir: Path = WORDNET_DIR, labels: Path | None = None, work_dir: Path | None = None) -> dict:
    """Copy WordNet into a private folder, open it, and build the hierarchy dict."""
    wnids = read_wnids(labels or imagenet_labels_path())
    if work_dir is not None:
        return build_hierarchy(open_wordnet(prepare_wordnet_dir(wordnet_dir, work_dir)), wnids)
    with tempfile.TemporaryDirectory(prefix="wordnet30-") as tmp:
        return build_hierarchy(open_wordnet(prepare_wordnet_dir(wordnet_dir, Path(tmp))), wnids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--wordnet-dir", type=Path, default=WORDNET_DIR, help="WordNet 3.0 database files (default: %(default)s)"
    )
    parser.add_argument(
        "--labels",
        type=Path,
        default=None,
        help="file of 1000 wnids in label order (default: from tensorflow_datasets)",
    )
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="folder to copy WordNet into (default: a temporary directory)"
    )
    parser.add_argument("--output", type=Path, default=ASSET_PATH, help="default: %(default)s")
    parser.add_argument(
        "--check", action="store_true", help="compare with --output instead of writing it; exit 1 on a difference"
    )
    args = parser.parse_args(argv)
    text = dumps(generate(args.wordnet_dir, args.labels, args.work_dir))
    if args.check:
        same = args.output.is_file() and args.output.read_text() == text
        print(f"{args.output}: {'up to date' if same else 'DIFFERS from WordNet 3.0'}")
        return 0 if same else 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
