// Copies and conversions (AsType, dense copies of strided arrays), where(),
// and the small helpers every kernel shares.
#include <sstream>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/primitives/elementwise.h"

namespace ember {

namespace cpu {

bool can_donate(const array& in, const array& out) {
  return in.desc().use_count() == 1 && in.buffer() && in.buffer().use_count() == 1 && in.row_contiguous() &&
         in.offset() == 0 && in.itemsize() == out.itemsize() && in.size() == out.size() && in.dtype() == out.dtype();
}

void alloc_or_donate(array& out, const std::vector<array>& inputs, size_t first) {
  for (size_t i = first; i < inputs.size(); ++i) {
    if (can_donate(inputs[i], out)) {
      out.set_data(inputs[i].buffer());
      return;
    }
  }
  out.alloc();
}

void unsupported(const char* op, Dtype t) {
  std::ostringstream os;
  os << "[" << op << "] Not supported for dtype " << dtype_name(t) << ".";
  throw std::invalid_argument(os.str());
}

Strides broadcast_strides(const array& a, const Shape& shape) {
  Strides s(shape.size(), 0);
  int off = static_cast<int>(shape.size()) - a.ndim();
  for (int i = 0; i < a.ndim(); ++i) {
    s[i + off] = a.shape()[i] == 1 ? 0 : a.strides()[i];
  }
  return s;
}

void copy_into(const array& src, const Shape& shape, const Strides& src_strides, char* src_base,
               Dtype dst_dtype, const Strides& dst_strides, char* dst_base) {
  dispatch_all(src.dtype(), [&](auto stag) {
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

void copy_to(const array& src, array& dst) {
  // src is broadcast to dst's shape; dst already has storage
  Strides ss = broadcast_strides(src, dst.shape());
  copy_into(src, dst.shape(), ss, src.data<char>(), dst.dtype(), dst.strides(), dst.data<char>());
}

}  // namespace cpu

void copy_to_dense(const array& a, void* dst) {
  Strides ds = row_strides(a.shape());
  cpu::copy_into(a, a.shape(), a.strides(), a.data<char>(), a.dtype(), ds, static_cast<char*>(dst));
}

void AsType::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::alloc_or_donate(out, inputs);
  cpu::copy_to(inputs[0], out);
}

void Select::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array &c = inputs[0], &x = inputs[1], &y = inputs[2];
  array& out = outputs[0];
  cpu::alloc_or_donate(out, inputs, 1);
  Strides sc = cpu::broadcast_strides(c, out.shape()), sx = cpu::broadcast_strides(x, out.shape()),
          sy = cpu::broadcast_strides(y, out.shape());
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int is = sizeof(T);
    cpu::for_each_row<4>(
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

}  // namespace ember
