"""Rebuild `data/code_words.txt`, the lexicon the injection judge's off-topic check reads (`code_lexicon`).

    python -m tests.benchmarks.build_code_lexicon           # compare with the shipped file, print what changes
    python -m tests.benchmarks.build_code_lexicon --write   # rebuild it byte for byte (Python 3.11's standard library)

Two corpora no evaluation uses: the running interpreter's standard library (words of its comments, docstrings and
identifiers, in at least three modules) and the names in the Python files of the sdists below (a word in at least
`MIN_PACKAGES` of them). The sdists are fetched once with pip into ASSAY_TRAIN_DIR (default ~/.assay/train) and
read from their archives. None of them is an evaluation corpus (SWE-QA's and SWE-bench's projects, the semble
repositories, the question sets' packages, the judge suite's hosts); the AI libraries, the sdists in other languages
and the rank-training packages are the ones the learned phrasing model and the learned order already train on.
"""

from __future__ import annotations

import argparse
import sysconfig
import tarfile
from pathlib import Path

from assay.stages.evaluate.sdists import fetch_sdist
from assay.stages.index.code_lexicon import PATH, build, combine, identifier_words
from tests.benchmarks.bench_injection_learned import AI_TRAIN, FOREIGN_TRAIN
from tests.benchmarks.train_learned_rank import train_home

# widely used libraries of many domains (data, science, web, tooling, parsing, async, cloud)
GENERAL = (
    "aiohttp==3.14.5", "attrs==26.1.0", "babel==2.19.0", "beautifulsoup4==4.15.0", "black==26.10.1", "boto3==1.44.18",
    "botocore==1.44.18", "cachetools==8.0.3", "celery==5.7.0", "colorama==0.4.6", "coverage==7.18.0",
    "dask==2026.11.0", "docopt==0.6.2", "docutils==0.23.1", "fire==0.7.1", "gunicorn==27.0.1",
    "hypothesis==6.170.27", "ipython==9.19.1", "isort==9.0.2", "jsonpickle==4.1.4", "kombu==5.7.0",
    "more_itertools==11.2.1", "msgpack==1.2.4", "mypy==2.4.1", "networkx==3.6.1", "nltk==3.10.4", "numpy==2.5.5",
    "packaging==26.4", "pandas==3.1.1", "prompt_toolkit==3.0.53", "pycodestyle==2.15.0", "pyflakes==4.1.0",
    "pygments==2.21.0", "pymongo==4.20.1", "python_dateutil==4.0.0", "pytz==2026.6", "pyyaml==6.0.4",
    "redis==8.2.0", "scrapy==2.19.0", "simplejson==4.3.0", "sortedcontainers==2.4.0", "sqlalchemy==2.1.9",
    "statsmodels==0.15.0", "tenacity==9.2.1", "toolz==1.2.0", "tox==4.67.17", "tqdm==4.70.1", "twisted==26.10.0",
    "typer==0.29.2", "virtualenv==21.15.14")
# the learned order's twelve training packages (`rank_training/`)
RANK_TRAIN = ("apscheduler==3.11.3", "bleach==6.4.0", "boltons==26.2.0", "cliff==4.17.0", "dramatiq==2.2.1",
              "geopy==2.5.0", "invoke==3.0.3", "loguru==0.7.3", "mistune==3.4.0", "sqlparse==0.6.1",
              "structlog==26.1.0", "waitress==3.0.2")
SDISTS = GENERAL + AI_TRAIN + FOREIGN_TRAIN + RANK_TRAIN


def package_words(archive: Path) -> set[str]:
    """The identifier words of every Python file in an sdist, read from the archive."""
    words: set[str] = set()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".py"):
                words |= identifier_words(tar.extractfile(member).read().decode("utf-8", "replace"))
    return words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"save the lexicon as {PATH}")
    args = parser.parse_args()
    downloads = train_home() / "downloads"
    packages = [package_words(fetch_sdist(requirement, downloads)) for requirement in SDISTS]
    words = combine(build(Path(sysconfig.get_paths()["stdlib"])), packages)
    text = "\n".join(words) + "\n"
    shipped = set(PATH.read_text().split()) if PATH.exists() else set()
    added, removed = sorted(set(words) - shipped), sorted(shipped - set(words))
    print(f"{len(words)} words from the standard library and {len(packages)} sdists; against the shipped file "
          f"{len(added)} more, {len(removed)} fewer; identical: {PATH.exists() and PATH.read_text() == text}")
    if args.write:
        PATH.write_text(text)
        print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
