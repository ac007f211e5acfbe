// The primitives' traits that compile will use: is_equivalent (same class
// and same parameters), is_elementwise and is_view. Built against the
// engine's static library:
//
//   g++ -std=c++17 -I csrc tests/cpp/test_primitive_traits.cpp build/dev/libember.a
//     -L<scipy_openblas32 lib dir> -lscipy_openblas -lpthread -o /tmp/t && /tmp/t
//
// tests/python/test_cpp.py compiles and runs it against the build the
// Python package uses; EMBER_BUILD_TESTS builds it with CMake. Prints every
// failed check and exits 1 if there is one.
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "ember/ops.h"
#include "ember/ops/conv.h"
#include "ember/ops/fft.h"
#include "ember/ops/sort.h"
#include "ember/random/random.h"
#include "ember/transforms/transforms.h"

using namespace ember;

namespace {

int failures = 0;
int checks = 0;

void check(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

const Primitive& prim(const array& a, const std::string& what) {
  if (!a.has_primitive()) {
    std::printf("FAIL: %s has no primitive\n", what.c_str());
    std::exit(1);
  }
  return a.primitive();
}

// Both built the same way: equivalent (both ways round); `other` differs in
// its class or a parameter: not equivalent.
void equivalence(const std::string& what, const std::function<array()>& make, const std::function<array()>& other) {
  array a = make(), b = make(), c = other();
  const Primitive &pa = prim(a, what), &pb = prim(b, what), &pc = prim(c, what + " (other)");
  check(&pa != &pb, what + ": two nodes, two primitives");
  check(pa.is_equivalent(pb) && pb.is_equivalent(pa), what + ": equivalent to the same op");
  check(pa.is_equivalent(pa), what + ": equivalent to itself");
  check(!pa.is_equivalent(pc) && !pc.is_equivalent(pa), what + ": not equivalent to " + pc.name());
}

}  // namespace

int run() {
  const array x = reshape(arange(0, 24, 1, Dtype::float32), {2, 3, 4});
  const array y = add(x, array(1.0f, Dtype::float32));
  const array m = reshape(arange(0, 9, 1, Dtype::float32), {3, 3});
  const array idx = array(std::vector<int32_t>{0, 2}.data(), {2}, Dtype::int32);

  // ---- is_equivalent ----
  equivalence("exp", [&] { return exp(x); }, [&] { return log(x); });
  equivalence("add", [&] { return add(x, y); }, [&] { return subtract(x, y); });
  equivalence("less", [&] { return less(x, y); }, [&] { return greater(x, y); });
  equivalence("where", [&] { return where(less(x, y), x, y); }, [&] { return add(x, y); });
  equivalence("astype", [&] { return astype(x, Dtype::float16); }, [&] { return astype(x, Dtype::int32); });
  equivalence("sum", [&] { return sum(x, Axes{0}, true); }, [&] { return sum(x, Axes{1}, true); });
  equivalence("sum/prod", [&] { return sum(x, Axes{0}, true); }, [&] { return prod(x, Axes{0}, true); });
  equivalence("argmax", [&] { return argmax(x, 1, true); }, [&] { return argmin(x, 1, true); });
  equivalence("argmax axis", [&] { return argmax(x, 1, true); }, [&] { return argmax(x, 2, true); });
  equivalence("softmax", [&] { return softmax(x, Axes{-1}); }, [&] { return softmax(x, Axes{-1}, true); });
  equivalence("transpose", [&] { return transpose(x, Axes{2, 0, 1}); }, [&] { return transpose(x, Axes{1, 0, 2}); });
  equivalence("slice", [&] { return slice(x, {0, 0, 0}, {2, 3, 2}, {1, 1, 1}); },
              [&] { return slice(x, {0, 0, 1}, {2, 3, 3}, {1, 1, 1}); });
  equivalence("broadcast", [&] { return broadcast_to(x, {5, 2, 3, 4}); }, [&] { return broadcast_to(x, {6, 2, 3, 4}); });
  equivalence("reshape", [&] { return reshape(x, {6, 4}); }, [&] { return reshape(x, {4, 6}); });
  equivalence("as_strided", [&] { return as_strided(x, Shape{2, 2}, Strides{4, 1}, 0); },
              [&] { return as_strided(x, Shape{2, 2}, Strides{4, 1}, 1); });
  equivalence("as_strided shape", [&] { return as_strided(x, Shape{2, 2}, Strides{4, 1}, 0); },
              [&] { return as_strided(x, Shape{2, 3}, Strides{4, 1}, 0); });
  equivalence("arange length", [&] { return arange(0, 5, 1, Dtype::float32); },
              [&] { return arange(0, 6, 1, Dtype::float32); });
  equivalence("concatenate", [&] { return concatenate({x, y}, 0); }, [&] { return concatenate({x, y}, 1); });
  equivalence("pad", [&] { return pad(x, {{1, 1}, {0, 0}, {0, 0}}, "constant", array(0.0f, Dtype::float32)); },
              [&] { return pad(x, {{1, 0}, {0, 0}, {0, 0}}, "constant", array(0.0f, Dtype::float32)); });
  equivalence("arange", [&] { return arange(0, 5, 1, Dtype::float32); }, [&] { return arange(0, 5, 1, Dtype::int32); });
  equivalence("view", [&] { return view(x, Dtype::int32); }, [&] { return view(x, Dtype::uint32); });
  equivalence("to_fp8", [&] { return to_fp8(x); }, [&] { return astype(x, Dtype::uint8); });
  equivalence("from_fp8", [&] { return from_fp8(to_fp8(x), Dtype::float16); },
              [&] { return from_fp8(to_fp8(x), Dtype::float32); });
  equivalence("take", [&] { return take(x, idx, 2); }, [&] { return take(x, idx, 1); });
  equivalence("scatter-add", [&] { return scatter(x, {idx}, ones({2, 3, 4}), {0}, ScatterKind::Add); },
              [&] { return scatter(x, {idx}, ones({2, 3, 4}), {0}, ScatterKind::Max); });
  equivalence("sort", [&] { return sort(x, 1); }, [&] { return sort(x, 2); });
  equivalence("sort/argsort", [&] { return sort(x, -1); }, [&] { return argsort(x, -1); });
  equivalence("topk", [&] { return topk(x, 2, -1); }, [&] { return topk(x, 3, -1); });
  equivalence("cumsum", [&] { return cumsum(x, 1); }, [&] { return cumsum(x, 1, true); });
  equivalence("searchsorted", [&] { return searchsorted(sort(reshape(x, {24}), -1), y, "left"); },
              [&] { return searchsorted(sort(reshape(x, {24}), -1), y, "right"); });
  equivalence("matmul", [&] { return matmul(m, m); }, [&] { return add(m, m); });
  equivalence("fft", [&] { return fft::fft(x); }, [&] { return fft::ifft(x); });
  equivalence("conv1d", [&] { return conv1d(reshape(x, {1, 6, 4}), ones({2, 3, 4})); },
              [&] { return conv1d(reshape(x, {1, 6, 4}), ones({2, 3, 4}), 2); });
  equivalence("random bits", [&] { return random::bits({3}, 4, random::key(1)); },
              [&] { return random::bits({4}, 2, random::key(1)); });

  // ---- is_elementwise ----
  for (auto [name, a] : std::vector<std::pair<const char*, array>>{
           {"exp", exp(x)}, {"abs", abs(x)}, {"add", add(x, y)}, {"equal", equal(x, y)},
           {"where", where(less(x, y), x, y)}, {"astype", astype(x, Dtype::int32)}, {"to_fp8", to_fp8(x)},
           {"from_fp8", from_fp8(to_fp8(x))}}) {
    check(prim(a, name).is_elementwise(), std::string(name) + " is elementwise");
    check(!prim(a, name).is_view(), std::string(name) + " is no view");
  }
  for (auto [name, a] : std::vector<std::pair<const char*, array>>{
           {"sum", sum(x)}, {"matmul", matmul(m, m)}, {"sort", sort(x)}, {"take", take(x, idx, 0)},
           {"cumsum", cumsum(x, 0)}, {"softmax", softmax(x, Axes{-1})}, {"transpose", transpose(x)},
           {"concatenate", concatenate({x, y}, 0)}}) {
    check(!prim(a, name).is_elementwise(), std::string(name) + " is not elementwise");
  }

  // ---- is_view: the output aliases input 0's buffer ----
  for (auto [name, a] : std::vector<std::pair<const char*, array>>{
           {"transpose", transpose(x)}, {"broadcast_to", broadcast_to(x, {2, 2, 3, 4})},
           {"slice", slice(x, {0, 0, 0}, {1, 3, 4}, {1, 1, 1})},
           {"as_strided", as_strided(x, Shape{4}, Strides{1}, 0)}, {"view", view(x, Dtype::int32)},
           {"stop_gradient", stop_gradient(x)}}) {
    check(prim(a, name).is_view(), std::string(name) + " is a view");
    check(!prim(a, name).is_elementwise(), std::string(name) + " is not elementwise");
    // evaluated, it shares input 0's memory
    x.eval();
    a.eval();
    const char* base = x.data<char>();
    const char* p = a.data<char>();
    check(p >= base && p < base + x.nbytes(), std::string(name) + " evaluates to a view of its input");
  }
  for (auto [name, a] : std::vector<std::pair<const char*, array>>{
           {"exp", exp(x)}, {"sum", sum(x)}, {"concatenate", concatenate({x, y}, 0)}, {"sort", sort(x)},
           {"contiguous", contiguous(transpose(x))}}) {
    check(!prim(a, name).is_view(), std::string(name) + " is no view");
  }

  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::printf("FAIL: exception: %s\n", e.what());
    return 1;
  }
}
