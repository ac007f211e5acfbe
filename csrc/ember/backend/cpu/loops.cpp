#include "ember/backend/cpu/loops.h"

#include <algorithm>

namespace ember::cpu {

namespace {

// Any number of operands (compile's fused kernels take one per input).
struct Collapsed {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;
};

// Drop size-1 dims and merge dims that are contiguous for every operand.
Collapsed collapse(int nops, const Shape& shape, const int64_t* const* strides) {
  Collapsed c;
  c.strides.resize(nops);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !c.shape.empty();
    for (int k = 0; k < nops && merge; ++k) merge = c.strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      c.shape.back() *= shape[d];
      for (int k = 0; k < nops; ++k) c.strides[k].back() = strides[k][d];
    } else {
      c.shape.push_back(shape[d]);
      for (int k = 0; k < nops; ++k) c.strides[k].push_back(strides[k][d]);
    }
  }
  if (c.shape.empty()) {
    c.shape.push_back(1);
    for (int k = 0; k < nops; ++k) c.strides[k].push_back(1);
  }
  return c;
}
}  // namespace

void for_each_row_impl(int nops, const Shape& shape, const int64_t* const* strides, char* const* base,
                       const int* itemsize, RowFn fn, void* ctx, int64_t grain) {
  int64_t total = 1;
  for (auto d : shape) total *= d;
  if (total == 0) return;
  Collapsed c = collapse(nops, shape, strides);
  const int nd = static_cast<int>(c.shape.size());
  const int64_t len = c.shape[nd - 1];
  std::vector<int64_t> inner_s(nops);
  for (int k = 0; k < nops; ++k) inner_s[k] = c.strides[k][nd - 1];

  auto run_range = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(nd, 0);
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % c.shape[d];
      rem /= c.shape[d];
    }
    std::vector<char*> p(nops);
    for (int k = 0; k < nops; ++k) {
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += idx[d] * c.strides[k][d];
      p[k] = base[k] + off * itemsize[k];
    }
    int64_t pos = begin;
    while (pos < end) {
      int64_t n = std::min(len - idx[nd - 1], end - pos);
      fn(ctx, p.data(), inner_s.data(), n);
      pos += n;
      // advance the multi-index by n (to the end of the row or of the range)
      idx[nd - 1] += n;
      for (int k = 0; k < nops; ++k) p[k] += n * inner_s[k] * itemsize[k];
      for (int d = nd - 1; d > 0 && idx[d] == c.shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (int k = 0; k < nops; ++k) p[k] += (c.strides[k][d - 1] - c.shape[d] * c.strides[k][d]) * itemsize[k];
      }
    }
  };
  parallel_for(total, grain, run_range);
}

}  // namespace ember::cpu
