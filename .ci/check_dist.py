"""Check the sdist and the wheel that ``make dist`` built: both of this version, every module of the
package and every file of pyproject.toml's package-data inside each.

Usage: python .ci/check_dist.py DIST_DIR

``twine check --strict`` (run by ``make dist`` before this) checks the metadata and that the README renders
on PyPI; this checks the contents: a data file missing from ``[tool.setuptools.package-data]`` would
install a package that fails at run time (the ImageNet hierarchy, the human error rates), not at build.
Prints one line per archive; exits 1 naming what is missing.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    sys.exit("check_dist.py needs Python >= 3.11 (tomllib)")

ROOT = Path(__file__).resolve().parents[1]


def expected_files() -> list[str]:
    """Paths, relative to the checkout, that the wheel must hold: the package's modules and its package data."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    files = set()
    for package, patterns in project["tool"]["setuptools"]["package-data"].items():
        base = ROOT / package.replace(".", "/")
        for pattern in patterns:
            matched = [p for p in base.glob(pattern) if p.is_file()]
            if not matched:
                sys.exit(f"check_dist: package-data {package}: {pattern!r} matches no file in the checkout")
            files.update(str(p.relative_to(ROOT)) for p in matched)
    files.update(str(p.relative_to(ROOT)) for p in (ROOT / "gensim_jax").rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(files)


def main(dist: Path) -> int:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    wheels = sorted(dist.glob("gensim_jax-*.whl"))
    sdists = sorted(dist.glob("gensim_jax-*.tar.gz"))
    if [w.name for w in wheels] != [f"gensim_jax-{version}-py3-none-any.whl"] or [s.name for s in sdists] != [
        f"gensim_jax-{version}.tar.gz"
    ]:
        print(f"check_dist: expected one wheel and one sdist of {version} in {dist}, found", [*wheels, *sdists])
        return 1
    with zipfile.ZipFile(wheels[0]) as z:
        in_wheel = set(z.namelist())
    with tarfile.open(sdists[0]) as t:
        prefix = f"gensim_jax-{version}/"
        in_sdist = {m.name.removeprefix(prefix) for m in t.getmembers() if m.isfile()}
    want = expected_files()
    status = 0
    for name, contents in ((wheels[0].name, in_wheel), (sdists[0].name, in_sdist)):
        missing = [f for f in want if f not in contents]
        data = [f for f in want if not f.endswith(".py")]
        if missing:
            print(f"check_dist: {name} lacks {len(missing)} file(s): {', '.join(missing[:20])}")
            status = 1
        else:
            print(f"check_dist: {name}: {len(want) - len(data)} modules and {len(data)} package-data files present")
    return status


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(Path(sys.argv[1])))
