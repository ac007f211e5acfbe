// Scan kernels (cumsum, cumprod, cummax, cummin, logcumsumexp).
//
// Scans cast in the op layer, so input and output share a dtype. The kernel
// runs on a dense [outer, len, inner] layout: with inner == 1 each row is a
// sequential scan (rows spread over the threads), otherwise whole inner runs
// are combined elementwise (vectorized over the contiguous inner dim).
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/functors.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/primitives/sort.h"

namespace ember {

namespace cpu {
namespace {

// Sum/product accumulators: float32 and complex64 sums in double (2^20-long
// scans stay accurate to float32 rounding), integers in a wide unsigned type
// (wrapping like the storage type, without signed overflow).
template <class T>
struct SumAcc {
  using type = compute_t<T>;
};
template <>
struct SumAcc<float> {
  using type = double;
};
template <>
struct SumAcc<complex64_t> {
  using type = std::complex<double>;
};
#define EMBER_WRAP_ACC(T, A) \
  template <>                \
  struct SumAcc<T> {         \
    using type = A;          \
  };
EMBER_WRAP_ACC(uint8_t, uint32_t)
EMBER_WRAP_ACC(uint16_t, uint32_t)
#undef EMBER_WRAP_ACC

// log(exp(a) + exp(b)) for complex values, the operand with the larger real
// part factored out (MLX's form: the imaginary part is not wrapped).
inline std::complex<double> logaddexp_c(std::complex<double> a, std::complex<double> b) {
  constexpr double ninf = -std::numeric_limits<double>::infinity();
  if (a.real() == ninf) return b;
  if (b.real() == ninf) return a;
  bool a_big = a.real() >= b.real();
  std::complex<double> m = a_big ? a : b, r = a_big ? b : a;
  return m + std::log(1.0 + std::exp(r - m));
}

// Storage <-> accumulator (convert() knows complex64 only).
template <class A, class T>
inline A acc_in(T x) {
  if constexpr (std::is_same_v<A, std::complex<double>>) return A(x.real(), x.imag());
  else return convert<A>(x);
}
template <class T, class A>
inline T acc_out(A a) {
  if constexpr (std::is_same_v<A, std::complex<double>>) {
    return T(static_cast<float>(a.real()), static_cast<float>(a.imag()));
  } else {
    return convert<T>(a);
  }
}

// out = scan of x, both dense [O, L, I]; may run in place (o == x).
template <class T, class A, class Op>
void scan_dense(const T* x, T* o, int64_t O, int64_t L, int64_t I, bool rev, bool incl, A init, Op op) {
  const int64_t step = rev ? -1 : 1;
  const int64_t j0 = rev ? L - 1 : 0;
  if (I == 1) {
    // one row at a time: interleaving rows would put their streams in the
    // same cache sets (row strides are often multiples of 4 KiB)
    auto row = [&](int64_t r) {
      A acc = init;
      const T* xr = x + r * L;
      T* orow = o + r * L;
      for (int64_t jj = 0, j = j0; jj < L; ++jj, j += step) {
        A prev = acc;
        acc = op(prev, acc_in<A>(xr[j]));
        orow[j] = acc_out<T>(incl ? acc : prev);
      }
    };
    const int64_t block = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L, 1));
    const int64_t nblocks = O * L < 2 * kParallelGrain ? 1 : (O + block - 1) / block;
    const int64_t per = nblocks == 1 ? O : block;
    dynamic_for(nblocks, no_state, [&](int64_t i, NoState&) {
      for (int64_t r = i * per, e = std::min(O, (i + 1) * per); r < e; ++r) row(r);
    });
    return;
  }
  // combine whole inner runs; split over outer slabs and column blocks
  const int nt = num_threads();
  int64_t cb = I;  // column block: at least 4 tasks per thread when O is small
  if (O < 4 * nt) cb = std::max<int64_t>(64, ((I + 4 * nt - 1) / (4 * nt) + 15) / 16 * 16);
  const int64_t nb = (I + cb - 1) / cb;
  const int64_t tasks = O * L * I < 2 * kParallelGrain ? 1 : O * nb;
  dynamic_for(tasks, [&] { return std::unique_ptr<A[]>(new A[cb]); }, [&](int64_t t0, std::unique_ptr<A[]>& acc) {
    const int64_t t1 = tasks == 1 ? O * nb : t0 + 1;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t oi = task / nb, i0 = (task % nb) * cb, w = std::min(I, i0 + cb) - i0;
      A* ac = acc.get();
      for (int64_t i = 0; i < w; ++i) ac[i] = init;
      for (int64_t jj = 0, j = j0; jj < L; ++jj, j += step) {
        const T* xr = x + (oi * L + j) * I + i0;
        T* orow = o + (oi * L + j) * I + i0;
        for (int64_t i = 0; i < w; ++i) {
          A prev = ac[i];
          ac[i] = op(prev, acc_in<A>(xr[i]));
          orow[i] = acc_out<T>(incl ? ac[i] : prev);
        }
      }
    }
  });
}

