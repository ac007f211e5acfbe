// The docstrings of ember.core: one table (docstrings.cpp) from qualified
// name ("take", "linalg.inv", "array.sum", "Stream") to text, installed on
// the bound objects once the module is complete.
#pragma once

#include <pybind11/pybind11.h>

namespace ember::py_bind {

// Installs every docstring of the table on the already-bound objects of `m`
// and adds `_docstring_names()` (the table's names, for the coverage test).
// Throws if a table name names nothing: an entry for nothing is a bug.
void install_docstrings(pybind11::module_& m);

}  // namespace ember::py_bind
