"""The comparison logic of tools/mlx_diff.py, on fabricated result files.

The differential run itself needs MLX and is optional (see the tool's
docstring and CONTRIBUTING.md); this checks, without MLX and without running
any backend, that the comparison reports a dtype, a shape, a value beyond
tolerance, an exception-type and a raises-on-one-side difference, a crash on
one side and a case run on one side only, and that equal results (values
within tolerance, the same exception type with another message, NaNs in the
same places) are not reported; and that docs/mlx-differences.md's marker
lines make a difference deliberate.
"""

import importlib.util
import pickle
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("mlx_diff", ROOT / "tools" / "mlx_diff.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


md = _load()


def _arr(values, dtype="float32", np_dtype=None):
    a = np.asarray(values, dtype=np_dtype or dtype)
    return ("array", dtype, a.shape, a)


def _ok(key, *leaves, struct="a", meta=None, ref=None):
    rec = {"key": key, "status": "ok", "value": (struct, list(leaves)), "digest": 1,
           "meta": meta or {}}
    if ref is not None:
        rec["ref"] = ref
    return rec


def _raise(key, exc, msg="message"):
    return {"key": key, "status": "raise", "exc": (exc, msg), "digest": 1, "meta": {}}


def _key(op, kind="forward", dtype="float32", desc="shape=(3,)"):
    return (kind, op, dtype if kind != "error" else "", desc, 0)


def _write(path, records):
    with open(path, "wb") as f:
        for r in records:
            pickle.dump(r, f)
    return str(path)


def _run(tmp_path, ember, mlx, deliberate=()):
    e = md.read_records(_write(tmp_path / "ember.pkl", ember))
    m = md.read_records(_write(tmp_path / "mlx.pkl", mlx))
    diffs, stats = md.compare(e, m, deliberate)
    return {d["id"]: d for d in diffs}, stats


def _classes(d):
    return [c for c, _ in d["classes"]]


def test_each_kind_of_difference_is_reported(tmp_path):
    k_dtype, k_shape, k_value = _key("a"), _key("b"), _key("c")
    k_exc, k_raise, k_crash = _key("d", "error", desc="#0 bad"), _key("e"), _key("f")
    k_only = _key("g")
    ember = [
        _ok(k_dtype, _arr([1, 2], "float32")),
        _ok(k_shape, _arr([1, 2])),
        _ok(k_value, _arr([1.0, 2.0]), ref=[_arr([1.0, 2.0], "float64")]),
        _raise(k_exc, "IndexError"),
        _raise(k_raise, "ValueError"),
        _ok(k_crash, _arr([1.0])),
        _ok(k_only, _arr([1.0])),
    ]
    mlx = [
        _ok(k_dtype, _arr([1, 2], "int32")),
        _ok(k_shape, _arr([[1, 2]])),
        _ok(k_value, _arr([1.0, 2.01])),
        _raise(k_exc, "ValueError"),
        _ok(k_raise, _arr([0.0])),
        {"key": k_crash, "status": "crash", "info": "signal SIGSEGV", "digest": None,
         "meta": {}},
    ]
    e = md.read_records(_write(tmp_path / "ember.pkl", ember))
    m = md.read_records(_write(tmp_path / "mlx.pkl", mlx))
    md._fix_digests(e, m)
    diffs, stats = md.compare(e, m)
    by = {d["key"][1]: d for d in diffs}
    assert "dtype" in _classes(by["a"])
    assert _classes(by["b"]) == ["shape"]
    assert _classes(by["c"]) == ["value"]
    assert "Ember matches NumPy, MLX differs from NumPy" in by["c"]["classes"][0][1]
    assert _classes(by["d"]) == ["exception type"]
    assert "IndexError" in by["d"]["classes"][0][1]
    assert _classes(by["e"]) == ["only Ember raises"]
    assert _classes(by["f"]) == ["crash"]
    assert _classes(by["g"]) == ["missing"]
    assert all(d["status"] == "left" for d in diffs)
    assert stats["forward"]["differences"] == 6 and stats["error"]["differences"] == 1
    text = md.report(diffs, stats)
    assert "| total" in text and "## dtype" in text and "forward a[float32]" in text


def test_equal_results_are_not_reported(tmp_path):
    keys = [_key(op) for op in "abcdefg"]
    ember = [
        _ok(keys[0], _arr([1.0, np.nan, np.inf])),
        _ok(keys[1], _arr([1.0, 2.0])),
        _raise(keys[2], "ValueError", "Ember's words"),
        _ok(keys[3], _arr([3, 4], "int64"), _arr([True], "bool"), struct="list(a,a)"),
        _ok(keys[4], _arr([1 + 2j], "complex64")),
        _ok(keys[5], ("py", "True"), struct="py"),
        _ok(keys[6], _arr([0.5], "bfloat16", np.float32), meta={"transcendental": True}),
    ]
    mlx = [
        _ok(keys[0], _arr([1.0, np.nan, np.inf])),
        _ok(keys[1], _arr([1.0, 2.0 + 1e-6])),          # within 2 x float32 tolerance
        _raise(keys[2], "ValueError", "MLX's words"),  # messages are not compared
        _ok(keys[3], _arr([3, 4], "int64"), _arr([True], "bool"), struct="list(a,a)"),
        _ok(keys[4], _arr([1 + 2j + 1e-7], "complex64")),
        _ok(keys[5], ("py", "True"), struct="py"),
        _ok(keys[6], _arr([0.5 + 1e-3], "bfloat16", np.float32)),
    ]
    diffs, stats = _run(tmp_path, ember, mlx)
    assert diffs == {}
    assert stats["forward"]["cases"] == 7 and stats["forward"]["ops"] == 7


def test_tolerance_is_per_dtype_and_integers_are_exact(tmp_path):
    k16, k32, kint = _key("h16", dtype="float16"), _key("h32"), _key("i", dtype="int32")
    ember = [_ok(k16, _arr([1.0], "float16")), _ok(k32, _arr([1.0])),
             _ok(kint, _arr([7], "int32"))]
    mlx = [_ok(k16, _arr([1.001], "float16")), _ok(k32, _arr([1.001])),
           _ok(kint, _arr([8], "int32"))]
    diffs, _ = _run(tmp_path, ember, mlx)
    assert sorted(d["key"][1] for d in diffs.values()) == ["h32", "i"]


def test_structure_and_skips(tmp_path):
    k_struct, k_skip = _key("s"), _key("k")
    ember = [_ok(k_struct, _arr([1.0]), _arr([2.0]), struct="list(a,a)"),
             {"key": k_skip, "status": "skip", "info": "hangs", "digest": 1, "meta": {}}]
    mlx = [_ok(k_struct, _arr([1.0]), _arr([2.0]), struct="tuple(a,a)"),
           _ok(k_skip, _arr([1.0]))]
    diffs, stats = _run(tmp_path, ember, mlx)
    assert [_classes(d) for d in diffs.values()] == [["structure"]]
    assert stats["forward"]["not compared"] == 1


def test_input_mismatch_is_a_harness_difference(tmp_path):
    k = _key("x")
    e = _ok(k, _arr([1.0]))
    m = dict(_ok(k, _arr([1.0])), digest=2)
    diffs, _ = _run(tmp_path, [e], [m])
    assert [_classes(d) for d in diffs.values()] == [["input mismatch"]]


def test_deliberate_markers(tmp_path):
    doc = tmp_path / "mlx-differences.md"
    doc.write_text(
        "# Deliberate differences\n\nSome prose with `code` in it.\n\n"
        "- `take`: MLX reads out of bounds\n"
        "- `power` `[int32]`: MLX returns 0 for 1 ** -1\n"
        "* `softmax` `#2`: MLX raises IndexError\n")
    entries = md.parse_deliberate(str(doc))
    assert entries == [("take", None, "MLX reads out of bounds"),
                       ("power", "[int32]", "MLX returns 0 for 1 ** -1"),
                       ("softmax", "#2", "MLX raises IndexError")]
    keys = [_key("take", "error", desc="#0 oob"), _key("power", dtype="int32"),
            _key("power", dtype="int64"), _key("softmax", "error", desc="#2 0-d"),
            _key("softmax", "error", desc="#3 other")]
    ember = [_raise(k, "IndexError") for k in keys]
    mlx = [_raise(k, "ValueError") for k in keys]
    diffs, stats = _run(tmp_path, ember, mlx, entries)
    status = {d["id"]: d["status"] for d in diffs.values()}
    assert status == {
        "error take '#0 oob'": "deliberate",
        "forward power[int32] 'shape=(3,)'": "deliberate",
        "forward power[int64] 'shape=(3,)'": "left",
        "error softmax '#2 0-d'": "deliberate",
        "error softmax '#3 other'": "left",
    }
    assert stats["error"]["deliberate"] == 2 and stats["error"]["left"] == 1


def test_table_marked_cases(tmp_path):
    k = _key("take", "error", desc="#2 oob")
    e = dict(_raise(k, "IndexError"), meta={"table_ember_only": True})
    m = _ok(k, _arr([0.0]))
    diffs, stats = _run(tmp_path, [e], [m])
    (d,) = diffs.values()
    assert d["status"] == "table-marked" and stats["error"]["table-marked"] == 1


def test_probes_are_well_formed():
    """Every probe has a name naming what it probes, a description unique
    for that name, and callables (nothing runs here)."""
    spec = importlib.util.spec_from_file_location(
        "mlx_diff_probes", ROOT / "tools" / "mlx_diff_probes.py")
    probes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probes)
    seen = set()
    for name, desc, fn, ref in probes.PROBES:
        assert name.startswith("probe:") and desc and callable(fn), name
        assert ref is None or callable(ref), name
        assert (name, desc) not in seen, (name, desc)
        seen.add((name, desc))
    assert len(seen) > 100


