// Ember's allocator: every array buffer comes from here. Freed blocks are kept
// in a cache by size (bounded by the cache limit) so that repeated
// allocations of the same size cost nothing; blocks of 2 MiB and more are
// advised for transparent huge pages. Counters back get_active_memory & co.
#pragma once

#include <cstddef>
#include <memory>

namespace ember {

class Buffer {
 public:
  Buffer(void* ptr, size_t size, size_t capacity) : ptr_(ptr), size_(size), capacity_(capacity) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* ptr() const { return ptr_; }
  size_t size() const { return size_; }          // bytes requested
  size_t capacity() const { return capacity_; }  // bytes of the block

 private:
  void* ptr_;
  size_t size_;
  size_t capacity_;
};

namespace allocator {
// Allocates nbytes (aligned to 64 bytes). Throws std::bad_alloc on failure.
std::shared_ptr<Buffer> malloc(size_t nbytes);
size_t active_memory();
size_t peak_memory();
void reset_peak_memory();
size_t cache_memory();
void clear_cache();
size_t memory_limit();
size_t set_memory_limit(size_t limit);  // returns the previous limit
size_t set_cache_limit(size_t limit);   // returns the previous limit
// Blocks allocated while the locked total stays within this limit are
// mlock()ed (kept resident, never swapped) until they are freed. 0 (the
// default) locks nothing. Throws std::runtime_error above the process's
// RLIMIT_MEMLOCK (unless privileged) or at or above the physical memory.
size_t set_wired_limit(size_t limit);   // returns the previous limit
}  // namespace allocator

}  // namespace ember
