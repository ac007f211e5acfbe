// Helpers shared by the CPU kernels: output allocation with buffer donation,
// dtype conversion, and the error for a dtype a kernel does not support.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "ember/array.h"
#include "ember/backend/cpu/isa.h"

namespace ember::cpu {

// Gives `out` storage: reuses the buffer of an input that only this node
// holds and that has out's exact layout (dense, same size and itemsize),
// otherwise allocates. Inputs from `first` on are checked in order.
void alloc_or_donate(array& out, const std::vector<array>& inputs, size_t first = 0);
// Whether `in` (an input of the running node) may give its buffer to `out`.
bool can_donate(const array& in, const array& out);

[[noreturn]] void unsupported(const char* op, Dtype t);

// One copy of the inline helpers below per ISA level (backend/cpu/isa.h).
inline namespace EMBER_ISA_NS {

// Float -> integer conversions, defined for every input (C++ leaves NaN,
// infinities, out-of-range values and negative -> unsigned undefined, and
// x86's scalar and vector instructions answer them differently). Ember gives
// x86-64's scalar answer, which is what NumPy, MLX and PyTorch return on
// x86-64, on every code path, thread split and ISA level:
//   * to int8/int16/uint8/uint16/int32: truncate toward zero to int32 — a
//     value whose truncation is not an int32 (and NaN) gives INT32_MIN —
//     then keep the low bits (wrap);
//   * to int64: truncate to int64; not representable or NaN -> INT64_MIN;
//   * to uint32 (uint64): values below 2^31 (2^63) as the signed rule, then
//     wrap (-1.0 -> 4294967295); from 2^31 (2^63) up, 2^31 (2^63) plus the
//     signed rule on x - 2^31 (x - 2^63), wrapped (so 2^32 -> 0).
// float16/bfloat16 go through float32, complex through its real part. The
// forms are branch-free selects, so loops over them vectorize.
template <class F>
inline int32_t cvt_i32(F x) {
  bool ok;
  if constexpr (std::is_same_v<F, float>) ok = (x >= -2147483648.0f) & (x < 2147483648.0f);
  else ok = (x > -2147483649.0) & (x < 2147483648.0);
  const int32_t v = static_cast<int32_t>(ok ? x : F(0));
  return ok ? v : std::numeric_limits<int32_t>::min();
}
template <class F>
inline int64_t cvt_i64(F x) {
  const bool ok = (x >= F(-9223372036854775808.0)) & (x < F(9223372036854775808.0));
  const int64_t v = static_cast<int64_t>(ok ? x : F(0));
  return ok ? v : std::numeric_limits<int64_t>::min();
}
template <class I, class F>
inline I float_to_int(F x) {
  if constexpr (std::is_same_v<I, uint32_t>) {
    const bool hi = x >= F(2147483648.0);
    const uint32_t v = static_cast<uint32_t>(cvt_i32(hi ? x - F(2147483648.0) : x));
    return v ^ (hi ? 0x80000000u : 0u);
  } else if constexpr (std::is_same_v<I, uint64_t>) {
    const bool hi = x >= F(9223372036854775808.0);
    const uint64_t v = static_cast<uint64_t>(cvt_i64(hi ? x - F(9223372036854775808.0) : x));
    return v ^ (hi ? uint64_t(1) << 63 : uint64_t(0));
  } else if constexpr (sizeof(I) == 8) {
    return cvt_i64(x);
  } else {
    return static_cast<I>(cvt_i32(x));  // wraps to the low bits
  }
}

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
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(x);
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

}  // namespace EMBER_ISA_NS
}  // namespace ember::cpu
