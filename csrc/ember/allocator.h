// Ember's allocator: every buffer Ember owns comes from here. Freed blocks are kept
// in a cache by size (bounded by the cache limit) so that repeated
// allocations of the same size cost nothing; blocks of 2 MiB and more are
// advised for transparent huge pages. Counters back get_active_memory & co.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace ember {

class Buffer;
namespace allocator {
std::shared_ptr<Buffer> malloc(size_t nbytes);
}

// The memory behind arrays, of one of two kinds:
// - a block of Ember's allocator (allocator::malloc): counted as active
//   memory while in use, returned to the cache when the last user goes;
// - borrowed memory Ember does not own (DLPack and buffer-protocol imports,
//   memory-mapped files): made by Buffer::borrowed with the owner's release
//   function, which runs once, when the last array (view, graph node input)
//   using the buffer lets go of it. Borrowed memory never enters the cache,
//   is not counted as active memory, has capacity() 0, and kernels never
//   donate it to an output or write into it.
class Buffer {
 public:
  // `size`: the bytes the owner lends from ptr (arrays made on the buffer are
  // checked against it). `release` may be empty; it must not throw. Where
  // the owner is a Python object, `release` takes the GIL itself: the last
  // user may let go of the buffer on any thread.
  static std::shared_ptr<Buffer> borrowed(void* ptr, size_t size, std::function<void()> release,
                                          bool readonly = false);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* ptr() const { return ptr_; }
  size_t size() const { return size_; }          // bytes requested (borrowed: bytes lent)
  size_t capacity() const { return capacity_; }  // bytes of the allocator's block (borrowed: 0)
  bool is_borrowed() const { return borrowed_; }
  bool readonly() const { return readonly_; }    // borrowed memory its owner lends read-only

 private:
  friend std::shared_ptr<Buffer> allocator::malloc(size_t nbytes);
  Buffer(void* ptr, size_t size, size_t capacity) : ptr_(ptr), size_(size), capacity_(capacity) {}
  Buffer(void* ptr, size_t size, std::function<void()> release, bool readonly)
      : ptr_(ptr), size_(size), capacity_(0), release_(std::move(release)), borrowed_(true), readonly_(readonly) {}

  void* ptr_;
  size_t size_;
  size_t capacity_;
  std::function<void()> release_;
  bool borrowed_ = false;
  bool readonly_ = false;
};

namespace allocator {
// Allocates nbytes (aligned to 64 bytes). Throws std::bad_alloc on failure.
// (Declared above, before Buffer.)
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
