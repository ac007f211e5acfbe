"""The documents stand on their own: every file or folder a Markdown file of
the repository names in backticks exists in the repository, and none points
outside it (``../elsewhere``, absolute paths)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# where a document's relative paths may start (CODEMAP names engine files
# relative to csrc/ember, kernels relative to backend/cpu, ...)
BASES = ["", "csrc/ember", "csrc", "python", "python/src", "python/ember", "tests", "tests/python",
         "csrc/ember/backend/cpu"]

# named on purpose before they exist (none today)
PLANNED = set()

_TOKEN = re.compile(r"`([^`\s]+)`")
_FILE = re.compile(r"\.(md|py|tsv|cpp|h|inc|txt|toml|sh)$")


def _documents():
    try:
        out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
    found = {ROOT / f for f in out} | set(ROOT.glob("*.md")) | set(ROOT.glob("docs/**/*.md"))
    return sorted(p for p in found if p.is_file())


def _paths(text):
    """Backticked tokens that name a file (by extension) or a folder."""
    for m in _TOKEN.finditer(text):
        t = m.group(1).rstrip(".,;:")
        if "/" not in t or t.startswith(("-", "~", "$")) or any(c in t for c in "*<>{}|()=:"):
            continue
        if _FILE.search(t) or t.endswith("/"):
            yield t


def _exists(doc, token):
    token = token.split("/.")[0]  # `ops/conv.h/.cpp` names ops/conv.h and ops/conv.cpp
    if token.startswith("/") or ".." in Path(token).parts:
        return False
    return any((ROOT / b / token).exists() for b in BASES) or (doc.parent / token).exists()


DOCS = _documents()


def test_documents_found():
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    assert {"README.md", "CONTRIBUTING.md", "docs/CODEMAP.md", "docs/ARCHITECTURE.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=[p.relative_to(ROOT).as_posix() for p in DOCS])
def test_named_paths_exist(doc):
    missing = [t for t in _paths(doc.read_text()) if t not in PLANNED and not _exists(doc, t)]
    assert not missing, f"{doc.name} names paths that are not in the repository: {missing}"


def test_checker_flags_outside_paths():
    doc = ROOT / "README.md"
    text = "see `../shared/DESIGN.md`, `/work/x/y.md` and `docs/CODEMAP.md`"
    bad = [t for t in _paths(text) if not _exists(doc, t)]
    assert bad == ["../shared/DESIGN.md", "/work/x/y.md"]
