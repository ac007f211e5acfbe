#include "ember/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

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

  void trim_locked(size_t target) {
    while (cached > target && !cache.empty()) {
      auto last = std::prev(cache.end());  // free the largest blocks first
      cached -= last->first;
      std::free(last->second);
      cache.erase(last);
    }
  }
};

State& state() {
  static State* s = new State();  // never destroyed: buffers may outlive statics
  return *s;
}

}  // namespace

Buffer::~Buffer() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.active -= capacity_;
  if (s.cache_limit > 0 && capacity_ <= s.cache_limit) {
    s.cache.emplace(capacity_, ptr_);
    s.cached += capacity_;
    if (s.cached > s.cache_limit) s.trim_locked(s.cache_limit);
  } else {
    std::free(ptr_);
  }
}

namespace allocator {

std::shared_ptr<Buffer> malloc(size_t nbytes) {
  size_t size = block_size(nbytes);
  auto& s = state();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // Reuse a cached block of the same size, or one at most 25% larger.
    auto it = s.cache.lower_bound(size);
    if (it != s.cache.end() && it->first <= size + size / 4) {
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
    p = std::aligned_alloc(kAlign, size);
    if (!p) {
      clear_cache();
      p = std::aligned_alloc(kAlign, size);
      if (!p) throw std::bad_alloc();
    }
    if (size >= kHuge) madvise(p, size, MADV_HUGEPAGE);
    std::lock_guard<std::mutex> lock(s.mu);
    s.active += size;
    if (s.active > s.peak) s.peak = s.active;
  }
  return std::make_shared<Buffer>(p, nbytes, size);
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

}  // namespace allocator
}  // namespace ember
