// SmallBuffer: a kernel's bookkeeping or small task scratch without a heap
// block per call.
#pragma once

#include <cstdint>
#include <memory>

#include "ember/backend/cpu/isa.h"

namespace ember::cpu {

// One copy per ISA level (backend/cpu/isa.h), as every inline helper of
// the kernels: a shared one would be compiled with one level's instructions.
inline namespace EMBER_ISA_NS {

// n values of a trivial type T, uninitialised: inside the object (on the
// stack) up to N, on the heap beyond. A heap block per call costs a malloc,
// and one of 1 KB or more makes glibc merge its lists of freed small blocks
// (malloc_consolidate), which the next hundreds of small allocations (a
// compiled step's nodes) then pay for again.
template <class T, int64_t N>
struct SmallBuffer {
  alignas(64) T local[N];
  std::unique_ptr<T[]> heap;
  T* data;
  explicit SmallBuffer(int64_t n) {
    if (n <= N) {
      data = local;
    } else {
      heap.reset(new T[n]);
      data = heap.get();
    }
  }
  SmallBuffer(const SmallBuffer&) = delete;
  SmallBuffer& operator=(const SmallBuffer&) = delete;
};

}  // namespace EMBER_ISA_NS
}  // namespace ember::cpu
