#!/usr/bin/env python3
"""Differential test of Ember against MLX over the op, error and transform
tables of the test suite.

Optional: nothing in ``.ci/run`` or the test suite runs this or needs MLX.

    # both backends, the whole table; the report goes to stdout
    PYTHONPATH=python python tools/mlx_diff.py --mlx-python /path/to/mlx/python

    # a few ops (names or family:NAME, comma-separated), some kinds only
    PYTHONPATH=python python tools/mlx_diff.py --ops take,softmax,family:unary \\
        --kinds forward,error --json /tmp/diff.json

    # compare two existing result files again (no backend is run)
    python tools/mlx_diff.py --compare /tmp/mlx-diff/ember.pkl /tmp/mlx-diff/mlx.pkl

``--mlx-python`` is an interpreter with ``mlx`` (0.32) and NumPy installed
(default: ``$MLX_PYTHON``, else ``/work/peers/bin/python``); ``--ember-python``
one that imports ``ember`` (default: this interpreter, with ``python/`` put
on PYTHONPATH).  pytest and hypothesis, which the suite's table modules
import, are taken from this interpreter's site-packages when the MLX one
lacks them.

What runs
---------
Each backend runs in a process of its own (``--worker``), with
``EMBER_TEST_BACKEND`` set, importing ``tests/python/op_table.py`` (and its
family modules) exactly as the suite does.  Both build the samples the
Ember suite builds (the table's few ``IS_MLX`` sample exclusions are turned
off while it is imported, so both sides see the same inputs; an MLX crash on
one of them is reported as a crash):

* ``forward``: every row (``forward=False`` rows too) x every dtype of the
  row x every sample, contiguous inputs; the result's structure, dtypes,
  shapes and values, or the exception.  The Ember worker also evaluates the
  row's NumPy reference, so a value difference says which side agrees with
  NumPy.
* ``error``: every ``ErrorInput`` of every row: the exception type and
  message, or the value returned when nothing is raised.  Also the suite's
  other error checks (``--ops suite-errors``, or a test function's name): the
  test functions about errors (``_ERROR_WORDS`` in the name; each parameter
  of a parametrized one; none needing a fixture) run with ``raises`` and
  ``pytest.raises`` replaced by a recorder, each ``with`` block one case
  (``test_fft.test_errors '[0] block 3'``) and the function itself one more
  (an AssertionError there: the two sides part outside the blocks; the
  blocks a side never reached are not compared).  ``ember_only`` tests are
  not run on MLX (they pin deliberate differences, and MLX crashes on many).
* ``vjp`` / ``jvp``: up to three float64 samples of each differentiable row
  (``test_transforms_table.SKIP_GRAD`` left out) with seeded cotangents /
  tangents: the outputs and the derivatives.
* ``vmap``: the samples and ``(in_axes, out_axes)`` configurations of
  ``test_transforms_table.test_vmap`` (float32, one integer dtype, bool).
* ``probe``: the single calls of ``tools/mlx_diff_probes.py``, outside the
  table: the behaviours issue 14 lists (validation, construction, interop,
  complex64, transforms, eval and streams, random) and their neighbours.
  ``--ops probe`` runs only these (``--ops probe:take`` one name).

Results go, one pickled record per (kind, op, dtype, sample), to
``OUT/ember.pkl`` and ``OUT/mlx.pkl`` (default ``OUT=/tmp/mlx-diff``).  A
worker that crashes (MLX dies of SIGSEGV/SIGFPE on some inputs) or hangs
(``--case-timeout``) gets the case recorded as a crash / hang and is
restarted after it; a crash after other cases is first tried again at the
start of a fresh process, and a crash that does not come back there is
listed apart (memory an earlier case damaged), not as a difference.  MLX's empty-input reductions, which can spin for minutes,
are skipped on MLX (as the forward suite does) and reported as not compared;
under vmap and the derivatives they run (an MLX hang there is reported).

Comparison
----------
Cases are matched by (kind, op, dtype, sample description, occurrence).
Differences, by class: ``exception type`` (both raise, different types),
``only Ember raises``, ``only MLX raises``, ``crash`` / ``hang`` (on one side
only), ``structure`` (a list where the other returns an array, another
length), ``dtype``, ``shape``, ``value`` (beyond the dtype's tolerance of
``conftest.TOLERANCES`` -- ``TRANSCENDENTAL_TOLERANCES`` for transcendental
rows -- doubled, since both sides carry their own error; 100x for the
transforms in float64, whose rules may round differently), and
``input mismatch`` (the two workers drew different inputs: a harness
problem).  Messages of exceptions of the same type are not compared.

A difference is *deliberate* when ``docs/mlx-differences.md`` lists it, one
entry per line in the form::

    - `op`: reason                      (every case of the op)
    - `op` `case fragment`: reason      (cases whose id contains the fragment)

or, in an entry written as prose, markers (any number, invisible in the
rendered file)::

    - **Prose** ... <!-- mlx-diff: `op` `case fragment` --> <!-- mlx-diff: `op2` -->

and the test an entry names as pinning it (``test_x.py::test_y``, or a bare
``test_y``) makes that test's suite-error cases deliberate.  A probe is named
without its ``probe:`` prefix (``- `getitem` `boolean mask`: ...``).

The case id is what the report prints, e.g. ``forward take[int32] 'shape=(3,)'``
or ``error softmax #2 '0-d with axis'``.  Differences the table itself marks
Ember-only (``ErrorInput.ember_only``, ``OpInfo.mlx_wrong_dtypes``,
``mlx_f64_is_f32`` in float64) are counted as *table-marked*.  The summary
table gives, per kind: ops compared, cases compared, differences, deliberate,
table-marked, left.
"""

import argparse
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests", "python")
DEFAULT_OUT = "/tmp/mlx-diff"
DEFAULT_MLX_PYTHON = os.environ.get("MLX_PYTHON", "/work/peers/bin/python")
DIFFERENCES_MD = os.path.join(ROOT, "docs", "mlx-differences.md")
KINDS = ("forward", "error", "vjp", "jvp", "vmap", "probe")

