"""Regenerate the ImageNet-1k WordNet hierarchy from WordNet 3.0 and compare it to the
committed package data ``gensim_jax/assets/imagenet1k_hierarchy.json`` exactly.

Needs the WordNet 3.0 database of Debian's ``wordnet-base`` package in
``/usr/share/wordnet`` (CI installs it); skipped, with that reason, when it is absent.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORDNET_DIR = Path("/usr/share/wordnet")

pytestmark = pytest.mark.skipif(
    not (WORDNET_DIR / "data.noun").is_file(),
    reason="WordNet 3.0 database absent (/usr/share/wordnet; apt-get install wordnet-base)",
)


def _load_script():
    path = REPO / "scripts" / "build_imagenet_hierarchy.py"
    spec = importlib.util.spec_from_file_location("build_imagenet_hierarchy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    script = _load_script()
    folder = script.prepare_wordnet_dir(WORDNET_DIR, tmp_path_factory.mktemp("wordnet30"))
    wordnet = script.open_wordnet(folder)
    wnids = script.read_wnids(script.imagenet_labels_path())
    return script, script.build_hierarchy(wordnet, wnids), wordnet


@pytest.mark.slow
def test_committed_json_equals_regenerated(regenerated):
    script, hierarchy, _ = regenerated
    committed = (REPO / "gensim_jax" / "assets" / "imagenet1k_hierarchy.json").read_text()
    assert json.loads(committed) == hierarchy
    assert committed == script.dumps(hierarchy)


@pytest.mark.slow
def test_regenerated_paths_are_longest_hypernym_paths(regenerated):
    """Independent check of the path rule with NLTK's own ``hypernym_paths``."""
    _, hierarchy, wn = regenerated
    parents, wnids = hierarchy["parents"], hierarchy["wnids"]
    for i in range(0, hierarchy["num_classes"], 37):
        synset = wn.synset_from_pos_and_offset("n", int(wnids[i][1:]))
        chain, node = [], i
        while node >= 0:
            chain.append(wnids[node])
            node = parents[node]
        chain = chain[::-1]
        paths = [[f"n{s.offset():08d}" for s in p] for p in synset.hypernym_paths()]
        assert chain in paths
        assert len(chain) == max(len(p) for p in paths)
        assert chain[0] == "n00001740"  # entity.n.01


def test_lexnames_match_the_database(regenerated):
    """The hand-written lexnames agree with the lexicographer file of known synsets."""
    script, _, wn = regenerated
    assert len(script.LEXNAMES) == 45
    for wnid, lexname in [
        ("n01440764", "noun.animal"),
        ("n03888257", "noun.artifact"),
        ("n07565083", "noun.food"),
        ("n09428293", "noun.object"),
        ("n11939491", "noun.plant"),
        ("n09835506", "noun.person"),
    ]:
        assert wn.synset_from_pos_and_offset("n", int(wnid[1:])).lexname() == lexname
    assert wn.synset("run.v.01").lexname() == "verb.motion"
    assert wn.synset("quickly.r.01").lexname() == "adv.all"
