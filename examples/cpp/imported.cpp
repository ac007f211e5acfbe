// Runs a function exported from Python (export.py: mx.export_function wrote
// fn.mlxfn) on the inputs saved beside it, through ember::import_function.
//
//   imported fn.mlxfn inputs.npz
//
// Prints, per row of the result, "row <i>: <v0> <v1> ...".
#include <ember/ember.h>

#include <cstdio>
#include <vector>

using namespace ember;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s fn.mlxfn inputs.npz\n", argv[0]);
    return 2;
  }
  try {
    ImportedFunction f = import_function(argv[1]);
    ArrayMap in = load_npz(argv[2]);
    std::vector<array> out = f({in.at("x"), in.at("y")});
    const array& r = out.at(0);
    std::vector<float> v = to_vector<float>(r);
    const int64_t rows = r.shape(0), cols = r.shape(1);
    for (int64_t i = 0; i < rows; ++i) {
      std::printf("row %lld:", static_cast<long long>(i));
      for (int64_t j = 0; j < cols; ++j) std::printf(" %.7f", v[i * cols + j]);
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imported: %s\n", e.what());
    return 1;
  }
  return 0;
}
