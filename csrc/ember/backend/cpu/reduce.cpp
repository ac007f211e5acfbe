// Reductions, arg-reductions and softmax.
//
// A reduction runs on a dense input whose dims, after merging neighbours of
// the same kind, read [kept?, reduced] (an inner reduction: each output is a
// contiguous run) or [kept?, reduced, kept] (an outer reduction: rows are
// combined elementwise, vectorized over the kept run). Any other pattern is
// first transposed so the reduced dims come last. Sums accumulate in blocks
// with 16 independent accumulators and combine blocks pairwise, so float32
// sums stay accurate far past 2^24 elements.
#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/functors.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

template <class A>
struct SumOp {
  static A init() { return A(0); }
  static A apply(A a, A b) { return a + b; }
};
template <class A>
struct ProdOp {
  static A init() { return A(1); }
  static A apply(A a, A b) { return a * b; }
};
template <class A>
struct MaxOp {
  static A init() {
    if constexpr (is_complex_v<A>) return A(-std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity());
    else if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  static A apply(A a, A b) { return Fn<op::Maximum>{}(a, b); }
};
template <class A>
struct MinOp {
  static A init() {
    if constexpr (is_complex_v<A>) return A(std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity());
    else if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  static A apply(A a, A b) { return Fn<op::Minimum>{}(a, b); }
};
struct AndOp {
  static bool init() { return true; }
  static bool apply(bool a, bool b) { return a && b; }
};
struct OrOp {
  static bool init() { return false; }
  static bool apply(bool a, bool b) { return a || b; }
};

// The dtype sums and products accumulate into (MLX's rule).
template <class T>
struct SumOut {
  using type = T;
};
#define EMBER_SUM_OUT(T, O) \
  template <>               \
  struct SumOut<T> {        \
    using type = O;         \
  };
EMBER_SUM_OUT(bool, int32_t)
EMBER_SUM_OUT(int8_t, int32_t)
EMBER_SUM_OUT(int16_t, int32_t)
EMBER_SUM_OUT(uint8_t, uint32_t)
EMBER_SUM_OUT(uint16_t, uint32_t)
#undef EMBER_SUM_OUT

// Independent accumulators: four AVX registers' worth for 4-byte types.
template <class A>
constexpr int kLanes = sizeof(A) <= 4 ? 32 : 16;
constexpr int64_t kBlock = 4096;

template <class Op>
constexpr bool is_max_op = false;
template <class A>
constexpr bool is_max_op<MaxOp<A>> = true;
template <class Op>
constexpr bool is_min_op = false;
template <class A>
constexpr bool is_min_op<MinOp<A>> = true;

// Max/min of a float run with NaN propagation. The compiler will not
// vectorize the NaN-aware select across 16 scalar lanes, so this keeps two
// native-width vectors of plain selects (`a > v ? a : v`, one instruction)
// and a separate NaN mask: the result is NaN when any element was.
template <bool kMax, class T>
T minmax_run(const T* x, int64_t n) {
  constexpr int W = 32 / sizeof(T);
  typedef T V __attribute__((vector_size(32)));
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef I VI __attribute__((vector_size(32)));
  const T init = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  V a0, a1;
  VI nan = {};
  for (int j = 0; j < W; ++j) a0[j] = a1[j] = init;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V v0, v1;
    std::memcpy(&v0, x + i, sizeof(V));
    std::memcpy(&v1, x + i + W, sizeof(V));
    if constexpr (kMax) {
      a0 = a0 > v0 ? a0 : v0;
      a1 = a1 > v1 ? a1 : v1;
    } else {
      a0 = a0 < v0 ? a0 : v0;
      a1 = a1 < v1 ? a1 : v1;
    }
    nan |= (v0 != v0) | (v1 != v1);
  }
  T acc = init;
  bool any_nan = false;
  for (int j = 0; j < W; ++j) {
    T b = kMax ? (a0[j] > a1[j] ? a0[j] : a1[j]) : (a0[j] < a1[j] ? a0[j] : a1[j]);
    acc = kMax ? (acc > b ? acc : b) : (acc < b ? acc : b);
    any_nan |= nan[j] != 0;
  }
  for (; i < n; ++i) {
    any_nan |= x[i] != x[i];
    acc = kMax ? (acc > x[i] ? acc : x[i]) : (acc < x[i] ? acc : x[i]);
  }
  return any_nan ? std::numeric_limits<T>::quiet_NaN() : acc;
}

// Reduce a contiguous run: blocks of kBlock with kLanes accumulators, blocks
// combined pairwise.
template <class Op, class A, class T>
A reduce_run(const T* x, int64_t n) {
  if constexpr (std::is_floating_point_v<T> && std::is_same_v<A, T> && (is_max_op<Op> || is_min_op<Op>)) {
    return minmax_run<is_max_op<Op>>(x, n);
  }
  if (n > kBlock) {
    int64_t half = (n / 2 + kLanes<A> - 1) / kLanes<A> * kLanes<A>;
    return Op::apply(reduce_run<Op, A>(x, half), reduce_run<Op, A>(x + half, n - half));
  }
  constexpr int L = kLanes<A>;
  A acc[L];
  for (int j = 0; j < L; ++j) acc[j] = Op::init();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int j = 0; j < L; ++j) acc[j] = Op::apply(acc[j], convert<A>(x[i + j]));
  }
  for (; i < n; ++i) acc[0] = Op::apply(acc[0], convert<A>(x[i]));
  for (int w = L / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] = Op::apply(acc[j], acc[j + w]);
  }
  return acc[0];
}

