// The transforms' own primitives: all share an input's buffer when evaluated.
#include "ember/primitives/transform.h"

#include <stdexcept>

#include "ember/ops.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {
void share(const array& in, array& out) { out.set_data(in.buffer(), in.strides(), in.offset()); }
}  // namespace

// ---- Identity ----
void Identity::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share(inputs[0], outputs[0]);
}
std::vector<array> Identity::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                 const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}
std::vector<array> Identity::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                 const std::vector<int>&, const std::vector<array>&) {
  return {tangents[0]};
}
std::pair<std::vector<array>, std::vector<int>> Identity::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  return {{inputs[0]}, {axes[0]}};
}

// ---- StopGradient ----
void StopGradient::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share(inputs[0], outputs[0]);
}
std::pair<std::vector<array>, std::vector<int>> StopGradient::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  return {{stop_gradient(inputs[0])}, {axes[0]}};
}

// ---- Depends ----
void Depends::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (int i = 0; i < n_; ++i) share(inputs[i], outputs[i]);
}
std::vector<array> Depends::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> r;
  for (int i : argnums) r.push_back(i < n_ ? cotangents[i] : zeros_like(primals[i]));
  return r;
}
std::vector<array> Depends::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> r;
  for (int i = 0; i < n_; ++i) {
    array t = zeros_like(primals[i]);
    for (size_t k = 0; k < argnums.size(); ++k)
      if (argnums[k] == i) t = tangents[k];
    r.push_back(t);
  }
  return r;
}
std::pair<std::vector<array>, std::vector<int>> Depends::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  std::vector<array> ins(inputs.begin(), inputs.begin() + n_), deps(inputs.begin() + n_, inputs.end());
  return {depends(ins, deps), std::vector<int>(axes.begin(), axes.begin() + n_)};
}

// ---- Placeholder ----
void Placeholder::eval_cpu(const std::vector<array>&, std::vector<array>& outputs) {
  throw std::invalid_argument(
      "[eval] Attempting to evaluate an array that depends on the inputs of a vmapped function; arrays cannot be "
      "evaluated inside vmap (of shape " +
      shape_str(outputs[0].shape()) + ").");
}

// ---- CustomTransforms ----
void CustomTransforms::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (size_t j = 0; j < outputs.size(); ++j) share(inputs[n_ + j], outputs[j]);
}

std::vector<array> CustomTransforms::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                         const std::vector<int>& argnums, const std::vector<array>& outputs) {
  std::vector<array> ins(primals.begin(), primals.begin() + n_);
  std::vector<array> all;
  if (vjp_) {
    all = (*vjp_)(ins, cotangents, outputs);
    if (all.size() != ins.size()) {
      throw std::invalid_argument("[custom_function] The custom vjp returned " + std::to_string(all.size()) +
                                  " cotangents for " + std::to_string(ins.size()) + " primals.");
    }
  } else {
    all = ember::vjp(fun_, ins, cotangents).second;
  }
  std::vector<array> r;
  for (int i : argnums) {
    if (i >= n_) {
      r.push_back(zeros_like(primals[i]));
      continue;
    }
    array c = all[i];
    if (c.shape() != primals[i].shape()) {
      throw std::invalid_argument("[custom_function] The custom vjp returned a cotangent of shape " +
                                  shape_str(c.shape()) + " for a primal of shape " + shape_str(primals[i].shape()) +
                                  ".");
    }
    r.push_back(c.dtype() == primals[i].dtype() ? c : astype(c, primals[i].dtype()));
  }
  return r;
}

std::vector<array> CustomTransforms::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                         const std::vector<int>& argnums, const std::vector<array>& outputs) {
  std::vector<array> ins(primals.begin(), primals.begin() + n_);
  std::vector<array> tans;
  for (int i = 0; i < n_; ++i) tans.push_back(zeros_like(ins[i]));
  std::vector<int> mine;
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (argnums[k] < n_) {
      tans[argnums[k]] = tangents[k];
      mine.push_back(argnums[k]);
    }
  }
  if (!jvp_) return ember::jvp(fun_, ins, tans).second;
  auto r = (*jvp_)(ins, tans, mine);
  if (r.size() != outputs.size()) {
    throw std::invalid_argument("[custom_function] The custom jvp returned " + std::to_string(r.size()) +
                                " tangents for " + std::to_string(outputs.size()) + " outputs.");
  }
  return r;
}