def test_blocks_after_a_failed_suite_function_are_not_compared(tmp_path):
    fun = ("error", "test_x.test_errors", "", "[0] function", 0)
    blk = ("error", "test_x.test_errors", "", "[0] block 3", 0)
    ember = [_ok(fun, ("py", "None"), struct="py"), _raise(blk, "ValueError")]
    mlx = [_raise(fun, "AssertionError")]
    diffs, stats = _run(tmp_path, ember, mlx)
    assert [_classes(d) for d in diffs.values()] == [["only MLX raises"]]
    assert stats["error"]["not compared"] == 1


def test_prose_entries_with_markers_and_pinning_tests(tmp_path):
    doc = tmp_path / "mlx-differences.md"
    doc.write_text(
        "- **Integers carry no derivative** (`test_t.py::test_ints`): prose. "
        "<!-- mlx-diff: `grad` `integer input` --> <!-- mlx-diff: `cumprod` `jvp ` -->\n"
        "- **Another** (`test_bare`): more prose.\n")
    entries = md.parse_deliberate(str(doc))
    names = [(n, f) for n, f, _ in entries]
    assert names == [("grad", "integer input"), ("cumprod", "jvp "), ("test_t.test_ints", None),
                     ("*.test_bare", None)]
    assert all(r.startswith("Integers carry no derivative") for n, f, r in entries[:3])
    keys = {"probe": ("probe", "probe:grad", "", "integer input", 0),
            "jvp": ("jvp", "cumprod", "float64", "shape=(3,)", 0),
            "vjp": ("vjp", "cumprod", "float64", "shape=(3,)", 0),
            "pinned": ("error", "test_t.test_ints", "", "[0] block 0", 0),
            "bare": ("error", "test_u.test_bare", "", " function", 0)}
    got = {k: md.deliberate_reason(v, entries) is not None for k, v in keys.items()}
    assert got == {"probe": True, "jvp": True, "vjp": False, "pinned": True, "bare": True}


def test_every_test_the_list_of_differences_names_exists():
    """Each deliberate difference is pinned by a test: a `file.py::test_x`
    (or a bare `test_x`) named in docs/mlx-differences.md must be defined
    in that file (any test file for a bare name), and each file it names
    must exist."""
    import re
    text = (ROOT / "docs" / "mlx-differences.md").read_text(encoding="utf-8")
    tests = ROOT / "tests" / "python"
    sources = {p.name: p.read_text(encoding="utf-8") for p in tests.glob("*.py")}
    missing = []
    for mod, name in re.findall(r"`(?:(\w+\.py)::)?(test_\w+)`", text):
        where = [sources.get(mod, "")] if mod else list(sources.values())
        if not any(re.search(rf"^def {name}\(", s, re.M) for s in where):
            missing.append(f"{mod}::{name}" if mod else name)
    for mod in set(re.findall(r"`(\w+\.py)(?:::|`)", text)):
        if mod not in sources and mod != "mlx_diff.py":
            missing.append(mod)
    assert not missing, f"docs/mlx-differences.md names tests that do not exist: {missing}"
