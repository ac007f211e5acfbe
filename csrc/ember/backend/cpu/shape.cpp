// Kernels of the shape primitives: views set strides/offset on the input's
// buffer; copies go through copy_into.
#include <cstring>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/primitives/shape.h"

namespace ember {

namespace {
void dense_copy(const array& in, array& out) {
  out.alloc();
  cpu::copy_to_dense(in, out.raw_data());
}
}  // namespace

namespace {
// Strides that view `in` as `shape` without a copy, when its layout allows:
// each group of input dims that multiplies to a group of output dims must be
// contiguous within itself (size-1 dims never matter).
bool reshape_view_strides(const array& in, const Shape& shape, Strides& out) {
  Shape od;
  Strides os;
  for (int i = 0; i < in.ndim(); ++i) {
    if (in.shape()[i] != 1) {
      od.push_back(in.shape()[i]);
      os.push_back(in.strides()[i]);
    }
  }
  int n_old = static_cast<int>(od.size()), n_new = static_cast<int>(shape.size());
  out.assign(n_new, 1);
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < n_new && oi < n_old) {
    int64_t np = shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= n_new) return false;
        np *= shape[nj++];
      } else {
        if (oj >= n_old) return false;
        op *= od[oj++];
      }
    }
    for (int k = oi; k < oj - 1; ++k) {
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    }
    out[nj - 1] = os[oj - 1];
    for (int k = nj - 1; k > ni; --k) out[k - 1] = out[k] * shape[k];
    ni = nj++;
    oi = oj++;
  }
  return true;  // trailing output dims are size 1 (stride 1)
}
}  // namespace

void Reshape::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  Strides st;
  if (in.row_contiguous() || in.size() == 0) {
    out.set_data(in.buffer(), row_strides(out.shape()), in.offset());
  } else if (reshape_view_strides(in, out.shape(), st)) {
    out.set_data(in.buffer(), std::move(st), in.offset());
  } else {
    dense_copy(in, out);
  }
}

void Transpose::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  Strides s(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) s[i] = in.strides()[axes_[i]];
  outputs[0].set_data(in.buffer(), std::move(s), in.offset());
}

void Broadcast::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  outputs[0].set_data(in.buffer(), cpu::broadcast_strides(in, outputs[0].shape()), in.offset());
}

void Slice::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  int64_t off = in.offset();
  Strides s(in.ndim());
  for (int i = 0; i < in.ndim(); ++i) {
    if (out.shape()[i] > 0) off += start_[i] * in.strides()[i];
    s[i] = in.strides()[i] * step_[i];
  }
  out.set_data(in.buffer(), std::move(s), out.size() ? off : in.offset());
}

void AsStrided::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  if (in.row_contiguous()) {
    out.set_data(in.buffer(), strides_, in.offset() + offset_);
  } else {
    auto buf = allocator::malloc(static_cast<size_t>(in.nbytes()));
    cpu::copy_to_dense(in, buf->ptr());
    out.set_data(std::move(buf), strides_, offset_);
  }
}

void Contiguous::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  bool col = false;
  if (allow_col_ && in.ndim() >= 1) {
    // column-major: reversed row-major strides
    col = true;
    int64_t acc = 1;
    for (int i = 0; i < in.ndim(); ++i) {
      if (in.shape()[i] != 1 && in.strides()[i] != acc) col = false;
      acc *= in.shape()[i];
    }
  }
  if (in.row_contiguous() || col) {
    out.set_data(in.buffer(), in.strides(), in.offset());
  } else {
    dense_copy(in, out);
  }
}

void Full::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  outputs[0].alloc();
  cpu::copy_to(inputs[0], outputs[0]);
}

void Arange::eval_cpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.alloc();
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    int64_t n = out.size();
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // exact integer stepping from the first two values in the integer
      // dtype (NumPy's and MLX's rule: arange(0.5, 5.2, 1.5, int) = 0, 2, 4, 6)
      const int64_t s0 = scalar_cast<int64_t>(start_);
      const int64_t st = scalar_cast<int64_t>(start_ + step_) - s0;
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(s0 + i * st);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = cpu::convert<T>(start_ + static_cast<double>(i) * step_);
    }
  });
}

void Concatenate::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.alloc();
  int64_t pos = 0;
  for (auto& in : inputs) {
    if (in.size() > 0) {
      char* dst = out.data<char>() + pos * out.strides()[axis_] * out.itemsize();
      cpu::copy_into(in, in.shape(), in.strides(), in.data<char>(), out.dtype(), out.strides(), dst);
    }
    pos += in.shape()[axis_];
  }
}

void Pad::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  out.alloc();
  cpu::copy_to(inputs[1], out);
  if (in.size() == 0) return;
  int64_t off = 0;
  for (int i = 0; i < out.ndim(); ++i) off += low_[i] * out.strides()[i];
  cpu::copy_into(in, in.shape(), in.strides(), in.data<char>(), out.dtype(), out.strides(),
                 out.data<char>() + off * out.itemsize());
}

void View::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  if (in.row_contiguous() && (in.offset() * in.itemsize()) % out.itemsize() == 0) {
    out.set_data(in.buffer(), row_strides(out.shape()), in.offset() * in.itemsize() / out.itemsize());
  } else {
    auto buf = allocator::malloc(static_cast<size_t>(in.nbytes()));
    cpu::copy_to_dense(in, buf->ptr());
    out.set_data(std::move(buf));
  }
}

bool Transpose::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Transpose*>(&o);
  return p && p->axes_ == axes_;
}
bool Slice::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Slice*>(&o);
  return p && p->start_ == start_ && p->stop_ == stop_ && p->step_ == step_;
}
bool AsStrided::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const AsStrided*>(&o);
  return p && p->shape_ == shape_ && p->strides_ == strides_ && p->offset_ == offset_;
}
bool Contiguous::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Contiguous*>(&o);
  return p && p->allow_col_ == allow_col_;
}
bool Arange::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Arange*>(&o);
  return p && p->start_ == start_ && p->step_ == step_ && p->n_ == n_ && p->dtype_ == dtype_;
}
bool Concatenate::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Concatenate*>(&o);
  return p && p->axis_ == axis_;
}
bool Pad::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Pad*>(&o);
  return p && p->low_ == low_ && p->high_ == high_;
}

}  // namespace ember
