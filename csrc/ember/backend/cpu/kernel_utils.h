// Helpers shared by the CPU kernels: output allocation with buffer donation,
// dtype conversion, and the error for a dtype a kernel does not support.
#pragma once

#include <string>
#include <type_traits>

#include "ember/array.h"

namespace ember::cpu {

// Gives `out` storage: reuses the buffer of an input that only this node
// holds and that has out's exact layout (dense, same size and itemsize),
// otherwise allocates. Inputs from `first` on are checked in order.
void alloc_or_donate(array& out, const std::vector<array>& inputs, size_t first = 0);

[[noreturn]] void unsupported(const char* op, Dtype t);

template <class To, class From>
inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_complex_v<From>) {
    if constexpr (is_complex_v<To>) return x;
    else if constexpr (std::is_same_v<To, bool>) return x != From(0);
    else return convert<To>(x.real());
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (is_complex_v<To>) {
    return To(static_cast<float>(x), 0.0f);
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_same_v<To, bfloat16_t>) {
    return To(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace ember::cpu
