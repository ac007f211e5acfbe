// Compile's fusion: maximal groups of elementwise nodes of a lazy graph
// replaced by one node each, whose kernel is C++ generated for the group,
// compiled by the system compiler and loaded with dlopen.
//
//   auto outs = compile::fuse({x}, {tanh(x * 2 + 1)});   // one Compiled node
//
// fuse() walks the graph once (explicit stack, linear), groups the fusable
// nodes (elementwise primitives the code generator covers, by trait and
// dtype) from the outputs back: a node joins the group of its consumers when
// all of them are in one group and it has the group's shape; a graph output
// inside a group becomes one more output of its Compiled node; a group
// stops growing at 256 nodes (one kernel's compile time). Groups of two
// or more nodes get a kernel (codegen.cpp's generator, jit.cpp's compiler
// and caches); without a compiler, or if a compile fails, the group stays as
// it was (one warning per process on stderr). Consumers outside the groups
// are rewired in place to the Compiled outputs (same values); the arrays of
// the group itself keep their original nodes.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/primitive.h"

namespace ember::compile {

std::vector<array> fuse(const std::vector<array>& inputs, const std::vector<array>& outputs);

// One fused group: the recorded primitives in order (each step's arguments:
// k >= 0 an earlier step, k < 0 the Compiled node's input -k-1), the steps
// that are outputs, and the generated kernel (by ISA level, compiled on
// first use of a level).
struct FusedProgram {
  struct Step {
    std::shared_ptr<Primitive> prim;
    std::vector<int> args;
    Dtype dtype;
  };
  std::vector<Step> steps;
  std::vector<Dtype> in_dtypes;
  std::vector<int> outputs;
  // A closing reduction over the last axis of the one output (a Reduce
  // primitive: kind 0 sum, 1 max, 2 min; -1 none): the node's output is
  // that reduction's, size 1 on the last axis, and the kernel computes one
  // row's result (p[0] the result, then the inputs at the row's start; s
  // their strides along the row; n its length) in the eager reduction's
  // order of evaluation (pieces of 4096 split pairwise, 32 or 16 lanes).
  std::shared_ptr<Primitive> reduce;
  int reduce_kind = -1;
  std::string source;  // the kernel's own code (the shared prelude excluded)
  std::string label;   // "Compiled[Multiply,Add,Tanh]"

  using Kernel = void (*)(char* const* p, const int64_t* s, int64_t n);
  // The kernel for ISA level `level` (cpu::isa_level()), null if it cannot
  // be built (no compiler, a failed compile).
  Kernel kernel(int level) const;

  // Applies the recorded primitives to `inputs` with the ordinary ops (each
  // step through its own vmap rule with no batched input): the group's
  // unfused graph on new arrays (what the transform rules work on).
  std::vector<array> apply(const std::vector<array>& inputs) const;

 private:
  mutable std::mutex mu_;
  mutable Kernel kernels_[4] = {nullptr, nullptr, nullptr, nullptr};
  mutable bool tried_[4] = {false, false, false, false};
};

class Compiled final : public Primitive {
 public:
  Compiled(Stream s, std::shared_ptr<const FusedProgram> program) : Primitive(s), program_(std::move(program)) {}
  const char* name() const override { return program_->label.c_str(); }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  // elementwise unless the group ends in a reduction over the last axis
  bool is_elementwise() const override { return program_->reduce_kind < 0; }
  bool is_equivalent(const Primitive& o) const override;
  const FusedProgram& program() const { return *program_; }

 private:
  void eval_rows(FusedProgram::Kernel fn, const std::vector<array>& inputs, array& out);
  std::shared_ptr<const FusedProgram> program_;
};

// The generated source of a program's kernel (codegen.cpp); empty when a
// step is not covered (fuse checks steps with fusable() first).
std::string generate_kernel(const FusedProgram& program);
// The functions the generated kernels call (one per op), put after the
// embedded simd_math.h in every kernel's source.
const std::string& kernel_prelude();
// Whether the generator covers primitive `p` on inputs of these dtypes
// with output dtype `out`.
bool fusable(const Primitive& p, const std::vector<Dtype>& in, Dtype out);

// jit.cpp: the compiler, the disk cache and the in-memory cache.
// A kernel for `source` at ISA level `level` (0 baseline, 1 avx2, 2 avx512),
// from memory, the disk cache or the compiler; null (with one warning per
// process) when no compiler is available or the compile fails.
FusedProgram::Kernel load_kernel(const std::string& source, int level);
// Whether a compiler was found (looked up once per process).
bool compiler_available();
struct JitStats {
  int64_t memory_hits = 0, disk_hits = 0, compiles = 0, failures = 0;
  double compile_seconds = 0;  // wall time spent in the compiler
};
JitStats jit_stats();
void clear_memory_cache();  // for tests: forget loaded kernels (disk stays)
std::string cache_dir();

}  // namespace ember::compile
