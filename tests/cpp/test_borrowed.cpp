// Borrowed buffers at the engine level (what DLPack, the buffer protocol and
// memory-mapped files build on): the release function runs exactly once,
// when the last array, view or graph node lets go; borrowed memory is not
// active memory, never enters the cache and is never donated to an output;
// array::from_buffer refuses strides that leave the buffer.
//
//   cmake -DEMBER_BUILD_TESTS=ON ... && ninja test_borrowed && ./test_borrowed
//
// Exit code 0 when every check holds; each failure is printed.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "ember/allocator.h"
#include "ember/array.h"
#include "ember/ops.h"
#include "ember/transforms/eval.h"

using namespace ember;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

template <class F>
void check_throws(F&& f, const char* what) {
  try {
    f();
  } catch (const std::invalid_argument&) {
    return;
  }
  std::printf("FAILED (no invalid_argument): %s\n", what);
  ++failures;
}

}  // namespace

int main() {
  std::vector<float> mem(16);
  for (int i = 0; i < 16; ++i) mem[i] = static_cast<float>(i - 8);
  const std::vector<float> orig = mem;
  int released = 0;
  auto make = [&] { return Buffer::borrowed(mem.data(), mem.size() * sizeof(float), [&] { ++released; }); };

  // lifetime: views and lazy nodes keep the buffer, the last one releases it
  allocator::clear_cache();
  size_t active = allocator::active_memory(), cached = allocator::cache_memory(), ours = 0;
  {
    array a = array::from_buffer(make(), {4, 4}, Dtype::float32, {4, 1}, 0, "test");
    check(a.buffer()->is_borrowed() && a.buffer()->capacity() == 0, "a borrowed buffer says so");
    check(allocator::active_memory() == active, "borrowed memory is not active memory");
    array t = transpose(a);
    array lazy = add(t, t);
    eval({t});
    { array drop = std::move(a); }
    check(released == 0, "the transposed view keeps the buffer");
    eval({lazy});
    check(lazy.data<float>()[1] == 2 * mem[4], "values through the transposed view");
    check(released == 0, "still viewed");
    ours = lazy.buffer()->capacity();  // Ember's block: cached when lazy goes
  }
  check(released == 1, "released once when the last user goes");
  check(allocator::cache_memory() == cached + ours, "borrowed memory never enters the cache");

  // no donation: the input held by its node alone keeps its memory
  {
    released = 0;
    array r = abs(array::from_buffer(make(), {16}, Dtype::float32, {1}, 0, "test"));
    eval({r});
    check(std::memcmp(mem.data(), orig.data(), mem.size() * sizeof(float)) == 0, "abs did not write the source");
    check(r.data<float>()[0] == 8.0f, "abs values");
    check(r.buffer() && !r.buffer()->is_borrowed(), "the output is Ember's");
    check(released == 1, "the input went after eval");
  }

  // strides and offsets: negative, zero, exact fit; refused outside the buffer
  {
    auto buf = make();
    array rev = array::from_buffer(buf, {4, 4}, Dtype::float32, {-4, -1}, 15, "test");
    array c = contiguous(rev);
    eval({c});
    check(c.data<float>()[0] == mem[15] && c.data<float>()[15] == mem[0], "negative strides");
    array bc = array::from_buffer(buf, {3, 16}, Dtype::float32, {0, 1}, 0, "test");
    check(!bc.row_contiguous(), "zero strides are not row-contiguous");
    array fit = array::from_buffer(buf, {2}, Dtype::float32, {15}, 0, "test");
    check(fit.size() == 2, "the last element may be the buffer's last");
    array empty = array::from_buffer(buf, {0, 5}, Dtype::float32, {1000, 1000}, 0, "test");
    check(empty.size() == 0, "an empty array addresses nothing");
    check_throws([&] { array::from_buffer(buf, {2}, Dtype::float32, {16}, 0, "test"); }, "one past the end");
    check_throws([&] { array::from_buffer(buf, {4, 4}, Dtype::float32, {-4, -1}, 14, "test"); }, "below the start");
    check_throws([&] { array::from_buffer(buf, {16}, Dtype::float32, {1}, 1, "test"); }, "offset past the end");
    check_throws([&] { array::from_buffer(buf, {16}, Dtype::float64, {1}, 0, "test"); }, "wider elements");
    check_throws([&] { array::from_buffer(buf, {3}, Dtype::float32, {int64_t(1) << 62}, 0, "test"); },
                 "stride overflow");
    check_throws([&] { array::from_buffer(buf, {3}, Dtype::float32, {1, 1}, 0, "test"); }, "strides of another rank");
    check_throws([&] { array::from_buffer(nullptr, {3}, Dtype::float32, {1}, 0, "test"); }, "no buffer");
  }

  if (failures == 0) std::printf("test_borrowed: all checks passed\n");
  return failures ? 1 : 0;
}
