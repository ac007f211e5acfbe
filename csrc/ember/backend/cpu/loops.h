// The strided-loop engine every elementwise kernel runs on.
//
// Worked example — a binary kernel out = a + b with broadcasting:
//
//   // operand 0 is the output (dense), 1 and 2 are the inputs with their
//   // strides broadcast to out's shape (0 along broadcast dims)
//   cpu::for_each_row<3>(out.shape(), {out_strides, a_strides, b_strides},
//                        {out_ptr, a_ptr, b_ptr}, {4, 4, 4},
//       [](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
//         // one run of n elements; s[k] is operand k's stride (elements)
//       });
//
// The engine drops size-1 dims, merges dims that are contiguous for every
// operand (so a dense array is one run of `size` elements), and splits the
// flat index range across the thread pool when the work is big enough. The
// per-dtype inner loops (`run_unary`, `run_binary` below) add fast paths for
// all-contiguous and scalar-broadcast runs, written so the compiler emits
// SIMD code for them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ember/array.h"
#include "ember/backend/cpu/threadpool.h"

namespace ember::cpu {

constexpr int64_t kParallelGrain = 1 << 16;  // elements per thread, at least

// Shape and per-operand strides after dropping 1-dims and merging dims.
template <int N>
struct Collapsed {
  std::vector<int64_t> shape;
  std::array<std::vector<int64_t>, N> strides;
};

template <int N>
Collapsed<N> collapse(const Shape& shape, const std::array<const int64_t*, N>& strides) {
  Collapsed<N> c;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !c.shape.empty();
    for (int k = 0; k < N && merge; ++k) {
      merge = c.strides[k].back() == strides[k][d] * shape[d];
    }
    if (merge) {
      c.shape.back() *= shape[d];
      for (int k = 0; k < N; ++k) c.strides[k].back() = strides[k][d];
    } else {
      c.shape.push_back(shape[d]);
      for (int k = 0; k < N; ++k) c.strides[k].push_back(strides[k][d]);
    }
  }
  if (c.shape.empty()) {
    c.shape.push_back(1);
    for (int k = 0; k < N; ++k) c.strides[k].push_back(1);
  }
  return c;
}

// Calls inner(ptrs, inner_strides, n) for runs along the last collapsed dim.
// Pointers are byte pointers; strides are in elements of each operand.
template <int N, class F>
void for_each_row(const Shape& shape, const std::array<const int64_t*, N>& strides,
                  const std::array<char*, N>& base, const std::array<int, N>& itemsize, F&& inner,
                  int64_t grain = kParallelGrain) {
  int64_t total = 1;
  for (auto d : shape) total *= d;
  if (total == 0) return;
  Collapsed<N> c = collapse<N>(shape, strides);
  const int nd = static_cast<int>(c.shape.size());
  const int64_t len = c.shape[nd - 1];
  std::array<int64_t, N> inner_s;
  for (int k = 0; k < N; ++k) inner_s[k] = c.strides[k][nd - 1];

  auto run_range = [&](int64_t begin, int64_t end) {
    // multi-index of `begin`
    std::vector<int64_t> idx(nd, 0);
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % c.shape[d];
      rem /= c.shape[d];
    }
    std::array<char*, N> p;
    for (int k = 0; k < N; ++k) {
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += idx[d] * c.strides[k][d];
      p[k] = base[k] + off * itemsize[k];
    }
    int64_t pos = begin;
    while (pos < end) {
      int64_t n = std::min(len - idx[nd - 1], end - pos);
      inner(p, inner_s, n);
      pos += n;
      // advance the multi-index by n (n reaches the end of the row or `end`)
      idx[nd - 1] += n;
      for (int k = 0; k < N; ++k) p[k] += n * inner_s[k] * itemsize[k];
      for (int d = nd - 1; d > 0 && idx[d] == c.shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (int k = 0; k < N; ++k) {
          p[k] += (c.strides[k][d - 1] - c.shape[d] * c.strides[k][d]) * itemsize[k];
        }
      }
    }
  };
  parallel_for(total, grain, run_range);
}


}  // namespace ember::cpu
