// Primitives the transforms themselves insert into graphs. Each output shares
// an input's buffer (nothing is copied); what differs is how each one looks
// to vjp, jvp and vmap.
#pragma once

#include <functional>
#include <optional>

#include "ember/primitive.h"

namespace ember {

// The identity, marking a transform's input (vjp/jvp copy each primal so that
// the graph walk can stop at it).
class Identity final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return "Identity"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Identity*>(&o); }
};

// The identity with a zero derivative: the graph walks of vjp and jvp treat
// its output as a constant.
class StopGradient final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return "StopGradient"; }
  bool stops_gradient() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const StopGradient*>(&o); }
};

// outputs = the first n inputs; the remaining inputs are only dependencies
// (evaluated first, no derivative flows to them).
class Depends final : public Primitive {
 public:
  Depends(Stream s, int n) : Primitive(s), n_(n) {}
  const char* name() const override { return "Depends"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES

 private:
  int n_;
};

// Stands for one example of a vmapped input while vmap traces the function;
// it has no value, so evaluating it is an error.
class Placeholder final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return "Placeholder"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
};

using Fun = std::function<std::vector<array>(const std::vector<array>&)>;
// (primals, cotangents, outputs) -> one cotangent per primal
using VjpFun = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                const std::vector<array>&)>;
// (primals, tangents (zeros for the primals without one), argnums) -> one
// tangent per output
using JvpFun = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                const std::vector<int>&)>;
// (inputs, axes) -> outputs and their batch axes
using VmapFun = std::function<std::pair<std::vector<array>, std::vector<int>>(const std::vector<array>&,
                                                                              const std::vector<int>&)>;

// A function with its own transform rules (custom_function / checkpoint).
// inputs: the n primals, then the function's outputs (computed normally, with
// their gradient stopped); outputs: those outputs again. A rule not given is
// derived from the function by the generic transform.
class CustomTransforms final : public Primitive {
 public:
  CustomTransforms(Stream s, int n, Fun fun, std::optional<VjpFun> vjp_fun, std::optional<JvpFun> jvp_fun,
                   std::optional<VmapFun> vmap_fun)
      : Primitive(s), n_(n), fun_(std::move(fun)), vjp_(std::move(vjp_fun)), jvp_(std::move(jvp_fun)),
        vmap_(std::move(vmap_fun)) {}
  const char* name() const override { return "CustomTransforms"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES

 private:
  int n_;
  Fun fun_;
  std::optional<VjpFun> vjp_;
  std::optional<JvpFun> jvp_;
  std::optional<VmapFun> vmap_;
};

}  // namespace ember
