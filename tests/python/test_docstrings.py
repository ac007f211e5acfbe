"""Every public name of Ember has a real docstring.

Covered: the functions and classes of ``ember.core`` and of its submodules
(linalg, fft, random, metal, cuda), every public method and property of the
classes of ``ember.core`` (``array`` above all), the transforms that
``ember/__init__.py`` installs into ``ember.core`` and the functions of
``ember.utils``.

A function's docstring, after pybind11's signature line(s), has at least
``MIN_LINES`` non-empty lines, an ``Args:`` entry for each of its
parameters and a ``Returns:`` section; a class, property or module has a
sentence at least. The ``>>>`` examples run and print what they show.

The docstrings of the compiled names come from the one table of
``python/src/docstrings.cpp`` (``core._docstring_names()`` lists it): each
table name exists (the import fails otherwise) and every compiled public
name is in it. The table also documents the array's operators and
protocols (``array.__getitem__``, ``array.__add__``, ...), which this
test does not require.
"""

import inspect
import re
import types

import pytest

import ember.core as core
import ember.utils as utils

pytestmark = pytest.mark.ember_only

MIN_LINES = 3
SUBMODULES = ("linalg", "fft", "random", "metal", "cuda", "fast")

BUILTIN_FUNCTION = type(len)


def _is_instance_value(cls, value):
    # Enum members and the like: instances of the class stored on it.
    return isinstance(value, cls)


def public_names():
    """(qualified name, object, kind) for every name the docstrings must cover.

    kind is "function" (a function or method that takes parameters),
    "property", "class" or "module"."""
    out = []

    def add_class(qual, cls):
        out.append((qual, cls, "class"))
        for name, value in vars(cls).items():
            if name.startswith("_") or _is_instance_value(cls, value):
                continue
            if isinstance(value, property):
                out.append((f"{qual}.{name}", value, "property"))
            elif isinstance(value, (staticmethod, classmethod)):
                out.append((f"{qual}.{name}", value.__func__, "function"))
            elif callable(value):
                fn = getattr(cls, name)
                out.append((f"{qual}.{name}", fn, "function"))

    def add_module(prefix, mod):
        for name in dir(mod):
            if name.startswith("_"):
                continue
            value = getattr(mod, name)
            qual = prefix + name
            if isinstance(value, types.ModuleType):
                continue
            if isinstance(value, type):
                add_class(qual, value)
            elif isinstance(value, (BUILTIN_FUNCTION, types.FunctionType)):
                out.append((qual, value, "function"))

    add_module("", core)
    for sub in SUBMODULES:
        out.append((sub, getattr(core, sub), "module"))
        add_module(sub + ".", getattr(core, sub))
    for name in dir(utils):
        value = getattr(utils, name)
        if isinstance(value, types.FunctionType) and value.__module__ == "ember.utils" and not name.startswith("_"):
            out.append(("utils." + name, value, "function"))
    return out


def _split_top_level(s):
    parts, depth, quote, cur = [], 0, None, []
    for ch in s:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def _params_of_signature_line(line):
    """Parameter names of one pybind11 signature line 'name(a: T, /, b: U = 1) -> R'."""
    start = line.index("(")
    depth = 0
    for i in range(start, len(line)):
        if line[i] == "(":
            depth += 1
        elif line[i] == ")":
            depth -= 1
            if depth == 0:
                break
    names = []
    for p in _split_top_level(line[start + 1 : i]):
        p = p.strip()
        if p in ("/", "*", ""):
            continue
        name = re.split(r"[:=]", p, maxsplit=1)[0].strip().lstrip("*")
        if name != "self":
            names.append(name)
    return names


def _signature_and_body(obj):
    """(parameter names, docstring body) of a function; pybind11 or Python."""
    doc = obj.__doc__ or ""
    if isinstance(obj, types.FunctionType) or (
        isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType)
    ):
        params = [
            p.name for p in inspect.signature(obj).parameters.values() if p.name != "self"
        ]
        return params, inspect.cleandoc(doc)
    lines = doc.split("\n")
    name = getattr(obj, "__name__", "")
    if len(lines) > 1 and lines[0] == f"{name}(*args, **kwargs)" and lines[1] == "Overloaded function.":
        params, body_start = [], 2
        for k, line in enumerate(lines[2:], start=2):
            m = re.match(r"\d+\. ", line)
            if m and line[m.end():].startswith(name + "("):
                for p in _params_of_signature_line(line[m.end():]):
                    if p not in params:
                        params.append(p)
                body_start = k + 1
            elif line.strip():
                break
        return params, "\n".join(lines[body_start:])
    if not lines[0].startswith(name + "("):
        pytest.fail(f"{name}: the docstring does not start with pybind11's signature line")
    return _params_of_signature_line(lines[0]), "\n".join(lines[1:])