// out[k] = reduce_r x[r * K + k] for k in [k0, k1), rows in blocks of 512
// (partial row-accumulators folded into the total).
template <class Op, class A, class T>
void reduce_rows(const T* x, int64_t R, int64_t K, int64_t k0, int64_t k1, A* out) {
  const int64_t w = k1 - k0;
  // (plain arrays: std::vector<bool> has no data())
  std::unique_ptr<A[]> total(new A[w]), part(new A[w]);
  std::fill(total.get(), total.get() + w, Op::init());
  constexpr int64_t kRowBlock = 512;
  for (int64_t r0 = 0; r0 < R; r0 += kRowBlock) {
    int64_t r1 = std::min(R, r0 + kRowBlock);
    A* p = part.get();
    std::fill(p, p + w, Op::init());
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = x + r * K + k0;
      for (int64_t k = 0; k < w; ++k) p[k] = Op::apply(p[k], convert<A>(row[k]));
    }
    for (int64_t k = 0; k < w; ++k) total[k] = Op::apply(total[k], p[k]);
  }
  std::copy(total.get(), total.get() + w, out + k0);
}

template <class Op, class A, class T, class O>
void reduce_dense(const T* x, O* out, int64_t outer, int64_t R, int64_t K) {
  if (K == 1) {
    if (outer == 1 && R >= 2 * kParallelGrain) {
      // one long run: split across threads, combine the partials
      int nt = num_threads();
      std::unique_ptr<A[]> parts(new A[nt]);
      std::fill(parts.get(), parts.get() + nt, Op::init());
      int64_t per = std::max<int64_t>((R + nt - 1) / nt, 1);
      parallel_for(nt, 1, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          int64_t s = t * per, n = std::min(R, s + per) - s;
          if (n > 0) parts[t] = reduce_run<Op, A>(x + s, n);
        }
      });
      A acc = parts[0];
      for (int t = 1; t < nt; ++t) acc = Op::apply(acc, parts[t]);
      out[0] = convert<O>(acc);
      return;
    }
    parallel_for(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) out[o] = convert<O>(reduce_run<Op, A>(x + o * R, R));
    });
    return;
  }
  // outer reduction for each of `outer` slabs of [R, K]
  std::unique_ptr<A[]> acc(new A[K]);
  for (int64_t o = 0; o < outer; ++o) {
    const T* slab = x + o * R * K;
    int64_t cols_grain = std::max<int64_t>(16, kParallelGrain / std::max<int64_t>(R, 1));
    parallel_for(K, cols_grain, [&](int64_t k0, int64_t k1) { reduce_rows<Op, A>(slab, R, K, k0, k1, acc.get()); });
    for (int64_t k = 0; k < K; ++k) out[o * K + k] = convert<O>(acc[k]);
  }
}

}  // namespace

