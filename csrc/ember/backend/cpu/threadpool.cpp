#include "ember/backend/cpu/threadpool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace ember::cpu {

namespace {

thread_local bool t_in_pool = false;

class Pool {
 public:
  explicit Pool(int n) : nthreads_(n) {
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
  }
  // The pool is created once and deliberately never destroyed (workers may
  // still be parked at process exit; the OS reclaims them).
  int size() const { return nthreads_; }

  void run(int64_t nchunks, const std::function<void(int64_t)>& chunk) {
    std::lock_guard<std::mutex> job_lock(job_mu_);  // one job at a time
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = &chunk;
      total_ = nchunks;
      next_.store(0);
      done_.store(0);
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    cv_.notify_all();
    work();
    // Wait for the workers to finish the chunks they took: briefly by
    // watching (they are usually about done), then asleep.
    spin_until([&] { return done_.load(std::memory_order_acquire) == total_ && active_.load() == 0; });
    std::unique_lock<std::mutex> l(mu_);
    done_cv_.wait(l, [&] { return done_.load() == total_ && active_ == 0; });
    job_ = nullptr;
  }

 private:
  void work() {
    bool prev = t_in_pool;
    t_in_pool = true;
    int64_t i;
    int64_t finished = 0;
    while ((i = next_.fetch_add(1)) < total_) {
      (*job_)(i);
      ++finished;
    }
    t_in_pool = prev;
    if (finished && done_.fetch_add(finished) + finished == total_) {
      std::lock_guard<std::mutex> l(mu_);
      done_cv_.notify_all();
    }
  }
  void loop() {
    uint64_t seen = 0;
    while (true) {
      // Parallel ops tend to come in runs: watch for the next job for a few
      // microseconds before sleeping, so it starts without a futex wake-up
      // (which costs more than a small job's whole share of the work).
      spin_for_job(seen);
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!job_) continue;
      ++active_;
      l.unlock();
      work();
      l.lock();
      if (--active_ == 0) done_cv_.notify_all();
    }
  }

  void spin_for_job(uint64_t seen) const {
    spin_until([&] { return published_.load(std::memory_order_acquire) != seen; });
  }

  // Polls ready() for up to kSpinMicros; the caller then blocks as usual.
  template <class F>
  static void spin_until(F ready) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int i = 0;; ++i) {
      if (ready()) return;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }

  int nthreads_;
  std::vector<std::thread> workers_;
  std::mutex mu_, job_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t total_ = 0;
  std::atomic<int64_t> next_{0}, done_{0};
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, readable without mu_
  static constexpr int kSpinMicros = 30;
  std::atomic<int> active_{0};  // workers inside work(); run() returns only at zero
  bool stop_ = false;
};

Pool& pool() {
  static Pool* p = [] {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("EMBER_NUM_THREADS")) n = std::atoi(env);
    return new Pool(std::max(1, std::min(n, 64)));
  }();
  return *p;
}

}  // namespace

int num_threads() { return pool().size(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int nt = (t_in_pool || n < 2 * grain) ? 1 : num_threads();
  if (nt <= 1) {
    f(0, n);
    return;
  }
  int64_t nchunks = std::min<int64_t>(nt, n / grain);
  int64_t per = (n + nchunks - 1) / nchunks;
  std::function<void(int64_t)> chunk = [&](int64_t c) {
    int64_t b = c * per, e = std::min(n, b + per);
    if (b < e) f(b, e);
  };
  pool().run(nchunks, chunk);
}

}  // namespace ember::cpu
