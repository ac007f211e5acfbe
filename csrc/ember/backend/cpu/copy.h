// Strided copies with dtype conversion, used by AsType, contiguous copies,
// concatenation and padding.
#pragma once

#include "ember/array.h"

namespace ember::cpu {

// Copies src (viewed through shape/src_strides from src_base) into the
// destination layout, converting to dst_dtype.
void copy_into(const array& src, const Shape& shape, const Strides& src_strides, char* src_base,
               Dtype dst_dtype, const Strides& dst_strides, char* dst_base);
// src broadcast into dst's shape and layout (dst already has storage).
void copy_to(const array& src, array& dst);
// A dense copy of the (evaluated) array's elements into dst, row-major.
void copy_to_dense(const array& a, void* dst);
// n dense elements of dtype `from` at src converted to dtype `to` at dst
// (the level's vectorized casts, as astype).
void convert_dense(Dtype from, const void* src, Dtype to, void* dst, int64_t n);
// Strides of `a` broadcast to `shape` (0 where a has size 1 or is missing).
Strides broadcast_strides(const array& a, const Shape& shape);

}  // namespace ember::cpu
