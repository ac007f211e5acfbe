"""EMBER_PROFILE=1: a table of wall time per primitive and output shape,
printed to stderr at exit; nothing without it."""
import pytest

from conftest import ember_only, run_python

pytestmark = ember_only  # an Ember environment variable

SCRIPT = """
import ember.core as mx
a = mx.ones((2, 3))
for _ in range(3):
    mx.eval(mx.exp(a + 1.0))
mx.eval(mx.ones((4, 5)) @ mx.ones((5, 6)))
print("done")
"""


@pytest.fixture(autouse=True)
def _no_inherited_profile(monkeypatch):
    monkeypatch.delenv("EMBER_PROFILE", raising=False)  # the child sees only what a test sets


def run(value):
    r = run_python(SCRIPT, env=None if value is None else {"EMBER_PROFILE": value}, timeout=120)
    assert r.stdout.strip() == "done"  # the table goes to stderr only
    return r.stderr


def test_profile_table():
    err = run("1")
    lines = err.splitlines()
    head = [i for i, l in enumerate(lines) if l.startswith("EMBER_PROFILE:")]
    assert len(head) == 1, err
    rows = {}
    for l in lines[head[0] + 2:]:
        ms, pct, calls, us, name = l.split(None, 4)
        rows[name] = (float(ms), float(pct), int(calls), float(us))
    # each node kind with its output shape, and its call count
    assert rows["Exp (2,3)"][2] == 3, rows
    assert rows["Add (2,3)"][2] == 3, rows
    assert rows["Matmul (4,6)"][2] == 1, rows
    assert all(v[0] >= 0 and v[3] >= 0 for v in rows.values())
    assert abs(sum(v[1] for v in rows.values()) - 100) < 1, rows
    # slowest first
    times = [v[0] for v in rows.values()]
    assert times == sorted(times, reverse=True)


def test_no_profile_without_the_variable():
    assert "EMBER_PROFILE" not in run(None)
    assert "EMBER_PROFILE" not in run("0")


def test_profile_with_input_shapes():
    err = run("2")
    assert "Add (2,3) <- (2,3) ()" in err, err
    assert "Matmul (4,6) <- (4,5) (5,6)" in err, err
