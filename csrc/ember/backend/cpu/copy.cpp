// Copies and conversions (AsType, dense copies of strided arrays) and
// where(). Compiled once per ISA level (backend/cpu/isa.h); the entry
// points copy_into / copy_to are in kernel_utils.cpp.
#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"

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

void select_eval(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array &c = inputs[0], &x = inputs[1], &y = inputs[2];
  array& out = outputs[0];
  alloc_or_donate(out, inputs, 1);
  Strides sc = broadcast_strides(c, out.shape()), sx = broadcast_strides(x, out.shape()),
          sy = broadcast_strides(y, out.shape());
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int is = sizeof(T);
    for_each_row<4>(
        out.shape(), {out.strides().data(), sc.data(), sx.data(), sy.data()},
        {out.data<char>(), c.data<char>(), x.data<char>(), y.data<char>()}, {is, 1, is, is},
        [](std::array<char*, 4> p, std::array<int64_t, 4> s, int64_t n) {
          T* o = reinterpret_cast<T*>(p[0]);
          const bool* cc = reinterpret_cast<const bool*>(p[1]);
          const T* xx = reinterpret_cast<const T*>(p[2]);
          const T* yy = reinterpret_cast<const T*>(p[3]);
          if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
            for (int64_t i = 0; i < n; ++i) o[i] = cc[i] ? xx[i] : yy[i];
          } else {
            for (int64_t i = 0; i < n; ++i) o[i * s[0]] = cc[i * s[1]] ? xx[i * s[2]] : yy[i * s[3]];
          }
        });
  });
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
