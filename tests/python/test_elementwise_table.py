"""The engine lists its public unary and binary functions once, in
csrc/ember/ops/elementwise_table.h: every row is bound under its name, with
the signature its Sig column names (MLX's positional-only and keyword-only
markers)."""

import os
import re

import pytest

from conftest import ember_only, mx

pytestmark = ember_only

TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "csrc", "ember", "ops", "elementwise_table.h")


def _rows():
    text = open(TABLE).read()
    rows = []
    for macro, arity in (("EMBER_UNARY_FUNCTIONS", 1), ("EMBER_BINARY_FUNCTIONS", 2)):
        body = text[text.index(f"#define {macro}(X)"):]
        body = body[:body.index("\n\n") if "\n\n" in body else len(body)]
        for fn, prim, rule, sig in re.findall(r"X\((\w+),\s*(\w*),\s*(\w+),\s*(\w+)\)", body):
            rows.append((fn, prim, rule, sig, arity))
    return rows


ROWS = _rows()
MARKERS = {"PosOnly": (True, True), "Plain": (False, False), "KwOnly": (False, True)}


def test_table_is_complete():
    names = [r[0] for r in ROWS]
    assert len(names) == len(set(names))
    assert {"abs", "sqrt", "isnan", "conjugate"} <= set(names)
    assert {"add", "equal", "logical_xor", "right_shift"} <= set(names)
    for fn, prim, rule, sig, _ in ROWS:
        assert sig in MARKERS, fn
        assert prim or rule == "Custom", f"{fn}: only a Custom function may be a composite"


@pytest.mark.parametrize("fn,prim,rule,sig,arity", ROWS, ids=[r[0] for r in ROWS])
def test_row_is_bound_with_its_signature(fn, prim, rule, sig, arity):
    f = getattr(mx, fn)
    first = (f.__doc__ or "").split("\n", 1)[0]
    if not first.startswith(fn + "("):
        pytest.skip("the docstring does not start with pybind11's signature")
    params = first[len(fn) + 1:first.rindex(")")]
    pos_only, kw_only = MARKERS[sig]
    assert (", /" in params) == pos_only, first
    assert ("*," in params) == kw_only, first
    names = [p.split(":")[0].strip() for p in params.split(",") if p.strip() not in ("/", "*")]
    assert names == ["a", "b"][:arity] + ["stream"], first
