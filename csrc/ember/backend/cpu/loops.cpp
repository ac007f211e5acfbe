#include "ember/backend/cpu/loops.h"

#include <algorithm>

#include "ember/backend/cpu/small_buffer.h"

namespace ember::cpu {

void for_each_row_impl(int nops, const Shape& shape, const int64_t* const* strides, char* const* base,
                       const int* itemsize, RowFn fn, void* ctx, int64_t grain) {
  int64_t total = 1;
  for (auto d : shape) total *= d;
  if (total == 0) return;
  // Drop size-1 dims and merge dims that are contiguous for every operand
  // (any number of operands: compile's fused kernels take one per input):
  // cshape[nd], operand k's strides at cst[k * cap + d], its inner stride
  // at inner[k]
  const int cap = std::max<int>(1, static_cast<int>(shape.size()));
  SmallBuffer<int64_t, 64> mem(cap + int64_t(nops) * cap + nops);
  int64_t *cshape = mem.data, *cst = cshape + cap, *inner = cst + int64_t(nops) * cap;
  int nd = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = nd > 0;
    for (int k = 0; k < nops && merge; ++k) merge = cst[k * cap + nd - 1] == strides[k][d] * shape[d];
    if (merge) {
      cshape[nd - 1] *= shape[d];
      for (int k = 0; k < nops; ++k) cst[k * cap + nd - 1] = strides[k][d];
    } else {
      cshape[nd] = shape[d];
      for (int k = 0; k < nops; ++k) cst[k * cap + nd] = strides[k][d];
      ++nd;
    }
  }
  if (nd == 0) {
    cshape[0] = 1;
    for (int k = 0; k < nops; ++k) cst[k * cap] = 1;
    nd = 1;
  }
  const int64_t len = cshape[nd - 1];
  for (int k = 0; k < nops; ++k) inner[k] = cst[k * cap + nd - 1];

  auto run_range = [&](int64_t begin, int64_t end) {
    SmallBuffer<int64_t, 16> idx_s(nd);
    SmallBuffer<char*, 16> p_s(nops);
    int64_t* idx = idx_s.data;
    char** p = p_s.data;
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % cshape[d];
      rem /= cshape[d];
    }
    for (int k = 0; k < nops; ++k) {
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += idx[d] * cst[k * cap + d];
      p[k] = base[k] + off * itemsize[k];
    }
    int64_t pos = begin;
    while (pos < end) {
      int64_t n = std::min(len - idx[nd - 1], end - pos);
      fn(ctx, p, inner, n);
      pos += n;
      // advance the multi-index by n (to the end of the row or of the range)
      idx[nd - 1] += n;
      for (int k = 0; k < nops; ++k) p[k] += n * inner[k] * itemsize[k];
      for (int d = nd - 1; d > 0 && idx[d] == cshape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (int k = 0; k < nops; ++k) p[k] += (cst[k * cap + d - 1] - cshape[d] * cst[k * cap + d]) * itemsize[k];
      }
    }
  };
  parallel_for(total, grain, run_range);
}

}  // namespace ember::cpu
