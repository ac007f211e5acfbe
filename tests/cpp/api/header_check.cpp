// The public headers compile on their own, warning-free under
// -std=c++17 -Wall -Wextra -pedantic -Werror, with nothing on the include
// path but Ember's (no pybind11, OpenBLAS or MPI header). Compiled by
// tests/cpp/api/CMakeLists.txt against the installed package and by
// tests/python/test_cpp_api.py against the source tree. The templates of
// ember.h are instantiated so that their bodies are checked too.
#include <ember/ember.h>

namespace {

[[maybe_unused]] void instantiate() {
  using namespace ember;
  array a = from_vector({1.0f, 2.0f}, {2});
  array b = from_vector(std::vector<int32_t>{1, 2});
  int16_t raw[2] = {1, 2};
  array c = from_data(raw, {2});
  const double cd[1] = {1.0};
  array d = borrow(cd, {1});
  array e = a + b * 2 - 1.5 / (c + 1) + (a < 1.0f) * d;
  e = -e % 3u;
  eval(e, a, b);
  [[maybe_unused]] auto v = to_vector<bool>(e > 0);
  [[maybe_unused]] auto w = to_vector<complex64_t>(e);
  [[maybe_unused]] uint8_t i = item<uint8_t>(sum(e));
  [[maybe_unused]] float16_t h = item<float16_t>(sum(e));
  [[maybe_unused]] array s = scalar(bfloat16_t(1.0f));
}

}  // namespace

int main() { return 0; }
