"""The API list (docs/api/mlx_api.tsv) against the importable package.

Areas that Ember provides in full are listed in ``COMPLETE``; each must keep
every name of the list, with MLX's parameter names, so a finished area
cannot lose a function or rename an argument.  When another area becomes
complete, ``test_complete_areas_are_listed`` fails until it is added here.
The coverage logic is ``tools/api_coverage.py`` (also a command-line report).
"""

import importlib.util
from pathlib import Path

import pytest

from conftest import ember_only

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "api_coverage", ROOT / "tools" / "api_coverage.py")
api_coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_coverage)

# areas of docs/api/mlx_api.tsv that are fully present (core ops, the
# engine's array/dtype/device API, transforms, linalg with fft, random,
# optimizers, nn, io, quantization, distributed)
COMPLETE = ["engine", "ops", "transforms", "linalg", "random", "optimizers", "nn", "io", "quantization",
            "distributed", "compile"]

ENTRIES = api_coverage.read_list()

pytestmark = ember_only  # checks the ember package itself


def _report(areas=None):
    import ember
    return api_coverage.coverage(ember, ENTRIES, areas)


def test_list_is_well_formed():
    names = [e.name for e in ENTRIES]
    assert len(names) == len(set(names)), "a name is listed twice"
    areas = {e.area for e in ENTRIES}
    assert set(COMPLETE) <= areas
    assert all(e.kind for e in ENTRIES), "an entry without a kind"
    # the fft submodule is part of the linalg area
    assert any(e.name == "core.fft.rfft" and e.area == "linalg" for e in ENTRIES)


@pytest.mark.parametrize("area", COMPLETE)
def test_complete_area_has_every_name(area):
    rep = _report([area])[area]
    assert rep.total > 0
    assert not rep.missing, f"{area}: missing {rep.missing}"
    assert not rep.signature, "\n".join(
        f"{name}: MLX's parameters {want}, Ember's {have}"
        for name, want, have in rep.signature)


def test_complete_areas_are_listed():
    done = sorted(a for a, r in _report().items() if r.complete)
    assert done == sorted(COMPLETE), (
        f"complete areas are {done}: list every complete area in COMPLETE")


def test_missing_name_is_reported(tmp_path):
    """The checker itself: an absent name and a renamed parameter are
    reported, a matching entry is not."""
    lst = tmp_path / "api.tsv"
    lst.write_text(
        "# name\tarea\tkind\tsignature\n"
        "core.add\tx\tfunction\t(a, b, stream=None)\n"
        "core.no_such_function\tx\tfunction\t(a)\n"
        "core.take\ty\tfunction\t(a, /, indices, not_an_argument=None)\n")
    import ember
    rep = api_coverage.coverage(ember, api_coverage.read_list(lst))
    assert rep["x"].missing == ["core.no_such_function"]
    assert not rep["x"].signature and rep["x"].present == 1
    assert [s[0] for s in rep["y"].signature] == ["core.take"]
    assert api_coverage.parameters("(...)") is None
    assert api_coverage.parameters("(a: array, /, *, stream: S = None) -> array") == ["a", "stream"]
