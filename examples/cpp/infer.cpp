// Loads a classifier written from Python (make_weights.py: weights.safetensors
// holds two nn.Linear-style layers, the inputs "x" and metadata) and runs it:
// probabilities = softmax(relu(x W1^T + b1) W2^T + b2), one row per input.
//
//   infer weights.safetensors
//
// Prints "model: <metadata>" then, per row of x, "row <i>: <p0> <p1> <p2> class <k>".
#include <ember/ember.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace ember;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s weights.safetensors\n", argv[0]);
    return 2;
  }
  try {
    auto [w, meta] = load_safetensors(argv[1]);
    std::printf("model: %s\n", meta.count("model") ? meta.at("model").c_str() : "?");
    const array& x = w.at("x");
    array h = maximum(matmul(x, transpose(w.at("l1.weight"))) + w.at("l1.bias"), scalar(0.0f));
    array probs = softmax(matmul(h, transpose(w.at("l2.weight"))) + w.at("l2.bias"), Axes{-1});
    array cls = argmax(probs, -1);
    eval(probs, cls);
    std::vector<float> p = to_vector<float>(probs);
    std::vector<int64_t> c = to_vector<int64_t>(cls);
    const int64_t rows = probs.shape(0), cols = probs.shape(1);
    for (int64_t i = 0; i < rows; ++i) {
      std::printf("row %lld:", static_cast<long long>(i));
      for (int64_t j = 0; j < cols; ++j) std::printf(" %.7f", p[i * cols + j]);
      std::printf(" class %lld\n", static_cast<long long>(c[i]));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "infer: %s\n", e.what());
    return 1;
  }
  return 0;
}
