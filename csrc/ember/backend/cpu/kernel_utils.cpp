// The helpers every kernel shares (buffer donation, the unsupported-dtype
// error, broadcast strides) and the entry points of the strided copy, which
// dispatch to the ISA level in use (the copy loops are in copy.cpp).
#include <sstream>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/isa.h"
#include "ember/backend/cpu/kernel_utils.h"

namespace ember {

namespace cpu {

bool can_donate(const array& in, const array& out) {
  // borrowed memory (DLPack, buffer protocol, mmap) is its owner's: never written
  return in.desc().use_count() == 1 && in.buffer() && in.buffer().use_count() == 1 &&
         !in.buffer()->is_borrowed() && in.row_contiguous() &&
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
  EMBER_ISA_CALL(copy_kernel)(src.dtype(), shape, src_strides, src_base, dst_dtype, dst_strides, dst_base);
}

void copy_to(const array& src, array& dst) {
  // src is broadcast to dst's shape; dst already has storage
  Strides ss = broadcast_strides(src, dst.shape());
  copy_into(src, dst.shape(), ss, src.data<char>(), dst.dtype(), dst.strides(), dst.data<char>());
}

void convert_dense(Dtype from, const void* src, Dtype to, void* dst, int64_t n) {
  if (n == 0) return;
  EMBER_ISA_CALL(copy_kernel)(from, Shape{n}, Strides{1}, static_cast<char*>(const_cast<void*>(src)), to, Strides{1},
                              static_cast<char*>(dst));
}

void copy_to_dense(const array& a, void* dst) {
  Strides ds = row_strides(a.shape());
  copy_into(a, a.shape(), a.strides(), a.data<char>(), a.dtype(), ds, static_cast<char*>(dst));
}

}  // namespace cpu

}  // namespace ember