template <class T>
using sum_out_t = typename SumOut<T>::type;

void reduce_eval(const Reduce& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const auto kind = p.kind();
  const auto& axes = p.axes();
  const array& in = inputs[0];
  array& out = outputs[0];
  out.alloc();
  const int nd = in.ndim();
  std::vector<bool> red(nd, false);
  for (int a : axes) red[a] = true;

  // Merge dims (skipping size-1 ones) into segments of the same kind.
  std::vector<int64_t> seg;
  std::vector<bool> seg_red;
  for (int d = 0; d < nd; ++d) {
    if (in.shape()[d] == 1) continue;
    if (!seg.empty() && seg_red.back() == red[d]) {
      seg.back() *= in.shape()[d];
    } else {
      seg.push_back(in.shape()[d]);
      seg_red.push_back(red[d]);
    }
  }
  int64_t outer = 1, R = 1, K = 1;
  bool simple = true;
  if (seg.size() > 3 || (seg.size() == 3 && !seg_red[1])) simple = false;
  if (seg.size() == 1) {
    (seg_red[0] ? R : outer) = seg[0];
  } else if (seg.size() == 2) {
    if (seg_red[0]) {
      R = seg[0];
      K = seg[1];
    } else {
      outer = seg[0];
      R = seg[1];
    }
  } else if (seg.size() == 3 && simple) {
    outer = seg[0];
    R = seg[1];
    K = seg[2];
  }
  std::shared_ptr<Buffer> tmp;
  const char* base = nullptr;
  if (!simple || !in.row_contiguous()) {
    // Lay the input out densely with kept dims first and reduced dims last.
    Shape shp;
    Strides st;
    for (int pass = 0; pass < 2; ++pass) {
      for (int d = 0; d < nd; ++d) {
        if (red[d] == (pass == 1)) {
          shp.push_back(in.shape()[d]);
          st.push_back(in.strides()[d]);
        }
      }
    }
    tmp = allocator::malloc(static_cast<size_t>(in.nbytes()));
    cpu::copy_into(in, shp, st, in.data<char>(), in.dtype(), row_strides(shp), static_cast<char*>(tmp->ptr()));
    base = static_cast<const char*>(tmp->ptr());
    R = 1;
    for (int d = 0; d < nd; ++d) {
      if (red[d]) R *= in.shape()[d];
    }
    outer = R ? in.size() / R : out.size();
    K = 1;
  } else {
    base = in.data<const char>();
  }
  if (out.size() == 0) return;

  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = reinterpret_cast<const T*>(base);
    auto run = [&](auto op_tag, auto acc_tag, auto out_tag) {
      using Op = typename decltype(op_tag)::type;
      using A = typename decltype(acc_tag)::type;
      using O = typename decltype(out_tag)::type;
      if (static_cast<int>(sizeof(O)) != out.itemsize() || type_to_dtype<O>::value != out.dtype()) {
        cpu::unsupported(p.name(), out.dtype());
      }
      if (R == 0) {
        O* o = out.data<O>();
        for (int64_t i = 0; i < out.size(); ++i) o[i] = cpu::convert<O>(Op::init());
        return;
      }
      cpu::reduce_dense<Op, A>(x, out.data<O>(), outer, R, K);
    };
    using S = cpu::sum_out_t<T>;
    using SA = compute_t<S>;
    switch (kind) {
      case Reduce::And:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::AndOp>{}, Tag<bool>{}, Tag<bool>{});
        break;
      case Reduce::Or:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::OrOp>{}, Tag<bool>{}, Tag<bool>{});
        break;
      case Reduce::Sum:
        return run(Tag<cpu::SumOp<SA>>{}, Tag<SA>{}, Tag<S>{});
      case Reduce::Prod:
        return run(Tag<cpu::ProdOp<SA>>{}, Tag<SA>{}, Tag<S>{});
      case Reduce::Max:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::OrOp>{}, Tag<bool>{}, Tag<bool>{});
        else return run(Tag<cpu::MaxOp<C>>{}, Tag<C>{}, Tag<T>{});
      case Reduce::Min:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::AndOp>{}, Tag<bool>{}, Tag<bool>{});
        else return run(Tag<cpu::MinOp<C>>{}, Tag<C>{}, Tag<T>{});
    }
    cpu::unsupported(p.name(), in.dtype());
  });
}