// The scans by family, so each dtype instantiates only what it supports
// (signed sums and products run on the unsigned type of the same width:
// wrapping arithmetic gives the same bits; half types go through float32).
template <class T>
void scan_arith(Scan::Kind kind, const T* x, T* o, int64_t O, int64_t L, int64_t I, bool rev, bool incl) {
  auto go = [&](auto init, auto op) { scan_dense(x, o, O, L, I, rev, incl, init, op); };
  if constexpr (std::is_same_v<T, bool>) {
    if (kind == Scan::Prod) return go(true, [](bool a, bool b) { return a && b; });
  } else if (kind == Scan::Sum) {
    using A = typename SumAcc<T>::type;
    return go(A(0), [](A a, A b) { return a + b; });
  } else {
    using A = std::conditional_t<std::is_same_v<T, float> || is_complex_v<T>, T, typename SumAcc<T>::type>;
    return go(A(1), [](A a, A b) { return static_cast<A>(a * b); });
  }
  unsupported("Scan", type_to_dtype<T>::value);
}

template <class T>
void scan_order(bool is_max, const T* x, T* o, int64_t O, int64_t L, int64_t I, bool rev, bool incl) {
  T lo, hi;  // identities of max / min
  if constexpr (std::is_same_v<T, bool>) {
    lo = false;
    hi = true;
  } else if constexpr (is_complex_v<T>) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    lo = T(-inf, -inf);
    hi = T(inf, inf);
  } else if constexpr (std::is_floating_point_v<T>) {
    lo = -std::numeric_limits<T>::infinity();
    hi = std::numeric_limits<T>::infinity();
  } else {
    lo = std::numeric_limits<T>::lowest();
    hi = std::numeric_limits<T>::max();
  }
  if (is_max) return scan_dense(x, o, O, L, I, rev, incl, lo, [](T a, T b) { return Fn<op::Maximum>{}(a, b); });
  scan_dense(x, o, O, L, I, rev, incl, hi, [](T a, T b) { return Fn<op::Minimum>{}(a, b); });
}

template <class T>
void scan_lae(const T* x, T* o, int64_t O, int64_t L, int64_t I, bool rev, bool incl) {
  if constexpr (is_complex_v<T>) {  // in double: long chains cancel
    using A = std::complex<double>;
    scan_dense(x, o, O, L, I, rev, incl, A(-std::numeric_limits<double>::infinity(), 0.0), logaddexp_c);
  } else if constexpr (std::is_floating_point_v<T>) {
    scan_dense(x, o, O, L, I, rev, incl, -std::numeric_limits<T>::infinity(),
               [](T a, T b) { return Fn<op::LogAddExp>{}(a, b); });
  } else {
    unsupported("Scan", type_to_dtype<T>::value);
  }
}

template <class T>
void run_scan(Scan::Kind kind, const T* x, T* o, int64_t O, int64_t L, int64_t I, bool rev, bool incl) {
  switch (kind) {
    case Scan::Sum:
    case Scan::Prod:
      if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        using U = std::make_unsigned_t<T>;
        return scan_arith(kind, reinterpret_cast<const U*>(x), reinterpret_cast<U*>(o), O, L, I, rev, incl);
      } else {
        return scan_arith(kind, x, o, O, L, I, rev, incl);
      }
    case Scan::Max:
    case Scan::Min:
      return scan_order(kind == Scan::Max, x, o, O, L, I, rev, incl);
    case Scan::LogAddExp:
      return scan_lae(x, o, O, L, I, rev, incl);
  }
}

}  // namespace
}  // namespace cpu

// --------------------------------------------------------------------------
// Scan

const char* Scan::name() const {
  static const char* names[] = {"CumSum", "CumProd", "CumMax", "CumMin", "LogCumSumExp"};
  return names[kind_];
}

bool Scan::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Scan*>(&o);
  return p && p->kind_ == kind_ && p->axis_ == axis_ && p->reverse_ == reverse_ && p->inclusive_ == inclusive_;
}

void Scan::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  int64_t O = 1, I = 1;
  for (int d = 0; d < axis_; ++d) O *= in.shape(d);
  for (int d = axis_ + 1; d < in.ndim(); ++d) I *= in.shape(d);
  const int64_t L = in.shape(axis_);
  if (in.dtype() == Dtype::float16 || in.dtype() == Dtype::bfloat16) {
    // accumulate in float32: scan a float32 copy, round each result once
    out.alloc();
    if (out.size() == 0) return;
    array tmp = array::empty_evaluated(in.shape(), Dtype::float32);
    cpu::copy_to(in, tmp);
    cpu::run_scan<float>(kind_, tmp.data<float>(), tmp.data<float>(), O, L, I, reverse_, inclusive_);
    cpu::copy_to(tmp, out);
    return;
  }
  const char* src;
  if (in.row_contiguous()) {
    cpu::alloc_or_donate(out, inputs);  // the scan may run in place
    src = in.data<const char>();
  } else {
    out.alloc();  // dense copy into the output, then scan it in place
    cpu::copy_to(in, out);
    src = out.data<const char>();
  }
  if (out.size() == 0) return;
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_half_v<T>) {
      cpu::unsupported(name(), in.dtype());  // handled above
    } else {
      cpu::run_scan<T>(kind_, reinterpret_cast<const T*>(src), out.data<T>(), O, L, I, reverse_, inclusive_);
    }
  });
}

}  // namespace ember
