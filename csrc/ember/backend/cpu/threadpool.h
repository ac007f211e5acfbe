// A tiny fork-join pool: parallel_for splits [0, n) across the cores when
// the work is large enough to pay for the hand-off (~100k elements here).
#pragma once

#include <cstdint>
#include <functional>

namespace ember::cpu {

int num_threads();
// f(begin, end) over [0, n), in chunks of at least `grain` items; runs inline
// when n < 2 * grain, when there is one core, or when called from a worker.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

}  // namespace ember::cpu
