// Helpers shared by the op builders (ops/*.cpp).
#pragma once

#include <sstream>

#include "ember/ops.h"
#include "ember/primitive.h"

namespace ember::detail {

template <class... Args>
std::string msg(const char* op, Args&&... args) {
  std::ostringstream os;
  os << "[" << op << "] ";
  (os << ... << args);
  return os.str();
}
template <class... Args>
[[noreturn]] void fail(const char* op, Args&&... args) {
  throw std::invalid_argument(msg(op, std::forward<Args>(args)...));
}

template <class... Args>
[[noreturn]] void fail_index(const char* op, Args&&... args) {
  throw std::out_of_range(msg(op, std::forward<Args>(args)...));
}

// Sorted, unique, non-negative axes (all axes when not given).
Axes reduce_axes(const std::optional<Axes>& axes, int ndim, const char* op);
// Shape with the reduced axes set to 1 / removed.
Shape keep_shape(const Shape& s, const Axes& axes);
Shape squeeze_shape(const Shape& s, const Axes& axes);

}  // namespace ember::detail
