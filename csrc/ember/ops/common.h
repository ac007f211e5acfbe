// Helpers shared by the op builders (ops/*.cpp); the error helpers (fail,
// fail_index, msg) are in array.h.
#pragma once

#include "ember/ops.h"
#include "ember/primitive.h"

namespace ember::detail {

// Sorted, unique, non-negative axes (all axes when not given).
Axes reduce_axes(const std::optional<Axes>& axes, int ndim, const char* op);
// Shape with the reduced axes set to 1 / removed.
Shape keep_shape(const Shape& s, const Axes& axes);
Shape squeeze_shape(const Shape& s, const Axes& axes);

}  // namespace ember::detail
