"""Rules of the suite itself: a test that does not hold on MLX says so with
the registered ``ember_only`` marker, so ``-m "not ember_only"`` selects
what runs against MLX (a ``skipif`` on the backend would hide it)."""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent

# skipif / skip conditions on the backend instead of the marker
_BACKEND_SKIP = re.compile(
    r"(mark\.skipif|pytest\.skip)\s*\(\s*(not\s+)?(IS_MLX|IS_EMBER|BACKEND)")


def test_no_backend_skipif():
    found = []
    for path in sorted(HERE.glob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if _BACKEND_SKIP.search(line):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert not found, "use @ember_only instead of:\n" + "\n".join(found)


def test_ember_only_is_registered(pytestconfig):
    markers = pytestconfig.getini("markers")
    assert any(m.startswith("ember_only:") for m in markers), markers
