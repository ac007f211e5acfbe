// Helpers shared by the CPU kernels: output allocation with buffer donation,
// dtype conversion, and the error for a dtype a kernel does not support.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "ember/allocator.h"
#include "ember/array.h"
#include "ember/backend/cpu/isa.h"

namespace ember::cpu {

// Gives `out` storage: reuses the buffer of an input that only this node
// holds and that has out's exact layout (dense, same size and itemsize),
// otherwise allocates; borrowed buffers are never reused. Inputs from `first` on are checked in order.
void alloc_or_donate(array& out, const std::vector<array>& inputs, size_t first = 0);
// Whether `in` (an input of the running node) may give its buffer to `out`.
bool can_donate(const array& in, const array& out);

[[noreturn]] void unsupported(const char* op, Dtype t);

// One copy of the inline helpers below per ISA level (backend/cpu/isa.h).
inline namespace EMBER_ISA_NS {

// Kernel scratch from Ember's allocator: 64-byte aligned (vector and tile
// loads that straddle cache lines run at half speed) and recycled by its
// cache (no page faults for big temporaries call after call); n A, zeroed
// unless zero is false.
template <class A>
struct AlignedScratch {
  std::shared_ptr<Buffer> buf;
  A* data = nullptr;
  int64_t size = 0;
  explicit AlignedScratch(int64_t n, bool zero = true)
      : buf(allocator::malloc(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(A))),
        data(static_cast<A*>(buf->ptr())),
        size(n) {
    if (zero) std::fill(data, data + n, A(0));
  }
};

// One value converted between storage types: the rule of every Ember
// conversion (dtype.h's scalar_cast), inlined into the kernels' loops.
template <class To, class From>
inline To convert(From x) {
  return scalar_cast<To>(x);
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

}  // namespace EMBER_ISA_NS
}  // namespace ember::cpu