std::pair<std::vector<array>, std::vector<int>> CustomTransforms::vmap(const std::vector<array>& inputs,
                                                                       const std::vector<int>& axes) {
  std::vector<array> ins(inputs.begin(), inputs.begin() + n_);
  std::vector<int> in_axes(axes.begin(), axes.begin() + n_);
  if (vmap_) {
    auto r = (*vmap_)(ins, in_axes);
    if (r.first.size() != r.second.size()) {
      throw std::invalid_argument("[custom_function] The custom vmap returned " + std::to_string(r.first.size()) +
                                  " outputs but " + std::to_string(r.second.size()) + " axes.");
    }
    return r;
  }
  // The batched function keeps the custom derivatives: it is a custom
  // function again, of fun vmapped (outputs batched on axis 0), whose rules
  // are the given rules vmapped.
  const int n = n_;
  Fun fun = fun_;
  auto at0 = [](std::pair<std::vector<array>, std::vector<int>> r, int64_t B) {
    for (size_t j = 0; j < r.first.size(); ++j) r.first[j] = batch_axis_to(r.first[j], r.second[j], 0, B);
    return r.first;
  };
  int64_t B = batch_size(ins, in_axes, name());
  Fun bfun = [fun, in_axes, at0, B](const std::vector<array>& xs) { return at0(vmap_rule(fun, xs, in_axes), B); };
  std::optional<VjpFun> bvjp;
  if (vjp_) {
    VjpFun vf = *vjp_;
    bvjp = [vf, in_axes, n, B](const std::vector<array>& ps, const std::vector<array>& cts,
                               const std::vector<array>& outs) {
      std::vector<array> all = ps;
      std::vector<int> axes = in_axes;
      size_t nc = cts.size();
      for (auto& c : cts) all.push_back(c), axes.push_back(0);
      for (auto& o : outs) all.push_back(o), axes.push_back(0);
      Fun f = [vf, n, nc](const std::vector<array>& a) {
        std::vector<array> p(a.begin(), a.begin() + n), c(a.begin() + n, a.begin() + n + nc),
            o(a.begin() + n + nc, a.end());
        return vf(p, c, o);
      };
      auto r = vmap_rule(f, all, axes);
      std::vector<array> res;
      for (int i = 0; i < n; ++i) {
        // an unbatched primal collects the cotangents of the whole batch
        if (in_axes[i] < 0) res.push_back(r.second[i] < 0 ? r.first[i] : sum(r.first[i], Axes{r.second[i]}));
        else res.push_back(batch_axis_to(r.first[i], r.second[i], in_axes[i], B));
      }
      return res;
    };
  }
  std::optional<JvpFun> bjvp;
  if (jvp_) {
    JvpFun jf = *jvp_;
    bjvp = [jf, in_axes, n, at0, B](const std::vector<array>& ps, const std::vector<array>& ts,
                                     const std::vector<int>& argnums) {
      std::vector<array> all = ps;
      std::vector<int> axes = in_axes;
      for (int i = 0; i < n; ++i) {
        all.push_back(ts[i]);
        axes.push_back(ts[i].ndim() == ps[i].ndim() ? in_axes[i] : -1);
      }
      Fun f = [jf, n, argnums](const std::vector<array>& a) {
        return jf(std::vector<array>(a.begin(), a.begin() + n), std::vector<array>(a.begin() + n, a.end()), argnums);
      };
      return at0(vmap_rule(f, all, axes), B);
    };
  }
  auto outs = custom_function(bfun, bvjp, bjvp)(ins);
  return {outs, std::vector<int>(outs.size(), 0)};
}

}  // namespace ember
