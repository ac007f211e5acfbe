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
// flat index range across the thread pool when the work is big enough. An
// operand that runs along the second-last dim (a transposed view) gets the
// last two dims walked in square tiles instead (loops.cpp). The
// per-dtype inner loops (`run_unary`, `run_binary` below) add fast paths for
// all-contiguous and scalar-broadcast runs, written so the compiler emits
// SIMD code for them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/array.h"
#include "ember/backend/cpu/isa.h"
#include "ember/backend/cpu/threadpool.h"

namespace ember::cpu {

constexpr int64_t kParallelGrain = 1 << 16;  // elements per thread, at least

// A run of n elements: p[k] points at operand k's first element, s[k] is its
// stride in elements.
using RowFn = void (*)(void* ctx, char* const* p, const int64_t* s, int64_t n);

// The engine proper (loops.cpp): not a template, so each kernel only
// instantiates its inner loop.
void for_each_row_impl(int nops, const Shape& shape, const int64_t* const* strides, char* const* base,
                       const int* itemsize, RowFn fn, void* ctx, int64_t grain);

inline namespace EMBER_ISA_NS {  // one copy per ISA level (backend/cpu/isa.h)
// Calls inner(ptrs, inner_strides, n) for runs along the last merged dim.
template <int N, class F>
void for_each_row(const Shape& shape, const std::array<const int64_t*, N>& strides,
                  const std::array<char*, N>& base, const std::array<int, N>& itemsize, F&& inner,
                  int64_t grain = kParallelGrain) {
  using Fn = std::remove_reference_t<F>;
  RowFn thunk = [](void* ctx, char* const* p, const int64_t* s, int64_t n) {
    std::array<char*, N> pp;
    std::array<int64_t, N> ss;
    for (int k = 0; k < N; ++k) {
      pp[k] = p[k];
      ss[k] = s[k];
    }
    (*static_cast<Fn*>(ctx))(pp, ss, n);
  };
  for_each_row_impl(N, shape, strides.data(), base.data(), itemsize.data(), thunk,
                    const_cast<void*>(static_cast<const void*>(&inner)), grain);
}

// Work sharing: task(i, state) for i in [0, n) on every thread, each
// claiming the next task when it is done with one (so a core that is busy
// elsewhere slows nobody down); make() builds one state per thread and
// done(state) ends that thread's share (a fence after streaming stores, say).
template <class Make, class Task, class Done>
void dynamic_for(int64_t n, Make&& make, Task&& task, Done&& done) {
  if (n <= 0) return;
  if (n == 1 || num_threads() == 1) {
    auto st = make();
    for (int64_t i = 0; i < n; ++i) task(i, st);
    done(st);
    return;
  }
  std::atomic<int64_t> next{0};
  parallel_for(std::min<int64_t>(num_threads(), n), 1, [&](int64_t, int64_t) {
    auto st = make();
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) task(i, st);
    done(st);
  });
}
template <class Make, class Task>
void dynamic_for(int64_t n, Make&& make, Task&& task) {
  dynamic_for(n, std::forward<Make>(make), std::forward<Task>(task), [](auto&) {});
}
struct NoState {};
inline NoState no_state() { return {}; }

}  // namespace EMBER_ISA_NS
}  // namespace ember::cpu
