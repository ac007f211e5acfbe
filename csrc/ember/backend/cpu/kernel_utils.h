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
// Whether `in` (an input of the running node) may give its buffer to `out`.
bool can_donate(const array& in, const array& out);

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

// The dtype dispatch shared by Unary<Op> and Binary<Op>: calls
// run(Tag<T>{}, Tag<O>{}) with T the input storage type and O the output
// storage type of functor F on T's compute type (half types store back to
// themselves), or raises if F has no overload for that type.
template <class F, int Arity, class T>
struct ElementwiseTypes {
  using C = compute_t<T>;
  static constexpr bool ok = Arity == 1 ? std::is_invocable_v<F, C> : std::is_invocable_v<F, C, C>;
};
template <class F, class C, int Arity>
struct ElementwiseResult;
template <class F, class C>
struct ElementwiseResult<F, C, 1> {
  using type = std::invoke_result_t<F, C>;
};
template <class F, class C>
struct ElementwiseResult<F, C, 2> {
  using type = std::invoke_result_t<F, C, C>;
};

template <class F, int Arity, class Run>
void dispatch_elementwise(const char* name, Dtype in, const array& out, Run&& run) {
  dispatch_all(in, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (ElementwiseTypes<F, Arity, T>::ok) {
      using R = typename ElementwiseResult<F, C, Arity>::type;
      using O = std::conditional_t<is_half_v<T> && std::is_same_v<R, float>, T, R>;
      if (static_cast<int>(sizeof(O)) != out.itemsize()) unsupported(name, out.dtype());
      run(Tag<T>{}, Tag<O>{});
    } else {
      unsupported(name, in);
    }
  });
}

}  // namespace ember::cpu
