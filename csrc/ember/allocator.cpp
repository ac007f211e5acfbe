#include "ember/allocator.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace ember {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kHuge = size_t(2) << 20;

size_t total_ram() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : size_t(8) << 30;
}

// Rounded block size: small blocks in 64-byte classes, large in 4 KiB pages.
size_t block_size(size_t n) {
  if (n == 0) n = 1;
  size_t q = n < 16384 ? kAlign : 4096;
  return (n + q - 1) / q * q;
}

struct State {
  std::mutex mu;
  std::multimap<size_t, void*> cache;  // block size -> free block
  size_t active = 0, peak = 0, cached = 0;
  size_t mem_limit = total_ram() / 10 * 15 / 10;  // 1.5x RAM: a guide, as MLX
  size_t cache_limit = total_ram() / 4;
  size_t wired = 0, wired_limit = 0;
  std::unordered_map<void*, size_t> wired_blocks;  // mlock()ed block -> size

  // Frees a block (the caller holds mu), unlocking it first if wired.
  void free_block(void* p) {
    auto w = wired_blocks.find(p);
    if (w != wired_blocks.end()) {
      munlock(p, w->second);
      wired -= w->second;
      wired_blocks.erase(w);
    }
    std::free(p);
  }
  void trim_locked(size_t target) {
    while (cached > target && !cache.empty()) {
      auto last = std::prev(cache.end());  // free the largest blocks first
      cached -= last->first;
      free_block(last->second);
      cache.erase(last);
    }
  }
  // Unlocks wired blocks (they stay allocated) until the total fits the limit.
  void unwire_to_limit() {
    for (auto it = wired_blocks.begin(); wired > wired_limit && it != wired_blocks.end();) {
      munlock(it->first, it->second);
      wired -= it->second;
      it = wired_blocks.erase(it);
    }
  }
};

State& state() {
  static State* s = new State();  // never destroyed: buffers may outlive statics
  return *s;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::borrowed(void* ptr, size_t size, std::function<void()> release, bool readonly) {
  return std::shared_ptr<Buffer>(new Buffer(ptr, size, std::move(release), readonly));
}

Buffer::~Buffer() {
  if (borrowed_) {
    // not ours: hand it back to its owner (once), outside the allocator
    if (release_) {
      try {
        release_();
      } catch (...) {
      }
    }
    return;
  }
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.active -= capacity_;
  if (s.cache_limit > 0 && capacity_ <= s.cache_limit) {
    s.cache.emplace(capacity_, ptr_);
    s.cached += capacity_;
    if (s.cached > s.cache_limit) s.trim_locked(s.cache_limit);
  } else {
    s.free_block(ptr_);
  }
}

namespace allocator {

std::shared_ptr<Buffer> malloc(size_t nbytes) {
  size_t size = block_size(nbytes);
  auto& s = state();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // Reuse a cached block of the same size, or one at most 25% larger: of
    // the blocks of that size, the one freed last (equal keys keep their
    // insertion order), whose lines are the likeliest to be still in the
    // caches. Taking the oldest instead rotated a step's buffers through all
    // the cached blocks of their size: a compiled layer norm (16 MB in and
    // out) after a few eager ones wrote to memory at 20 GB/s instead of to
    // L3 at 38 (Intel, 2026-12-06).
    auto it = s.cache.lower_bound(size);
    if (it != s.cache.end() && it->first <= size + size / 4) {
      it = std::prev(s.cache.upper_bound(it->first));
      size = it->first;
      p = it->second;
      s.cached -= size;
      s.cache.erase(it);
    } else if (s.active + size > s.mem_limit && s.cached > 0) {
      s.trim_locked(0);  // over the memory limit: give the cache back first
    }
    if (p) {
      s.active += size;
      if (s.active > s.peak) s.peak = s.active;
    }
  }
  if (!p) {
    // Large blocks start on a 2 MiB boundary so that madvise can back them
    // with transparent huge pages (madvise needs a page-aligned start, and
    // streaming kernels lose a third of their bandwidth on 4 KiB pages).
    size_t align = size >= kHuge ? kHuge : kAlign;
    p = std::aligned_alloc(align, size);
    if (!p) {
      clear_cache();
      p = std::aligned_alloc(align, size);
      if (!p) throw std::bad_alloc();
    }
    if (size >= kHuge) madvise(p, size, MADV_HUGEPAGE);
    std::lock_guard<std::mutex> lock(s.mu);
    s.active += size;
    if (s.active > s.peak) s.peak = s.active;
    // Within the wired limit: lock the block in RAM (best effort; a refused
    // mlock leaves the block ordinary).
    if (s.wired_limit > 0 && s.wired + size <= s.wired_limit && mlock(p, size) == 0) {
      s.wired += size;
      s.wired_blocks.emplace(p, size);
    }
  }
  return std::shared_ptr<Buffer>(new Buffer(p, nbytes, size));
}

size_t active_memory() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().active;
}
size_t peak_memory() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().peak;
}
void reset_peak_memory() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().peak = state().active;
}
size_t cache_memory() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().cached;
}
void clear_cache() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().trim_locked(0);
}
size_t memory_limit() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().mem_limit;
}
size_t set_memory_limit(size_t limit) {
  std::lock_guard<std::mutex> lock(state().mu);
  size_t old = state().mem_limit;
  state().mem_limit = limit;
  return old;
}
size_t set_cache_limit(size_t limit) {
  std::lock_guard<std::mutex> lock(state().mu);
  size_t old = state().cache_limit;
  state().cache_limit = limit;
  state().trim_locked(limit);
  return old;
}

size_t set_wired_limit(size_t limit) {
  size_t ram = total_ram();
  if (limit >= ram) {
    throw std::runtime_error("[set_wired_limit] The wired limit (" + std::to_string(limit) +
                             " bytes) must be less than the memory size (" + std::to_string(ram) + " bytes).");
  }
  struct rlimit rl {};
  if (limit > 0 && geteuid() != 0 && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      limit > rl.rlim_cur) {
    throw std::runtime_error("[set_wired_limit] The wired limit (" + std::to_string(limit) +
                             " bytes) exceeds the system's locked-memory limit (RLIMIT_MEMLOCK, " +
                             std::to_string(rl.rlim_cur) + " bytes).");
  }
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  size_t old = s.wired_limit;
  s.wired_limit = limit;
  s.unwire_to_limit();
  return old;
}

}  // namespace allocator
}  // namespace ember