void arg_reduce_eval(const ArgReduce& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const auto kind = p.kind();
  const int axis = p.axis();
  const array& in = inputs[0];
  array& out = outputs[0];  // uint32, shape of `in` with axis size 1
  out.alloc();
  if (out.size() == 0) return;
  int64_t len = in.shape()[axis];
  // iterate outputs with the input's strides; walk the axis for each
  Strides st = in.strides();
  int64_t ax_stride = st[axis];
  st[axis] = 0;
  bool is_max = kind == ArgReduce::ArgMax;
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    {
      cpu::for_each_row<2>(
          out.shape(), {out.strides().data(), st.data()}, {out.data<char>(), in.data<char>()},
          {4, static_cast<int>(sizeof(T))},
          [&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
            uint32_t* o = reinterpret_cast<uint32_t*>(p[0]);
            const T* x = reinterpret_cast<const T*>(p[1]);
            for (int64_t i = 0; i < n; ++i) {
              const T* col = x + i * s[1];
              C best = static_cast<C>(col[0]);
              uint32_t bi = 0;
              for (int64_t j = 1; j < len; ++j) {
                C v = static_cast<C>(col[j * ax_stride]);
                bool better = is_max ? cpu::lt(best, v) : cpu::lt(v, best);
                if constexpr (std::is_floating_point_v<C>) better = better || (v != v && best == best);
                if (better) {
                  best = v;
                  bi = static_cast<uint32_t>(j);
                }
              }
              o[i * s[0]] = bi;
            }
          },
          std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(len, 1)));
    }
  });
}

void softmax_eval(const Softmax&, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  std::shared_ptr<Buffer> tmp;
  const char* base = in.data<const char>();
  if (!in.row_contiguous()) {
    tmp = allocator::malloc(static_cast<size_t>(in.nbytes()));
    copy_to_dense(in, tmp->ptr());
    base = static_cast<const char*>(tmp->ptr());
  }
  cpu::alloc_or_donate(out, inputs);
  if (out.size() == 0) return;
  const int64_t len = in.shape().empty() ? 1 : in.shape().back();
  const int64_t rows = len ? in.size() / len : 0;
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!is_float_v<T>) {
      cpu::unsupported("Softmax", in.dtype());
    } else {
      using C = compute_t<T>;
      const T* x = reinterpret_cast<const T*>(base);
      T* o = out.data<T>();
      cpu::parallel_for(rows, std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(len, 1)),
                        [&](int64_t b, int64_t e) {
                          std::vector<C> buf(len);
                          C* t = buf.data();
                          for (int64_t r = b; r < e; ++r) {
                            const T* xr = x + r * len;
                            T* orow = o + r * len;
                            C mx = cpu::reduce_run<cpu::MaxOp<C>, C>(xr, len);
                            for (int64_t i = 0; i < len; ++i) t[i] = cpu::m_exp(static_cast<C>(xr[i]) - mx);
                            C sum = cpu::reduce_run<cpu::SumOp<C>, C>(t, len);
                            C inv = C(1) / sum;
                            for (int64_t i = 0; i < len; ++i) orow[i] = static_cast<T>(t[i] * inv);
                          }
                        });
    }
  });
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {

const char* Reduce::name() const {
  static const char* names[] = {"Sum", "Prod", "Max", "Min", "All", "Any"};
  return names[kind_];
}

bool Reduce::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Reduce*>(&o);
  return p && p->kind_ == kind_ && p->axes_ == axes_;
}

bool ArgReduce::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const ArgReduce*>(&o);
  return p && p->kind_ == kind_ && p->axis_ == axis_;
}

bool Softmax::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Softmax*>(&o);
  return p && p->precise_ == precise_;
}

void Reduce::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(reduce_eval)(*this, inputs, outputs);
}

void ArgReduce::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(arg_reduce_eval)(*this, inputs, outputs);
}

void Softmax::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(softmax_eval)(*this, inputs, outputs);
}

}  // namespace ember
#endif
