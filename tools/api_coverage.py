#!/usr/bin/env python3
"""How much of MLX's Python API the importable Ember provides.

    python tools/api_coverage.py                 # one line per area
    python tools/api_coverage.py --missing       # ... and every gap
    python tools/api_coverage.py --area linalg random --missing

The list of names is ``docs/api/mlx_api.tsv`` (see ``docs/api/README.md``).
A name counts as present when it resolves under the ``ember`` package
(attributes first, then submodules such as ``ember.core.fft``).  For a
function whose MLX signature is written out, the parameter names Ember
declares -- from ``inspect.signature`` or, for compiled functions, the
signature pybind11 puts on the first line of the docstring -- must include
MLX's; a function whose parameters cannot be read is not checked.

The exit status is 0 when every name of the chosen areas is present with
matching parameter names, 1 otherwise, 2 when the package does not import.
``tests/python/test_api_list.py`` imports this file and keeps the areas
that are complete from losing a name.
"""

import argparse
import ast
import importlib
import inspect
import re
import sys
from collections import OrderedDict
from pathlib import Path

API_LIST = Path(__file__).resolve().parent.parent / "docs" / "api" / "mlx_api.tsv"


class Entry:
    __slots__ = ("name", "area", "kind", "signature")

    def __init__(self, name, area, kind, signature):
        self.name, self.area, self.kind, self.signature = name, area, kind, signature


def read_list(path=API_LIST):
    """The entries of the API list, in file order (comment lines skipped)."""
    entries = []
    for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 3:
            raise ValueError(f"{path}:{lineno}: expected name, area, kind, signature")
        fields += [""] * (4 - len(fields))
        entries.append(Entry(*[f.strip() for f in fields[:4]]))
    return entries


# object reprs pybind11 may write as defaults (<ember.core.Dtype ...>)
_REPR = re.compile(r"<[^<>]*>")


def parameters(text):
    """Parameter names of a signature text ``(a, /, b=1, *, c=None) -> r``,
    or None when the text gives none (``(...)``, ``(*args, **kwargs)``) or
    cannot be read."""
    if not text:
        return None
    text = _REPR.sub("None", text.strip())
    tries = [text]
    if "->" in text:  # an unreadable return annotation must not hide the rest
        tries.append(text[:text.rindex("->")].rstrip())
    for t in tries:
        try:
            tree = ast.parse(f"def _f{t}: pass")
            break
        except SyntaxError:
            continue
    else:
        return None
    args = tree.body[0].args
    named = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if not named:
        return None if (args.vararg or args.kwarg) else []
    return named


def declared_parameters(obj, leaf):
    """The parameter names ``obj`` declares, or None if unknown."""
    try:
        return list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        pass
    doc = inspect.getdoc(obj) or ""
    first = doc.splitlines()[0].strip() if doc else ""
    if not first.startswith(leaf + "("):
        return None
    return parameters(first[len(leaf):])


def resolve(package, dotted):
    """The object ``package.<dotted>``; raises LookupError if absent."""
    obj = package
    done = []
    for part in dotted.split("."):
        done.append(part)
        try:
            obj = getattr(obj, part)
            continue
        except AttributeError:
            pass
        try:
            obj = importlib.import_module(package.__name__ + "." + ".".join(done))
        except ImportError:
            raise LookupError(dotted) from None
    return obj


class AreaReport:
    def __init__(self):
        self.total = 0
        self.missing = []      # names that do not resolve
        self.signature = []    # (name, MLX's parameters, Ember's)

    @property
    def present(self):
        return self.total - len(self.missing)

    @property
    def complete(self):
        return not self.missing and not self.signature


def coverage(package, entries, areas=None):
    """{area: AreaReport} for the entries of the chosen areas (all if None)."""
    reports = OrderedDict()
    for e in entries:
        if areas and e.area not in areas:
            continue
        rep = reports.setdefault(e.area, AreaReport())
        rep.total += 1
        try:
            obj = resolve(package, e.name)
        except LookupError:
            rep.missing.append(e.name)
            continue
        if e.kind != "function":
            continue
        want = parameters(e.signature)
        if not want:
            continue
        have = declared_parameters(obj, e.name.rsplit(".", 1)[-1])
        if have is not None and not set(want) <= set(have):
            rep.signature.append((e.name, want, have))
    return reports


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--area", nargs="+", metavar="AREA",
                    help="only these areas (default: all)")
    ap.add_argument("--missing", action="store_true",
                    help="list each missing name and parameter mismatch")
    ap.add_argument("--package", default="ember",
                    help="package to check (default: ember)")
    ap.add_argument("--list", default=str(API_LIST), help="the API list")
    opts = ap.parse_args(argv)
    try:
        package = importlib.import_module(opts.package)
    except Exception as exc:  # noqa: BLE001 - reported, not hidden
        print(f"cannot import {opts.package}: {exc}")
        return 2
    reports = coverage(package, read_list(opts.list), opts.area)
    for area in sorted(reports):
        rep = reports[area]
        state = "complete" if rep.complete else ""
        print(f"{area:<13} {rep.present:>4}/{rep.total:<4} present  "
              f"{len(rep.signature)} parameter mismatches  {state}".rstrip())
        if opts.missing:
            for name in rep.missing:
                print(f"    missing    {name}")
            for name, want, have in rep.signature:
                print(f"    parameters {name}: MLX {want}, Ember {have}")
    present = sum(r.present for r in reports.values())
    total = sum(r.total for r in reports.values())
    print(f"total         {present:>4}/{total:<4} present")
    return 0 if all(r.complete for r in reports.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
