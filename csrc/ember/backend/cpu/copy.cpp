// Copies and conversions (AsType, dense copies of strided arrays) and
// where(). Compiled once per ISA level (backend/cpu/isa.h); the entry
// points copy_into / copy_to are in kernel_utils.cpp.
#include "ember/backend/cpu/isa_unit.h"

#include <cstdint>
#include <stdexcept>

#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {

void copy_kernel(Dtype src_dtype, const Shape& shape, const Strides& src_strides, char* src_base, Dtype dst_dtype,
                 const Strides& dst_strides, char* dst_base) {
  dispatch_all(src_dtype, [&](auto stag) {
    using S = typename decltype(stag)::type;
    dispatch_all(dst_dtype, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      for_each_row<2>(shape, {dst_strides.data(), src_strides.data()}, {dst_base, src_base},
                      {static_cast<int>(sizeof(D)), static_cast<int>(sizeof(S))},
                      [](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
                        D* o = reinterpret_cast<D*>(p[0]);
                        const S* x = reinterpret_cast<const S*>(p[1]);
                        if (s[0] == 1 && s[1] == 1) {
                          if constexpr (std::is_same_v<S, float16_t> && std::is_same_v<D, float>) return widen_f16(x, o, n);
                          if constexpr (std::is_same_v<S, float> && std::is_same_v<D, float16_t>) return narrow_f16(x, o, n);
                          for (int64_t i = 0; i < n; ++i) o[i] = convert<D>(x[i]);
                        } else if (s[0] == 1 && s[1] == 0) {
                          const D v = convert<D>(x[0]);
                          for (int64_t i = 0; i < n; ++i) o[i] = v;
                        } else {
                          for (int64_t i = 0; i < n; ++i) o[i * s[0]] = convert<D>(x[i * s[1]]);
                        }
                      });
    });
  });
}

// where() moves bits: it runs on unsigned words of the dtype's size, and
// picks with a mask made from the condition instead of a ternary (which GCC
// turns into a jump that a random mask, such as a ReLU's gradient, mispredicts
// half the time); the masked form has no branch and vectorizes.
template <class U>
void select_rows(const Shape& shape, const Strides& so, const Strides& sc, const Strides& sx, const Strides& sy,
                 char* o, const char* c, const char* x, const char* y) {
  constexpr int is = sizeof(U);
  for_each_row<4>(shape, {so.data(), sc.data(), sx.data(), sy.data()},
                  {o, const_cast<char*>(c), const_cast<char*>(x), const_cast<char*>(y)}, {is, 1, is, is},
                  [](std::array<char*, 4> p, std::array<int64_t, 4> s, int64_t n) {
                    U* o = reinterpret_cast<U*>(p[0]);
                    const bool* cc = reinterpret_cast<const bool*>(p[1]);
                    const U* xx = reinterpret_cast<const U*>(p[2]);
                    const U* yy = reinterpret_cast<const U*>(p[3]);
                    auto pick = [](bool c, U a, U b) {
                      const U m = static_cast<U>(U(0) - static_cast<U>(c));
                      return static_cast<U>((a & m) | (b & static_cast<U>(~m)));
                    };
                    if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
                      for (int64_t i = 0; i < n; ++i) o[i] = pick(cc[i], xx[i], yy[i]);
                    } else if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 0) {
                      const U b = yy[0];
                      for (int64_t i = 0; i < n; ++i) o[i] = pick(cc[i], xx[i], b);
                    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0 && s[3] == 1) {
                      const U a = xx[0];
                      for (int64_t i = 0; i < n; ++i) o[i] = pick(cc[i], a, yy[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i)
                        o[i * s[0]] = pick(cc[i * s[1]], xx[i * s[2]], yy[i * s[3]]);
                    }
                  });
}

void select_eval(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array &c = inputs[0], &x = inputs[1], &y = inputs[2];
  array& out = outputs[0];
  alloc_or_donate(out, inputs, 1);
  Strides sc = broadcast_strides(c, out.shape()), sx = broadcast_strides(x, out.shape()),
          sy = broadcast_strides(y, out.shape());
  auto run = [&](auto word) {
    using U = decltype(word);
    select_rows<U>(out.shape(), out.strides(), sc, sx, sy, out.data<char>(), c.data<char>(), x.data<char>(),
                   y.data<char>());
  };
  switch (size_of(out.dtype())) {  // every dtype is 1, 2, 4 or 8 bytes
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    case 8: run(uint64_t{}); break;
    default: throw std::logic_error("[where] Unexpected item size.");
  }
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {

void AsType::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::alloc_or_donate(out, inputs);
  cpu::copy_to(inputs[0], out);
}

void Select::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(select_eval)(inputs, outputs);
}

}  // namespace ember
#endif
