// Fits a small MLP (1 -> 32 -> 32 -> 1, tanh) to y = sin(3x) + noise with
// value_and_grad and an Adam loop written in C++, printing the loss as it
// falls. The step (loss, gradients and the Adam update) is compiled once
// with ember::compile and replayed on every iteration.
//
//   fit [steps]        (default 300)
//
// The last line is "final loss <L> initial loss <L0>".
#include <ember/ember.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace ember;

namespace {

// params: w1 (1, 32), b1 (32), w2 (32, 32), b2 (32), w3 (32, 1), b3 (1)
array forward(const std::vector<array>& p, const array& x) {
  array h = tanh(matmul(x, p[0]) + p[1]);
  h = tanh(matmul(h, p[2]) + p[3]);
  return matmul(h, p[4]) + p[5];
}

std::vector<array> init_params(const array& key) {
  array keys = random::split(key, 3);
  auto layer = [&](int i, int64_t in, int64_t out) {
    array k = take(keys, scalar(i), 0);
    array w = random::normal({in, out}, Dtype::float32, {}, scalar(static_cast<float>(1.0 / std::sqrt(in))), k);
    return std::vector<array>{w, zeros({out})};
  };
  std::vector<array> p;
  for (auto& l : {layer(0, 1, 32), layer(1, 32, 32), layer(2, 32, 1)}) p.insert(p.end(), l.begin(), l.end());
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  const int64_t n = 256;
  const float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;

  // the data: x in [-1, 1], y = sin(3x) + 0.05 noise
  array key = random::key(0);
  array keys = random::split(key, 3);
  array x = random::uniform(scalar(-1.0f), scalar(1.0f), {n, 1}, Dtype::float32, take(keys, scalar(0), 0));
  array y = sin(3.0f * x) + 0.05f * random::normal({n, 1}, Dtype::float32, {}, {}, take(keys, scalar(1), 0));

  std::vector<array> params = init_params(take(keys, scalar(2), 0));
  const size_t np = params.size();

  // loss of the parameters (arguments 0..np-1) on the data (np, np+1)
  ScalarFun loss = [np](const std::vector<array>& a) {
    std::vector<array> p(a.begin(), a.begin() + np);
    return mean(square(forward(p, a[np]) - a[np + 1]));
  };
  std::vector<int> argnums;
  for (size_t i = 0; i < np; ++i) argnums.push_back(static_cast<int>(i));
  ValueAndGradFun loss_and_grad = value_and_grad(loss, argnums);

  // one Adam step: inputs params, m, v, x, y, t; outputs loss, params, m, v
  Fun step = compile([&](const std::vector<array>& in) {
    std::vector<array> p(in.begin(), in.begin() + np);
    std::vector<array> m(in.begin() + np, in.begin() + 2 * np);
    std::vector<array> v(in.begin() + 2 * np, in.begin() + 3 * np);
    const array& t = in[3 * np + 2];
    std::vector<array> args = p;
    args.push_back(in[3 * np]);
    args.push_back(in[3 * np + 1]);
    auto [value, grads] = loss_and_grad(args);
    array c1 = 1.0f - power(scalar(beta1), t), c2 = 1.0f - power(scalar(beta2), t);
    std::vector<array> out = {value};
    std::vector<array> new_m, new_v;
    for (size_t i = 0; i < np; ++i) {
      new_m.push_back(beta1 * m[i] + (1.0f - beta1) * grads[i]);
      new_v.push_back(beta2 * v[i] + (1.0f - beta2) * square(grads[i]));
      out.push_back(p[i] - lr * (new_m[i] / c1) / (sqrt(new_v[i] / c2) + eps));
    }
    out.insert(out.end(), new_m.begin(), new_m.end());
    out.insert(out.end(), new_v.begin(), new_v.end());
    return out;
  });

  std::vector<array> m, v;
  for (const array& p : params) {
    m.push_back(zeros_like(p));
    v.push_back(zeros_like(p));
  }
  float initial = 0, last = 0;
  for (int t = 1; t <= steps; ++t) {
    std::vector<array> in = params;
    in.insert(in.end(), m.begin(), m.end());
    in.insert(in.end(), v.begin(), v.end());
    in.push_back(x);
    in.push_back(y);
    in.push_back(scalar(static_cast<float>(t)));
    std::vector<array> out = step(in);
    eval(out);
    for (size_t i = 0; i < np; ++i) {
      params[i] = out[1 + i];
      m[i] = out[1 + np + i];
      v[i] = out[1 + 2 * np + i];
    }
    last = item<float>(out[0]);
    if (t == 1) initial = last;
    if (t == 1 || t % 50 == 0) std::printf("step %4d  loss %.6f\n", t, last);
  }
  std::printf("final loss %.6f initial loss %.6f\n", last, initial);
  return last < initial ? 0 : 1;
}
