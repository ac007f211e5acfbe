#include "ember/backend/cpu/loops.h"

#include <algorithm>
#include <cstdlib>

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

  // An operand that runs along the second-last dim (a transposed view: a
  // short stride there, a long one along the last dim) would read one
  // element per cache line and per page along each run. The last two dims
  // then go in square tiles of kTile x kTile (runs of kTile elements), whose
  // rows share those lines and pages; each element is still visited once.
  constexpr int64_t kTile = 128;
  bool tiled = false;
  if (nd >= 2 && len >= 2 * kTile && cshape[nd - 2] >= 2 * kTile) {
    for (int k = 0; k < nops; ++k) {
      const int64_t across = std::abs(inner[k]), down = std::abs(cst[k * cap + nd - 2]);
      tiled |= down >= 1 && down * 16 <= across && across >= kTile;
    }
  }
  if (tiled) {
    const int64_t rows = cshape[nd - 2], rb = (rows + kTile - 1) / kTile, cb = (len + kTile - 1) / kTile;
    const int64_t per_outer = rb * cb, units = total / (rows * len) * per_outer;
    auto run_tiles = [&](int64_t begin, int64_t end) {
      SmallBuffer<char*, 16> p_s(nops);
      char** p = p_s.data;
      for (int64_t u = begin; u < end; ++u) {
        const int64_t o = u / per_outer, t = u % per_outer;  // outer index, tile
        const int64_t i0 = t / cb * kTile, j0 = t % cb * kTile;
        const int64_t i1 = std::min(rows, i0 + kTile), n = std::min(len, j0 + kTile) - j0;
        for (int k = 0; k < nops; ++k) {
          int64_t off = i0 * cst[k * cap + nd - 2] + j0 * inner[k];
          for (int64_t d = nd - 3, q = o; d >= 0; --d) {
            off += (q % cshape[d]) * cst[k * cap + d];
            q /= cshape[d];
          }
          p[k] = base[k] + off * itemsize[k];
        }
        for (int64_t i = i0; i < i1; ++i) {
          fn(ctx, p, inner, n);
          for (int k = 0; k < nops; ++k) p[k] += cst[k * cap + nd - 2] * itemsize[k];
        }
      }
    };
    parallel_for(units, std::max<int64_t>(1, grain / (kTile * kTile)), run_tiles);
    return;
  }

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
