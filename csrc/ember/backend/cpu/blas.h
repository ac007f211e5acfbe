// Shared by the kernels that call OpenBLAS (the scipy-openblas32 wheel's
// symbols carry a scipy_ prefix).
#pragma once

#include <cblas.h>

namespace ember::cpu {

// OpenBLAS's own threads busy-wait for each other and stall for whole
// scheduler ticks when the cores are shared. Kernels split their work over
// Ember's pool instead (whose caller takes every chunk a late worker has not)
// and hold OpenBLAS to one thread for the duration. The setting is global to
// the library; Ember's evaluations, its only callers, run one at a time.
struct SingleThreadedBlas {
  int prev;
  SingleThreadedBlas() : prev(scipy_openblas_get_num_threads()) {
    if (prev > 1) scipy_openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (prev > 1) scipy_openblas_set_num_threads(prev);
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

}  // namespace ember::cpu
