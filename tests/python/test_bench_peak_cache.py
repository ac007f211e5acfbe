"""benchmarks/machine.py's cache of machine measurements and fma_peak.py's
merge: a fresh peak measurement keeps, per width and thread count, the best
of it and the cached figure, so that a measurement taken during a VM's slow
spell does not lower the "% of peak" of later runs (it had cached 352
GFLOP/s on a machine that reaches 487, and bench_conv printed 123%)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import fma_peak  # noqa: E402
import machine  # noqa: E402


def fake(values, other=0.0):
    return {"cpu": "test", "cpus": 2, "gflops": values, "other_cores": other}


def test_best_of_keeps_the_higher_figure_per_entry():
    old = fake({"512": {"1": 245.0, "2": 352.0}, "256": {"1": 126.0}})
    new = fake({"512": {"1": 176.0, "2": 487.0}, "128": {"1": 43.0}})
    got = fma_peak._best_of(old, new)
    assert got["gflops"] == {"512": {"1": 245.0, "2": 487.0}, "256": {"1": 126.0}, "128": {"1": 43.0}}
    assert old["gflops"]["512"]["2"] == 352.0 and new["gflops"]["512"]["1"] == 176.0  # inputs untouched


def test_cached_measurement_merges_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    runs = iter([fake({"512": {"2": 352.0}}), fake({"512": {"2": 300.0}}), fake({"512": {"2": 490.0}}, other=1.0)])
    measure = lambda: next(runs)  # noqa: E731
    first = machine.cached_measurement("peak_test", measure, refresh=True, merge=fma_peak._best_of)
    assert first["gflops"]["512"]["2"] == 352.0 and first["cached"]
    # a slower spell: the cache keeps the better figure
    second = machine.cached_measurement("peak_test", measure, refresh=True, merge=fma_peak._best_of)
    assert second["gflops"]["512"]["2"] == 352.0
    # measured beside other work: returned merged, not cached
    third = machine.cached_measurement("peak_test", measure, refresh=True, merge=fma_peak._best_of)
    assert third["gflops"]["512"]["2"] == 490.0 and third["cached"] is None
    cached = machine.cached_measurement("peak_test", measure, refresh=False)
    assert cached["gflops"]["512"]["2"] == 352.0
    # without merge a refresh replaces the figure
    runs = iter([fake({"512": {"2": 100.0}})])
    assert machine.cached_measurement("peak_test", lambda: next(runs), refresh=True)["gflops"]["512"]["2"] == 100.0