def _nonempty_lines(text):
    return [l for l in text.split("\n") if l.strip()]


NAMES = public_names()


def test_count():
    # A floor, so that a broken discovery cannot make the suite pass vacuously.
    assert len(NAMES) > 400


@pytest.mark.parametrize("qual,obj,kind", NAMES, ids=[n for n, _, _ in NAMES])
def test_docstring(qual, obj, kind):
    if kind == "function":
        params, body = _signature_and_body(obj)
        lines = _nonempty_lines(body)
        assert len(lines) >= MIN_LINES, f"{qual}: {len(lines)} lines of docstring beyond the signature"
        args = body.split("Args:", 1)[1].split("Returns:", 1)[0] if "Args:" in body else ""
        entries = set(re.findall(r"^\s+\**(\w+)\b", args, flags=re.M))
        missing = [p for p in params if p not in entries]
        assert not missing, f"{qual}: the Args section has no entry for {missing}"
        assert "Returns:" in body, f"{qual}: no Returns section"
    else:
        doc = obj.__doc__ or ""
        assert _nonempty_lines(doc), f"{qual}: no docstring"
        assert not doc.startswith("Members:"), f"{qual}: only pybind11's enum member list"
        if kind == "class":
            init = vars(obj).get("__init__")
            if isinstance(init, BUILTIN_FUNCTION) or type(init).__name__ == "instancemethod":
                params, _ = _signature_and_body(getattr(obj, "__init__"))
                missing = [p for p in params if not re.search(r"(?<![\w])" + re.escape(p) + r"(?![\w])", doc)]
                assert not missing, f"{qual}: the class docstring does not mention the constructor's {missing}"


def _resolve(qual):
    obj = core
    for part in qual.split("."):
        obj = vars(obj)[part] if isinstance(obj, type) else getattr(obj, part)
    return obj


def test_table_names_exist():
    # The import raises on a table name that names nothing; check it here too.
    for qual in core._docstring_names():
        _resolve(qual)


def _python_defined(obj):
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, type):
        # A class written in Python has Python functions; pybind11 classes and
        # ArrayLike (made with type() in module.cpp) have none.
        return type(obj) is type and any(isinstance(v, types.FunctionType) for v in vars(obj).values())
    return isinstance(obj, types.FunctionType)


def test_compiled_names_are_in_the_table():
    table = set(core._docstring_names())
    # An alias (ember/__init__.py's matrix_norm = linalg.norm) is covered by its target's entry.
    documented = {id(_resolve(q)) for q in table}
    compiled = [qual for qual, obj, kind in NAMES if not _python_defined(obj)]
    missing = sorted(
        q for q in compiled if q not in table and id(_resolve(q)) not in documented
    )
    assert not missing, f"not in the docstring table: {missing}"


def _examples(doc):
    """(code, expected output) for each ``>>>`` statement of a docstring."""
    lines = doc.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if not line.startswith(">>> "):
            i += 1
            continue
        code = line[4:]
        i += 1
        while i < len(lines) and lines[i].strip().startswith("... "):
            code += "\n" + lines[i].strip()[4:]
            i += 1
        expected = []
        while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(">>>"):
            expected.append(lines[i].strip())
            i += 1
        yield code, " ".join(expected)


_WITH_EXAMPLES = [(q, obj) for q, obj, _ in NAMES if ">>>" in (obj.__doc__ or "")]


@pytest.mark.parametrize("qual,obj", _WITH_EXAMPLES, ids=[q for q, _ in _WITH_EXAMPLES])
def test_examples_run(qual, obj):
    # Not doctests in form, but the examples must run and print what they say.
    import numpy as np

    ns = {"mx": core, "np": np, **{name: getattr(utils, name) for name in utils.__all__}}
    for code, expected in _examples(obj.__doc__):
        try:
            compiled = compile(code, qual, "eval")
        except SyntaxError:
            exec(compile(code, qual, "exec"), ns)
            continue
        value = eval(compiled, ns)
        got = " ".join(part.strip() for part in repr(value).split("\n")) if value is not None else ""
        if expected:
            assert got == expected, f"{qual}: {code}"
