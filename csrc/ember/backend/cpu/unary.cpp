// Unary elementwise kernels: Unary<Op>::eval_cpu for every op in the list,
// and FromFP8 (a table of the 256 codes' values per output dtype).
// Compiled once per ISA level (backend/cpu/isa.h).
#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/functors.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/vec.h"
#include "ember/primitives/elementwise.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

// Functors whose float32 vector path is accurate for |x| <= F::far_bound()
// only (functors.h: sin, cos, tan) give that path without its guards for
// larger |x|, F::near_value(x), and the exact value beyond the bound,
// F::far_value(x).
template <class F, class = void>
struct has_far : std::false_type {};
template <class F>
struct has_far<F, std::void_t<decltype(F::far_value(0.0f))>> : std::true_type {};

// A row through such a functor, in pieces. One vectorized loop computes the
// near values, keeps a copy of the inputs (the row may be in place, over a
// donated input) and their largest magnitude (as bits: NaN counts as
// large); only a piece whose largest |x| passes the bound goes over its
// lanes again and redoes those beyond it (infinities included). ~5% fewer
// instructions than a plain loop over the guarded function (a separate scan
// before the values would cost ~15% in time: it no longer overlaps the
// memory traffic with the arithmetic).
constexpr int64_t kFarPiece = 1024;
template <bool Dense, class T, class O, class F>
void far_row(const T* x, O* o, int64_t sx, int64_t so, int64_t n) {
  const int64_t ix = Dense ? 1 : sx, io = Dense ? 1 : so;
  const float bound = F::far_bound();
  const uint32_t bound_bits = simd::detail::as_u(bound);
  alignas(64) float in[kFarPiece];
  for (int64_t i = 0; i < n; i += kFarPiece) {
    const int64_t m = std::min(kFarPiece, n - i);
    const T* xp = x + i * ix;
    O* op = o + i * io;
    uint32_t top = 0;
    for (int64_t j = 0; j < m; ++j) {
      const float v = static_cast<float>(xp[j * ix]);
      const uint32_t mag = simd::detail::as_u(v) & 0x7fffffffu;
      in[j] = v;
      op[j * io] = static_cast<O>(F::near_value(v));
      top = mag > top ? mag : top;
    }
    if (top <= bound_bits) continue;
    for (int64_t j = 0; j < m; ++j) {
      if (simd::detail::fabs_(in[j]) > bound) op[j * io] = static_cast<O>(F::far_value(in[j]));
    }
  }
}

template <class T, class O, class F>
void unary_loop(const array& a, array& out, F f) {
  using C = compute_t<T>;
  for_each_row<2>(
      out.shape(), {out.strides().data(), a.strides().data()}, {out.data<char>(), a.data<char>()},
      {static_cast<int>(sizeof(O)), static_cast<int>(sizeof(T))},
      [&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
        O* o = reinterpret_cast<O*>(p[0]);
        const T* x = reinterpret_cast<const T*>(p[1]);
        if constexpr (has_far<F>::value && std::is_same_v<C, float>) {
          if (s[0] == 1 && s[1] == 1) far_row<true, T, O, F>(x, o, 1, 1, n);
          else far_row<false, T, O, F>(x, o, s[1], s[0], n);
        } else if (s[0] == 1 && s[1] == 1) {
          if constexpr (std::is_same_v<T, float16_t>) return f16_run<1>({x}, {1}, o, n, f);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(static_cast<C>(x[i])));
        } else {
          for (int64_t i = 0; i < n; ++i) o[i * s[0]] = static_cast<O>(f(static_cast<C>(x[i * s[1]])));
        }
      });
}
}  // namespace

template <class Op>
void unary_eval(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  array& out = outputs[0];
  alloc_or_donate(out, inputs);
  dispatch_elementwise<Fn<Op>, 1>(Op::name, a.dtype(), out, [&](auto t, auto o) {
    unary_loop<typename decltype(t)::type, typename decltype(o)::type>(a, out, Fn<Op>{});
  });
}

#define EMBER_INSTANTIATE(N, OUT) \
  template void unary_eval<op::N>(const std::vector<array>&, std::vector<array>&);
EMBER_UNARY_OPS(EMBER_INSTANTIATE)
#undef EMBER_INSTANTIATE

namespace {
// The values of the 256 fp8 codes as storage type O, built on first use.
template <class O>
const O* fp8_table() {
  static const std::array<O, 256> table = [] {
    std::array<O, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = fp8_e4m3_decode<O>(static_cast<uint8_t>(c));
    return t;
  }();
  return table.data();
}
}  // namespace

void from_fp8_eval(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  array& out = outputs[0];
  if (a.dtype() != Dtype::uint8) unsupported("FromFP8", a.dtype());
  alloc_or_donate(out, inputs);
  dispatch_all(out.dtype(), [&](auto tag) {
    using O = typename decltype(tag)::type;
    if constexpr (is_float_v<O>) {
      const O* table = fp8_table<O>();
      unary_loop<uint8_t, O>(a, out, [table](uint8_t c) { return table[c]; });
    } else {
      unsupported("FromFP8", out.dtype());
    }
  });
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {
template <class Op>
void Unary<Op>::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(unary_eval<Op>)(inputs, outputs);
}
#define EMBER_INSTANTIATE(N, OUT) template class Unary<op::N>;
EMBER_UNARY_OPS(EMBER_INSTANTIATE)
#undef EMBER_INSTANTIATE

void FromFP8::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(from_fp8_eval)(inputs, outputs);
}
}  // namespace ember
#endif
