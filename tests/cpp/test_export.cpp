// The C++ interface of export and import (ember/compile/export.h), as a
// program linking libember.a uses it: export a function, import it, call
// it with positional and keyword arrays, and the errors of a call that
// matches no trace and of a damaged file.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include "ember/compile/export.h"
#include "ember/ops.h"

using namespace ember;

static int failures = 0;
#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::cout << "FAIL line " << __LINE__ << ": " #cond << "\n";  \
      ++failures;                                                    \
    }                                                                \
  } while (0)

static bool close_to(const array& a, const std::vector<float>& want) {
  array c = astype(a, Dtype::float32);
  c.eval();
  if (c.size() != static_cast<int64_t>(want.size())) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(c.data<float>()[i] - want[i]) > 1e-5f) return false;
  }
  return true;
}

int main() {
  const std::string path = "test_export_cpp.emfn";
  float xs[] = {1, 2, 3, 4};
  float ys[] = {0.5f, -1, 2, 0};
  array x(xs, {4}, Dtype::float32), y(ys, {4}, Dtype::float32);
  export_function(
      path, [](const std::vector<array>& a) { return std::vector<array>{add(multiply(a[0], a[1]), array(1.0f, Dtype::float32)), ember::sum(a[0])}; },
      {x, y});
  ImportedFunction f = import_function(path);
  CHECK(f.traces.size() == 1);
  auto out = f({x, y});
  CHECK(out.size() == 2);
  CHECK(close_to(out[0], {1.5f, -1, 7, 1}));
  CHECK(close_to(out[1], {10}));
  // the keyword form with no keywords is the same call
  CHECK(close_to(f({y, x}, {})[0], {1.5f, -1, 7, 1}));

  bool raised = false;
  try {
    f({x});
  } catch (const std::invalid_argument& e) {
    raised = std::string(e.what()).find("No imported function") != std::string::npos;
  }
  CHECK(raised);

  // shapeless: other lengths of the same rank
  export_function(path, [](const std::vector<array>& a) { return std::vector<array>{subtract(ember::exp(a[0]), a[0])}; }, {x}, true);
  ImportedFunction g = import_function(path);
  float zs[] = {0, 0, 0, 0, 0, 0};
  CHECK(close_to(g({array(zs, {6}, Dtype::float32)})[0], {1, 1, 1, 1, 1, 1}));

  // a truncated file raises invalid_argument (ValueError in Python)
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  raised = false;
  try {
    import_function(path);
  } catch (const std::invalid_argument&) {
    raised = true;
  }
  CHECK(raised);
  std::remove(path.c_str());

  if (failures) return 1;
  std::cout << "test_export: ok\n";
  return 0;
}