# per-dtype tolerances (conftest.TOLERANCES / TRANSCENDENTAL_TOLERANCES);
# repeated here so the comparison needs neither conftest nor a backend
TOLERANCES = {
    "float64": (1e-12, 1e-12), "float32": (1e-6, 1e-6),
    "complex64": (1e-6, 1e-6), "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}
TRANSCENDENTAL = dict(TOLERANCES, float32=(2e-6, 1e-6),
                      complex64=(2e-6, 1e-6))


# ==========================================================================
# records
# ==========================================================================
# A record is a dict:
#   key     (kind, op, dtype, desc, occurrence)  -- dtype "" for errors
#   status  "ok" | "raise" | "crash" | "hang" | "skip"
#   value   for "ok": (structure string, [leaf, ...]); a leaf is
#           ("array", dtype name, shape, numpy array) or ("py", repr)
#   exc     for "raise": (exception type name, message)
#   info    free text for crash / hang / skip
#   digest  crc32 of the inputs (both sides must agree)
#   meta    {"transcendental", "mlx_f64_is_f32", "table_ember_only", "family",
#            "expected" (error rows: the table's exception names)}
#   ref     (Ember worker, forward rows with a reference): the reference's
#           leaves, as in "value"


def case_id(key):
    kind, op, dtype, desc, occ = key
    where = f"{op}[{dtype}]" if dtype else op
    extra = f" ({occ + 1})" if occ else ""
    return f"{kind} {where} {desc!r}{extra}"


def read_records(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, "rb") as f:
        while True:
            try:
                rec = pickle.load(f)
            except EOFError:
                break
            except (pickle.UnpicklingError, ValueError):  # truncated by a crash
                break
            out[tuple(rec["key"])] = rec
    return out


# ==========================================================================
# comparison (NumPy only: no backend needed)
# ==========================================================================

def parse_deliberate(path=DIFFERENCES_MD):
    """[(op, fragment or None, reason)] from the marker lines of
    docs/mlx-differences.md (``- `op`: reason`` or
    ``- `op` `fragment`: reason``)."""
    if not path or not os.path.exists(path):
        return []
    pat = re.compile(r"^\s*[-*]\s+`([^`]+)`(?:\s+`([^`]+)`)?\s*:\s*(.+?)\s*$")
    marker = re.compile(r"<!--\s*mlx-diff:(.*?)-->")
    ticked = re.compile(r"`([^`]+)`")
    pinned = re.compile(r"`(?:(\w+)\.py::)?(test_\w+)`")
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = marker.sub("", line).strip().lstrip("-* ").strip()
            reason = re.sub(r"[*`]", "", text)[:160]
            m = pat.match(line)
            if m:
                out.append((m.group(1), m.group(2), marker.sub("", m.group(3)).strip()))
            for mk in marker.findall(line):      # <!-- mlx-diff: `op` `fragment` -->
                parts = ticked.findall(mk)
                if parts:
                    out.append((parts[0], parts[1] if len(parts) > 1 else None, reason))
            if line.lstrip().startswith(("-", "*")):
                for mod, test in pinned.findall(line):   # the test that pins it
                    out.append((f"{mod}.{test}" if mod else f"*.{test}", None, reason))
    return out


def deliberate_reason(key, entries):
    """The reason of the first entry naming this case: the op (a probe's
    name without ``probe:``; ``*.test_x`` any module's test_x) and, when
    the entry has one, a fragment of the case id."""
    cid = case_id(key)
    op = key[1]
    for name, frag, reason in entries:
        hit = (name == op or "probe:" + name == op
               or (name.startswith("*.") and op.endswith(name[1:])))
        if hit and (frag is None or frag in cid):
            return reason
    return None


def _tol(name, meta, kind):
    table = TRANSCENDENTAL if meta.get("transcendental") else TOLERANCES
    rtol, atol = table.get(name, (0.0, 0.0))
    if kind in ("vjp", "jvp") and name == "float64":
        rtol, atol = 100 * rtol, 100 * atol
    elif kind == "vmap":
        rtol, atol = 4 * rtol, 4 * atol
    return 2 * rtol, 2 * atol


def _close(a, b, rtol, atol):
    """(all close, max abs error, where) with NaNs equal and infs exact."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "biu" and b.dtype.kind in "biu" and rtol == 0 and atol == 0:
        eq = a.astype(object) == b.astype(object) if a.dtype != b.dtype else a == b
        eq = np.asarray(eq, dtype=bool)
        bad = np.argwhere(~eq)
        return bool(eq.all()), None, (tuple(bad[0]) if len(bad) else None)
    cplx = a.dtype.kind == "c" or b.dtype.kind == "c"
    with np.errstate(all="ignore"):
        x = a.astype(np.complex128 if cplx else np.float64)
        y = b.astype(np.complex128 if cplx else np.float64)
        diff = np.abs(x - y)
        ok = (x == y) | (diff <= atol + rtol * np.abs(y))
        if cplx:
            nan = (np.isnan(x.real) | np.isnan(x.imag)) & (np.isnan(y.real) | np.isnan(y.imag))
        else:
            nan = np.isnan(x) & np.isnan(y)
        ok |= nan
        bad = np.argwhere(~ok)
        err = float(np.max(np.where(ok, 0, np.nan_to_num(diff, nan=np.inf)))) if diff.size else 0.0
    return bool(ok.all()), err, (tuple(int(i) for i in bad[0]) if len(bad) else None)


def _show(a, at):
    a = np.asarray(a)
    if a.ndim == 0:
        return repr(a.item())
    if at is not None and a.size:
        return f"{a[at]!r} at {at}"
    return np.array2string(a.reshape(-1)[:6], threshold=6)


def _vs_ref(rec_e, rec_m, i, name, meta, kind):
    """Which side agrees with the NumPy reference (text), or ''."""
    ref = rec_e.get("ref")
    if not ref or i >= len(ref) or ref[i][0] != "array":
        return ""
    r = ref[i][3]
    rtol, atol = _tol(name, meta, kind)
    out = []
    for side, rec in (("Ember", rec_e), ("MLX", rec_m)):
        leaf = rec["value"][1][i]
        try:
            ok = np.shape(leaf[3]) == np.shape(r) and _close(leaf[3], r, rtol, atol)[0]
        except (TypeError, ValueError):
            ok = False
        out.append(f"{side} {'matches' if ok else 'differs from'} NumPy")
    return "; " + ", ".join(out)


def compare_values(rec_e, rec_m, kind):
    """[(class, detail)] between two "ok" records."""
    (se, le), (sm, lm) = rec_e["value"], rec_m["value"]
    meta = rec_e.get("meta") or {}
    if se != sm or len(le) != len(lm):
        return [("structure", f"Ember {se}, MLX {sm}")]
    out = []
    for i, (a, b) in enumerate(zip(le, lm)):
        where = f"output {i}: " if len(le) > 1 else ""
        if a[0] != b[0]:
            out.append(("structure", f"{where}Ember {a[0]}, MLX {b[0]}"))
            continue
        if a[0] == "py":
            if a[1] != b[1]:
                out.append(("value", f"{where}Ember {a[1]}, MLX {b[1]}"))
            continue
        _, de, she, ve = a
        _, dm, shm, vm = b
        if de != dm:
            out.append(("dtype", f"{where}Ember {de}, MLX {dm}"))
        if tuple(she) != tuple(shm):
            out.append(("shape", f"{where}Ember {tuple(she)}, MLX {tuple(shm)}"))
            continue
        if de != dm and (de in ("float64",) or dm in ("float64",)):
            name = de if de != "float64" else dm   # the coarser one
        else:
            name = de
        rtol, atol = _tol(name, meta, kind)
        if meta.get("mlx_f64_is_f32") and name == "float64":
            rtol, atol = _tol("float32", {"transcendental": True}, kind)
        try:
            ok, err, at = _close(ve, vm, rtol, atol)
        except (TypeError, ValueError) as e:
            out.append(("value", f"{where}not comparable: {e}"))
            continue
        if not ok:
            em = f" (max abs err {err:.3g})" if err is not None else ""
            cls = "value"
            if name == "float64" and _close(ve, vm, *_tol("float32", {"transcendental": True},
                                                          kind))[0]:
                cls = "float64 precision"   # agree to float32 precision only
            out.append((cls, f"{where}Ember {_show(ve, at)}, MLX {_show(vm, at)}{em}"
                        + _vs_ref(rec_e, rec_m, i, name, meta, kind)))
    return out


# MLX's own words for a feature it lacks: where only MLX raises with one of
# these, Ember extends MLX (float64 kernels, derivative and vmap rules)
MLX_LACKS = re.compile(
    r"not implemented|not yet (implemented|supported)|unsupported (data )?type|"
    r"only supports float32|dtype must be float32|only inexact types|"
    r"can only handle groups|has no mlx\.|cannot vmap over|"
    r"cannot (arg(max|min)|\w+) reduce zero size", re.IGNORECASE)

# ops whose outputs are defined only up to an order the implementation picks
# (partition: everything but the kth element): value differences are their
# own class
UNORDERED = {"partition", "argpartition"}

# outputs defined only up to sign or order: compared after normalising
def _normalise(op, kind, leaves, desc=""):
    if kind not in ("forward", "vmap") or op not in ("linalg.eigh", "linalg.eig",
                                                     "linalg.eigvals"):
        return leaves
    out = list(leaves)
    arrays = [leaf[3] if leaf[0] == "array" else None for leaf in leaves]
    if kind == "vmap" and desc.endswith("out_axes=-1"):   # batch axis first
        arrays = [None if a is None or a.ndim == 0 else np.moveaxis(a, -1, 0)
                  for a in arrays]
        out = [leaf if a is None else leaf[:3] + (a,) for leaf, a in zip(out, arrays)]
    if op == "linalg.eigh" and len(out) == 2 and arrays[1] is not None:
        out[1] = out[1][:3] + (np.abs(arrays[1]),)       # eigenvector signs
    elif arrays[0] is not None and arrays[0].ndim >= 1:
        order = np.lexsort((arrays[0].imag, arrays[0].real), axis=-1) \
            if arrays[0].ndim == 1 else np.stack(
                [np.lexsort((r.imag, r.real)) for r in arrays[0].reshape(-1, arrays[0].shape[-1])]
            ).reshape(arrays[0].shape)
        out[0] = out[0][:3] + (np.take_along_axis(arrays[0], order, -1),)
        if len(out) == 2 and arrays[1] is not None:   # columns in that order, up to phase
            vec = np.take_along_axis(arrays[1], order[..., None, :], -1)
            out[1] = out[1][:3] + (np.abs(vec),)
    return out


def _subclass(cls, rec_e, rec_m, detail):
    """A finer class where the cause is plain from the records."""
    if cls == "only MLX raises" and MLX_LACKS.search(rec_m["exc"][1]):
        return "MLX lacks it (Ember extends)"
    return cls


def compare_pair(rec_e, rec_m):
    """[(class, detail)] for one case present on both sides; [] when they
    agree; None when the case is not compared (skipped on a side)."""
    kind = rec_e["key"][0]
    se, sm = rec_e["status"], rec_m["status"]
    if "skip" in (se, sm):
        return None
    if rec_e.get("digest") != rec_m.get("digest"):
        return [("input mismatch", "the workers drew different inputs")]
    if se == sm == "ok":
        op, desc = rec_e["key"][1], rec_e["key"][3]
        rec_e = dict(rec_e, value=(rec_e["value"][0],
                                   _normalise(op, kind, rec_e["value"][1], desc)))
        rec_m = dict(rec_m, value=(rec_m["value"][0],
                                   _normalise(op, kind, rec_m["value"][1], desc)))
        if rec_e.get("ref"):
            rec_e["ref"] = _normalise(op, kind, rec_e["ref"], desc)
        out = compare_values(rec_e, rec_m, kind)
        if op in UNORDERED:
            out = [("implementation-defined order" if c == "value" else c, t) for c, t in out]
        return out
    if se == sm == "raise":
        te, tm = rec_e["exc"][0], rec_m["exc"][0]
        if te != tm:
            return [("exception type", f"Ember {te}: {rec_e['exc'][1][:120]!r}; "
                     f"MLX {tm}: {rec_m['exc'][1][:120]!r}")]
        return []
    if se == sm:  # both crash / both hang
        return []
    desc = {"ok": lambda r: "returns " + _brief(r),
            "raise": lambda r: f"raises {r['exc'][0]}: {r['exc'][1][:120]!r}",
            "crash": lambda r: f"crashes ({r.get('info', '')})",
            "hang": lambda r: f"hangs ({r.get('info', '')})"}
    text = f"Ember {desc[se](rec_e)}; MLX {desc[sm](rec_m)}"
    if "crash" in (se, sm):
        return [("crash", text)]
    if "hang" in (se, sm):
        return [("hang", text)]
    cls = "only Ember raises" if se == "raise" else "only MLX raises"
    return [(_subclass(cls, rec_e, rec_m, text), text)]


def _brief(rec):
    s, leaves = rec["value"]
    parts = []
    for leaf in leaves[:3]:
        if leaf[0] == "array":
            parts.append(f"{leaf[1]}{list(leaf[2])}")
        else:
            parts.append(leaf[1][:40])
    return s if not parts else f"{s} " + ", ".join(parts)


def table_marked(rec_e, key, classes):
    """Whether the op table itself marks this case Ember-only."""
    meta = rec_e.get("meta") or {}
    if meta.get("table_ember_only"):
        return True
    if meta.get("mlx_f64_is_f32") and key[2] == "float64" and \
            set(classes) <= {"value", "float64 precision"}:
        return True
    return False


def _stopped_early(key, other):
    """A block of a suite test function that the other side never reached:
    its function stopped (raised or crashed) before it."""
    kind, op, dtype, desc, _ = key
    if kind != "error" or " block " not in f" {desc}":
        return False
    tag = desc.split("block")[0]
    fun = other.get((kind, op, dtype, f"{tag}function", 0))
    return fun is not None and fun["status"] in ("raise", "crash", "hang", "skip")


def compare(ember, mlx, deliberate=()):
    """Compare two {key: record} maps.  Returns (diffs, stats): diffs a
    list of dicts (key, id, classes [(class, detail)], status: "left" |
    "deliberate" | "table-marked", reason); stats per kind: ops, cases,
    not compared, only on one side."""
    diffs = []
    stats = {}
    for key in sorted(set(ember) | set(mlx), key=lambda k: tuple(map(str, k))):
        kind = key[0]
        st = stats.setdefault(kind, {"ops": set(), "cases": 0, "not compared": 0,
                                     "differences": 0, "deliberate": 0,
                                     "table-marked": 0, "left": 0})
        if key not in ember or key not in mlx:
            side = "Ember" if key in ember else "MLX"
            if _stopped_early(key, mlx if key in ember else ember):
                st["not compared"] += 1
                continue
            classes = [("missing", f"case only run on {side}")]
        else:
            classes = compare_pair(ember[key], mlx[key])
            if classes is None:
                st["not compared"] += 1
                continue
            st["ops"].add(key[1])
            st["cases"] += 1
        if not classes:
            continue
        rec_e = ember.get(key) or mlx[key]
        reason = deliberate_reason(key, deliberate)
        if reason is not None:
            status = "deliberate"
        elif table_marked(rec_e, key, [c for c, _ in classes]):
            status, reason = "table-marked", "the op table marks it Ember-only"
        else:
            status = "left"
        st["differences"] += 1
        st[status] += 1
        diffs.append({"key": list(key), "id": case_id(key), "classes": classes,
                      "status": status, "reason": reason})
    all_ops = set().union(*(st["ops"] for st in stats.values())) if stats else set()
    for st in stats.values():
        st["ops"] = len(st["ops"])
    if stats:
        total = {c: sum(st[c] for st in stats.values()) for c in next(iter(stats.values()))}
        total["ops"] = len(all_ops)
        stats["total"] = total
    return diffs, stats


def summary_table(stats):
    cols = ["ops", "cases", "differences", "deliberate", "table-marked", "left",
            "not compared"]
    rows = [[k] + [str(stats[k][c]) for c in cols] for k in KINDS + ("total",)
            if k in stats]
    head = ["kind"] + cols
    w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(x.ljust(w[i]) for i, x in enumerate(r)) + " |"
    out = [line(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def report(diffs, stats):
    lines = ["# Ember vs MLX: differential run", "", summary_table(stats), "",
             "(ops: distinct ops compared; cases: (kind, op, dtype, sample) pairs "
             "compared; deliberate: listed in docs/mlx-differences.md; table-marked: "
             "the op table marks them Ember-only; left: the rest)", ""]
    by_class = {}
    for d in diffs:
        by_class.setdefault(d["classes"][0][0], []).append(d)
    order = sorted(by_class, key=lambda c: -len(by_class[c]))
    lines += ["## By class and op", "",
              "(count of cases; their dtypes; the first case; deliberate and "
              "table-marked cases are counted apart)", ""]
    for cls in order:
        lines.append(f"### {cls} ({len(by_class[cls])})")
        groups = {}
        for d in by_class[cls]:
            groups.setdefault((d["key"][0], d["key"][1], d["status"]), []).append(d)
        for (kind, op, status), items in sorted(groups.items()):
            dts = sorted({d["key"][2] for d in items if d["key"][2]})
            first = items[0]
            detail = "; ".join(t for _, t in first["classes"])
            mark = "" if status == "left" else f" [{status}]"
            lines.append(f"- {kind} `{op}`{mark}: {len(items)} case(s)"
                         + (f" [{', '.join(dts)}]" if dts else "")
                         + f"; e.g. {first['id']}: {detail[:300]}")
        lines.append("")
    lines += ["## Every case", ""]
    for cls in order:
        items = by_class[cls]
        lines.append(f"## {cls} ({len(items)})")
        for d in items:
            mark = "" if d["status"] == "left" else f"  [{d['status']}: {d['reason']}]"
            detail = "; ".join(f"{c}: {t}" if c != cls else t for c, t in d["classes"])
            lines.append(f"- {d['id']}: {detail}{mark}")
        lines.append("")
    return "\n".join(lines)


# ==========================================================================
# the worker: runs one backend (imports the suite's table)
# ==========================================================================

class _Missing:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise AttributeError(f"the backend has no {self.name}")

    def __getattr__(self, attr):
        return _Missing(f"{self.name}.{attr}")


class _Tolerant:
    """A backend module whose missing attributes are _Missing callables
    (submodules wrapped alike)."""

    def __init__(self, mod, name=None):
        object.__setattr__(self, "_mod", mod)
        object.__setattr__(self, "_name", name or mod.__name__)

    def __getattr__(self, attr):
        try:
            v = getattr(self._mod, attr)
        except AttributeError:
            return _Missing(f"{self._name}.{attr}")
        if type(v).__name__ == "module":
            return _Tolerant(v, f"{self._name}.{attr}")
        return v


_ERROR_WORDS = ("error", "raise", "invalid", "reject", "validat", "bad_", "wrong")


def _suite_errors(run, mkkey, counter, is_mlx, ops_filter):
    """Run the suite's test functions about errors (name containing one of
    _ERROR_WORDS; parametrized ones once per parameter; none needing a
    fixture) with ``raises`` and ``pytest.raises`` replaced by a recorder:
    every ``with raises(...)`` block is one case (its exception, or none),
    and what the function raises outside a block one more."""
    import glob
    import importlib
    import inspect
    import itertools
    import types

    import pytest

    state = {"rec": None}

    class Recorder:
        def __init__(self, *a, **k):
            self.value = None

        def __enter__(self):
            return self

        def __exit__(self, t, v, tb):
            state["rec"](v)
            self.value = v
            return v is None or isinstance(v, Exception)

    fake_pytest = types.SimpleNamespace(**{k: getattr(pytest, k) for k in dir(pytest)
                                           if not k.startswith("__")})
    fake_pytest.raises = Recorder
    for path in sorted(glob.glob(os.path.join(TESTS, "test_*.py"))):
        modname = os.path.basename(path)[:-3]
        if modname in ("test_mlx_diff", "test_docs", "test_layers", "test_suite_markers",
                       "test_cpp", "test_isa", "test_api_list", "test_docstrings"):
            continue
        try:
            mod = importlib.import_module(modname)
        except Exception:  # noqa: BLE001 - a module the backend cannot import
            continue
        mod.raises = Recorder
        mod.pytest = fake_pytest
        for fname, fn in sorted(vars(mod).items()):
            if not (fname.startswith("test_") and callable(fn)
                    and any(w in fname for w in _ERROR_WORDS)):
                continue
            if ops_filter and "suite-errors" not in ops_filter and fname not in ops_filter:
                continue
            marks = getattr(fn, "pytestmark", [])
            if any(m.name in ("skip", "slow") for m in marks):
                continue
            ember_only = any(m.name == "ember_only" for m in marks)
            grids = []
            for m in marks:
                if m.name != "parametrize":
                    continue
                names = m.args[0]
                names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
                vals = []
                for v in m.args[1]:
                    pm = v if type(v).__name__ == "ParameterSet" else None
                    vv = pm.values if pm else ((v,) if len(names) == 1 else tuple(v))
                    eo = bool(pm) and any(getattr(x, "name", "") == "ember_only" for x in pm.marks)
                    vals.append((dict(zip(names, vv)), eo))
                grids.append(vals)
            try:
                params = list(inspect.signature(fn).parameters)
            except (TypeError, ValueError):
                continue
            combos = list(itertools.product(*grids)) if grids else [()]
            if len(combos) > 60:
                continue
            opname = f"{modname}.{fname}"
            for ci, combo in enumerate(combos):
                kw, eo = {}, ember_only
                for d, e in combo:
                    kw.update(d)
                    eo = eo or e
                if set(params) - set(kw):
                    break   # needs a fixture
                tag = f"[{ci}]" if grids else ""
                blocks = []
                state["rec"] = blocks.append
                meta = {"family": "suite", "table_ember_only": eo}

                def thunk(fn=fn, kw=kw):
                    fn(**kw)
                    return None
                # the function (outside its blocks), then one case per block;
                # ember_only tests (MLX crashes or differs on purpose) not on MLX
                skip = "an ember_only test" if eo and is_mlx else None
                run(mkkey("error", opname, "", f"{tag} function"), thunk, 0, meta, skip=skip)
                for bi, v in enumerate(blocks):
                    def block(v=v):
                        if v is not None:
                            raise v
                        return "no exception"
                    run(mkkey("error", opname, "", f"{tag} block {bi}"), block, 0, meta)


def _worker(backend, out_path, progress_path, ops_filter, kinds):
    os.environ["EMBER_TEST_BACKEND"] = backend
    sys.path.insert(0, TESTS)
    for p in filter(None, os.environ.get("EMBER_DIFF_EXTRA_PATH", "").split(os.pathsep)):
        if p not in sys.path:
            sys.path.append(p)
    import conftest
    # a name the backend lacks becomes a function raising AttributeError,
    # so the table imports and the missing name shows up as a difference
    conftest.mx = _Tolerant(conftest.mx)
    is_mlx = conftest.IS_MLX
    conftest.IS_MLX = False        # the table builds Ember's sample set ...
    try:
        import op_table
    finally:
        conftest.IS_MLX = is_mlx   # ... conversions keep MLX's safe paths
    import transform_samples as ts
    import test_transforms_table as ttt
    from test_ops_forward import _compute, _convert, _has_empty
    mx = conftest.mx

    done = set(read_records(out_path))
    out = open(out_path, "ab")
    prog = open(progress_path, "w")

    def emit(rec):
        pickle.dump(rec, out, protocol=4)
        out.flush()

    def leaves_of(obj):
        if isinstance(obj, mx.array):
            return "a", [("array", conftest.dtype_name(obj.dtype), tuple(obj.shape),
                          conftest.to_numpy(obj))]
        if isinstance(obj, (list, tuple)):
            structs, leaves = [], []
            for o in obj:
                s, l = leaves_of(o)
                structs.append(s)
                leaves += l
            return f"{type(obj).__name__}({','.join(structs)})", leaves
        if isinstance(obj, dict):
            s, l = leaves_of([obj[k] for k in sorted(obj, key=str)])
            return f"dict{sorted(map(str, obj))}{s}", l
        if isinstance(obj, np.ndarray):  # a reference's result
            return "a", [("array", str(obj.dtype), obj.shape, obj)]
        if isinstance(obj, np.generic):
            return "a", [("array", str(obj.dtype), (), np.asarray(obj))]
        if isinstance(obj, (bool, int, float, complex)):
            return "py", [("py", repr(obj))]
        return "py", [("py", f"{type(obj).__name__}: {obj!r}"[:200])]

    def leaves_tree(obj):
        if isinstance(obj, (list, tuple)):
            return [a for o in obj for a in leaves_tree(o)]
        if isinstance(obj, dict):
            return [a for o in obj.values() for a in leaves_tree(o)]
        return [obj]

    def digest(obj):
        h = 0
        stack = [obj]
        while stack:
            o = stack.pop()
            if isinstance(o, op_table.Fixed):
                stack.append(np.asarray(o.value))
                h = zlib.crc32(o.dtype.encode(), h)
            elif isinstance(o, np.ndarray):
                h = zlib.crc32(np.ascontiguousarray(o).tobytes(), h)
                h = zlib.crc32(repr((o.shape, o.dtype.str)).encode(), h)
            elif isinstance(o, (list, tuple)):
                stack.extend(reversed(o))
            elif isinstance(o, dict):
                for k in sorted(o):
                    h = zlib.crc32(str(k).encode(), h)
                    stack.append(o[k])
            elif isinstance(o, (bool, int, float, complex, str)) or o is None:
                h = zlib.crc32(repr(o).encode(), h)
        return h

    def run(key, thunk, dig, meta, ref=None, skip=None):
        if key in done:
            return
        ran[0] += 1
        prog.seek(0)
        prog.write(f"{key!r}\n{ran[0]}\n")
        prog.truncate()
        prog.flush()
        rec = {"key": key, "digest": dig, "meta": meta}
        if skip:
            rec.update(status="skip", info=skip)
        else:
            try:
                res = thunk()
                rec.update(status="ok", value=leaves_of(res))
            except Exception as e:  # noqa: BLE001 - recorded
                rec.update(status="raise", exc=(type(e).__name__, str(e)))
            if ref is not None and rec["status"] == "ok":
                try:
                    rec["ref"] = leaves_of(ref())[1]
                except Exception:  # noqa: BLE001 - no reference then
                    pass
        emit(rec)
        done.add(key)

    counter = {}
    ran = [0]   # cases run by this process (1: a fresh process)

    def mkkey(kind, op, dtype, desc):
        base = (kind, op, dtype, str(desc))
        n = counter.get(base, 0)
        counter[base] = n + 1
        return base + (n,)

    def evaled(f):
        def g():
            r = f()
            mx.eval(r)
            return r
        return g

    def selected(op):
        if not ops_filter:
            return True
        for f in ops_filter:
            if f.startswith("family:") and op.family == f[7:]:
                return True
            if f == op.name:
                return True
        return False

    def meta_of(op, **more):
        m = {"transcendental": op.transcendental, "mlx_f64_is_f32": op.mlx_f64_is_f32,
             "family": op.family, "table_ember_only": False}
        m.update(more)
        return m

    for op in op_table.OPS:
        if not selected(op):
            continue
        counter.clear()
        # ---- forward ----
        if "forward" in kinds:
            for dtype in op.dtypes:
                rng = np.random.default_rng(zlib.crc32(f"{op.name}/{dtype}".encode()))
                meta = meta_of(op, table_ember_only=dtype in op.mlx_wrong_dtypes)
                try:
                    samples = op.sample_inputs(dtype, rng)
                except Exception as e:  # noqa: BLE001
                    run(mkkey("forward", op.name, dtype, "<sample_inputs>"),
                        lambda e=e: (_ for _ in ()).throw(e), 0, meta)
                    continue
                for s in samples:
                    key = mkkey("forward", op.name, dtype, s.desc)
                    skip = None
                    if is_mlx and op.family == "reduction" and _has_empty(s):
                        skip = "MLX's reduce can hang on empty inputs"

                    def thunk(s=s, dtype=dtype):
                        margs, _ = _convert(tuple(s.args), dtype, "contiguous")
                        mkw = {k: _convert(v, dtype, "contiguous")[0]
                               for k, v in s.kwargs.items()}
                        r = op.op(*margs, **mkw)
                        mx.eval(r)
                        return r

                    def ref(s=s, dtype=dtype):
                        _, vargs = _convert(tuple(s.args), dtype, "contiguous")
                        vkw = {k: _convert(v, dtype, "contiguous")[1]
                               for k, v in s.kwargs.items()}
                        if op.ref_gets_dtype:
                            vkw["_name"] = dtype
                        with np.errstate(all="ignore"):
                            return op.ref(*_compute(vargs, op),
                                          **{k: _compute(v, op) for k, v in vkw.items()})

                    want_ref = not is_mlx and op.ref is not None and op.forward
                    run(key, thunk, digest((s.args, s.kwargs)), meta,
                        ref=ref if want_ref else None, skip=skip)
        # ---- error table ----
        if "error" in kinds:
            try:
                errs = op.error_inputs()
            except Exception as e:  # noqa: BLE001
                errs = []
                run(mkkey("error", op.name, "", "<error_inputs>"),
                    lambda e=e: (_ for _ in ()).throw(e), 0, meta_of(op))
            for i, e in enumerate(errs):
                exp = e.exc if isinstance(e.exc, tuple) else (e.exc,)
                meta = meta_of(op, table_ember_only=e.ember_only,
                               expected=[x.__name__ for x in exp])

                def thunk(e=e):
                    args, kwargs = e.build()
                    r = op.op(*args, **kwargs)
                    mx.eval(r)
                    return r
                run(mkkey("error", op.name, "", f"#{i} {e.desc}"), thunk, 0, meta)
        # ---- vjp / jvp ----
        if ("vjp" in kinds or "jvp" in kinds) and op.name not in ttt.SKIP_GRAD \
                and "float64" in op.dtypes:
            srng = np.random.default_rng(ts.seed(op.name, "separate", 0))
            cases = []
            for c in ts.draw(op, "float64", 0):
                if not c.float_argnums or not ts.finite(c.leaves):
                    continue
                if op.name in ttt.KINKED:
                    c.leaves = [a if p else ts.separate(a, srng)
                                for a, p in zip(c.leaves, c.pinned)]
                cases.append(c)
            for c in ts.pick(cases, 3):
                argnums = c.float_argnums
                dig = digest(c.leaves)
                meta = meta_of(op)

                def f_of(c=c, argnums=argnums):
                    fixed = c.mx_leaves()

                    def f(*xs):
                        full = list(fixed)
                        for i, x in zip(argnums, xs):
                            full[i] = x
                        return ts.as_list(c.fun(*full))
                    return f, [fixed[i] for i in argnums]

                def vjp(c=c, f_of=f_of):
                    f, xs = f_of()
                    outs = f(*xs)
                    mx.eval(outs)
                    r = np.random.default_rng(ts.seed(op.name, c.desc, "cot"))
                    cots = [mx.array(r.standard_normal(o.shape).astype(
                        conftest.NP_CARRIER.get(conftest.dtype_name(o.dtype), np.float64)),
                        dtype=o.dtype) for o in outs]
                    o2, g = mx.vjp(f, xs, cots)
                    mx.eval(o2, g)
                    return list(o2), list(g)

                def jvp(c=c, f_of=f_of):
                    f, xs = f_of()
                    r = np.random.default_rng(ts.seed(op.name, c.desc, "tan"))
                    tans = [ts.as_mx(r.standard_normal(x.shape)) for x in xs]
                    o2, t = mx.jvp(f, xs, tans)
                    mx.eval(o2, t)
                    return list(o2), list(t)

                if "vjp" in kinds:
                    run(mkkey("vjp", op.name, "float64", c.desc), vjp, dig, meta)
                if "jvp" in kinds:
                    run(mkkey("jvp", op.name, "float64", c.desc), jvp, dig, meta)
        # ---- vmap ----
        if "vmap" in kinds and op.name not in ttt.SKIP_VMAP:
            for name in ttt._vmap_dtypes(op):
                full = name == "float32"
                try:
                    groups = ttt._groups(op, name, regular=3 if full else 1)
                except Exception:  # noqa: BLE001
                    continue
                for group in groups:
                    c = group[0]
                    for in_axes, out_axes in ttt._configs(c.leaves, full):
                        args = ts.stack_leaves(group, in_axes)

                        def thunk(c=c, args=args, in_axes=in_axes, out_axes=out_axes):
                            xs = [ts.as_mx(a) for a in args]
                            r = mx.vmap(c.fun, in_axes=tuple(in_axes), out_axes=out_axes)(*xs)
                            mx.eval(r)
                            return r
                        run(mkkey("vmap", op.name, name,
                                  f"{c.desc} in_axes={in_axes} out_axes={out_axes}"),
                                thunk, digest(args),
                            meta_of(op, table_ember_only=name in op.mlx_wrong_dtypes))
    # ---- the suite's other error checks: ``raises`` / ``pytest.raises``
    # blocks in the test functions about errors, each block recorded ----
    if "error" in kinds and (not ops_filter or "suite-errors" in ops_filter
                             or any(f.startswith("test_") for f in ops_filter)):
        _suite_errors(run, mkkey, counter, is_mlx, ops_filter)

    # ---- probes (tools/mlx_diff_probes.py): single calls outside the table ----
    if "probe" in kinds:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import mlx_diff_probes
        real = conftest.mx._mod
        counter.clear()
        for name, desc, fn, pref in mlx_diff_probes.PROBES:
            if ops_filter and not any(f in ("probe", name) for f in ops_filter):
                continue

            def thunk(fn=fn):
                r = fn(real, np)
                arrays = [a for a in leaves_tree(r) if isinstance(a, real.array)]
                if arrays:
                    real.eval(arrays)
                return r
            ref = None if is_mlx or pref is None else (lambda pref=pref: pref(np))
            run(mkkey("probe", name, "", desc), thunk, 0,
                {"family": "probe", "transcendental": pref is not None}, ref=ref)
    prog.seek(0)
    prog.write("DONE\n")
    prog.truncate()
    prog.flush()


# ==========================================================================
# the driver: runs the workers (restarting after crashes and hangs)
# ==========================================================================

def _extra_path():
    """site-packages holding pytest and hypothesis (the MLX interpreter
    may not have them)."""
    dirs = []
    for mod in ("pytest", "hypothesis", "_pytest", "pluggy", "iniconfig",
                "attr", "sortedcontainers"):
        try:
            m = __import__(mod)
        except ImportError:
            continue
        d = os.path.dirname(os.path.dirname(os.path.abspath(m.__file__)))
        if d not in dirs:
            dirs.append(d)
    return os.pathsep.join(dirs)


def run_backend(backend, python, out_dir, ops, kinds, case_timeout, fresh, log):
    out_path = os.path.join(out_dir, f"{backend}.pkl")
    prog_path = os.path.join(out_dir, f"{backend}.progress")
    if fresh and os.path.exists(out_path):
        os.remove(out_path)
    env = dict(os.environ)
    env["EMBER_TEST_BACKEND"] = backend
    env["EMBER_DIFF_EXTRA_PATH"] = _extra_path()
    if backend == "ember":
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(ROOT, "python")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    else:
        env.pop("PYTHONPATH", None)
    cmd = [python, os.path.abspath(__file__), "--worker", backend, "--out", out_dir,
           "--kinds", ",".join(kinds)]
    if ops:
        cmd += ["--ops", ",".join(ops)]
    restarts = 0
    retried = {}
    while True:
        with open(prog_path, "w") as f:
            f.write("<import>\n")
        err_path = os.path.join(out_dir, f"{backend}.stderr")
        with open(err_path, "w") as err:
            p = subprocess.Popen(cmd, env=env, stdout=err, stderr=err, cwd=ROOT,
                                 start_new_session=True)
        last, since = None, time.time()
        hung = False
        while p.poll() is None:
            time.sleep(0.2)
            try:
                with open(prog_path) as f:
                    cur = f.read()
            except OSError:
                cur = None
            if cur != last:
                last, since = cur, time.time()
            limit = max(case_timeout, 300) if (cur or "").startswith("<import>") else case_timeout
            if time.time() - since > limit:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                hung = True
        with open(prog_path) as f:
            cur = f.read().strip()
        if p.returncode == 0 and cur == "DONE":
            flaky = [k for k in retried if read_records(out_path).get(k, {}).get("status")
                     not in ("crash", None)]
            with open(os.path.join(out_dir, f"{backend}.flaky"), "w") as f:
                for k in flaky:
                    f.write(f"{case_id(k)}: crashed ({retried[k]}) after other cases, "
                            "not in a fresh process\n")
            return out_path
        if cur.startswith("<import>") or not cur.startswith("("):
            with open(err_path) as f:
                tail = f.read()[-3000:]
            raise RuntimeError(f"{backend} worker failed before its first case "
                               f"(exit {p.returncode}):\n{tail}")
        first, _, count = cur.partition("\n")
        key = eval(first)  # noqa: S307 - our own repr of a tuple of str/int
        with open(err_path) as f:
            tail = f.read()[-300:].strip().replace("\n", " | ")
        rc = p.returncode
        info = (f"no progress for {case_timeout} s" if hung else
                f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}: {tail}")
        if not hung and count.strip() != "1" and key not in retried:
            # a crash after other cases may come from an earlier case's
            # damage: run the case again first in a fresh process
            retried[key] = info
            log(f"[{backend}] {case_id(key)}: crash ({info}); again in a fresh process")
            continue
        if key in retried:
            info += " (in a fresh process too)"
        with open(out_path, "ab") as f:
            pickle.dump({"key": key, "status": "hang" if hung else "crash", "info": info,
                         "digest": None, "meta": {}}, f, protocol=4)
        restarts += 1
        log(f"[{backend}] {case_id(key)}: {'hang' if hung else 'crash'} ({info}); "
            f"restart {restarts}")


def _fix_digests(ember, mlx):
    """A crash/hang record carries no digest: take the other side's."""
    for a, b in ((ember, mlx), (mlx, ember)):
        for k, r in a.items():
            if r.get("digest") is None and k in b:
                r["digest"] = b[k].get("digest")
                if not r.get("meta"):
                    r["meta"] = b[k].get("meta") or {}


