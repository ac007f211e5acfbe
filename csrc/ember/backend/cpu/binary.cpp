// Binary elementwise kernels: Binary<Op>::eval_cpu for every op in the list.
// Inputs arrive with the same dtype and broadcastable shapes. Compiled once
// per ISA level (backend/cpu/isa.h).
#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/functors.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/vec.h"
#include "ember/primitives/elementwise.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {
template <class T, class O, class F>
void binary_loop(const array& a, const array& b, array& out, F f) {
  using C = compute_t<T>;
  Strides sa = broadcast_strides(a, out.shape()), sb = broadcast_strides(b, out.shape());
  for_each_row<3>(
      out.shape(), {out.strides().data(), sa.data(), sb.data()},
      {out.data<char>(), a.data<char>(), b.data<char>()},
      {static_cast<int>(sizeof(O)), static_cast<int>(sizeof(T)), static_cast<int>(sizeof(T))},
      [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
        O* o = reinterpret_cast<O*>(p[0]);
        const T* x = reinterpret_cast<const T*>(p[1]);
        const T* y = reinterpret_cast<const T*>(p[2]);
        if constexpr (std::is_same_v<T, float16_t>) {
          if (s[0] == 1 && s[1] <= 1 && s[2] <= 1 && s[1] + s[2] > 0) return f16_run<2>({x, y}, {s[1], s[2]}, o, n, f);
        }
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(static_cast<C>(x[i]), static_cast<C>(y[i])));
        } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
          const C xs = static_cast<C>(x[0]);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(xs, static_cast<C>(y[i])));
        } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
          const C ys = static_cast<C>(y[0]);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(static_cast<C>(x[i]), ys));
        } else {
          for (int64_t i = 0; i < n; ++i) {
            o[i * s[0]] = static_cast<O>(f(static_cast<C>(x[i * s[1]]), static_cast<C>(y[i * s[2]])));
          }
        }
      });
}
}  // namespace

template <class Op>
void binary_eval(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const array& b = inputs[1];
  array& out = outputs[0];
  alloc_or_donate(out, inputs);
  dispatch_elementwise<Fn<Op>, 2>(Op::name, a.dtype(), out, [&](auto t, auto o) {
    binary_loop<typename decltype(t)::type, typename decltype(o)::type>(a, b, out, Fn<Op>{});
  });
}

#define EMBER_INSTANTIATE(N, OUT) \
  template void binary_eval<op::N>(const std::vector<array>&, std::vector<array>&);
EMBER_BINARY_OPS(EMBER_INSTANTIATE)
#undef EMBER_INSTANTIATE

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {
template <class Op>
void Binary<Op>::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(binary_eval<Op>)(inputs, outputs);
}
#define EMBER_INSTANTIATE(N, OUT) template class Binary<op::N>;
EMBER_BINARY_OPS(EMBER_INSTANTIATE)
#undef EMBER_INSTANTIATE
}  // namespace ember
#endif