def finish(ember_path, mlx_path, json_path=None, text_path=None, differences=DIFFERENCES_MD):
    ember, mlx = read_records(ember_path), read_records(mlx_path)
    _fix_digests(ember, mlx)
    diffs, stats = compare(ember, mlx, parse_deliberate(differences))
    text = report(diffs, stats)
    notes = []
    for path in (ember_path, mlx_path):
        flaky = path[:-4] + ".flaky" if path.endswith(".pkl") else None
        if flaky and os.path.exists(flaky):
            side = os.path.basename(path)[:-4]
            notes += [f"- [{side}] {line.rstrip()}" for line in open(flaky) if line.strip()]
    if notes:
        text += ("\n## Crashes that depend on what ran before (not differences)\n\n"
                 + "\n".join(notes) + "\n")
    print(text)
    if text_path:
        with open(text_path, "w") as f:
            f.write(text + "\n")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"stats": stats, "differences": diffs}, f, indent=1, default=str)
    return diffs, stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="", help="comma-separated op names or family:NAME")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--out", default=DEFAULT_OUT, help="folder of the result files")
    ap.add_argument("--mlx-python", default=DEFAULT_MLX_PYTHON)
    ap.add_argument("--ember-python", default=sys.executable)
    ap.add_argument("--case-timeout", type=float, default=20.0,
                    help="seconds without progress before a case counts as a hang")
    ap.add_argument("--resume", action="store_true",
                    help="keep the result files and run only the missing cases")
    ap.add_argument("--sequential", action="store_true",
                    help="run the backends one after the other (default: in parallel)")
    ap.add_argument("--json", help="also write the differences as JSON here")
    ap.add_argument("--text", help="also write the report here")
    ap.add_argument("--differences", default=DIFFERENCES_MD,
                    help="the file of deliberate differences")
    ap.add_argument("--compare", nargs=2, metavar=("EMBER_PKL", "MLX_PKL"))
    ap.add_argument("--worker", choices=["ember", "mlx"], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    ops = [o for o in a.ops.split(",") if o]
    kinds = [k for k in a.kinds.split(",") if k]
    if a.worker:
        _worker(a.worker, os.path.join(a.out, f"{a.worker}.pkl"),
                os.path.join(a.out, f"{a.worker}.progress"), ops, kinds)
        return 0
    if a.compare:
        finish(*a.compare, json_path=a.json, text_path=a.text, differences=a.differences)
        return 0
    os.makedirs(a.out, exist_ok=True)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    t0 = time.time()
    jobs = [("ember", a.ember_python), ("mlx", a.mlx_python)]
    if a.sequential:
        paths = [run_backend(b, py, a.out, ops, kinds, a.case_timeout, not a.resume, log)
                 for b, py in jobs]
    else:
        import threading
        paths, errors = {}, []

        def go(b, py):
            try:
                paths[b] = run_backend(b, py, a.out, ops, kinds, a.case_timeout,
                                       not a.resume, log)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        ts_ = [threading.Thread(target=go, args=j) for j in jobs]
        for t in ts_:
            t.start()
        for t in ts_:
            t.join()
        if errors:
            raise errors[0]
        paths = [paths["ember"], paths["mlx"]]
    log(f"workers done in {time.time() - t0:.0f} s")
    finish(*paths, json_path=a.json, text_path=a.text, differences=a.differences)
    return 0


if __name__ == "__main__":
    sys.exit(main())
