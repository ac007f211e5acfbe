// Compile's fusion: maximal groups of elementwise nodes of a lazy graph
// replaced by one node each, whose kernel is C++ generated for the group,
// compiled by the system compiler and loaded with dlopen.
//
//   auto outs = compile::fuse({x}, {tanh(x * 2 + 1)});   // one Compiled node
//
// fuse() walks the graph once (explicit stack, linear), groups the fusable
// nodes (elementwise primitives the code generator covers, by trait and
// dtype, and sum/max/min reductions over the last axis) from the outputs
// back: a node joins the group of its consumers when all of them are in one
// group and its shape fits the group's: the group's full shape F, or F's row
// scalars (F with the last axis 1), which a reduction over the last axis
// produces from F. A group with a reduction is a row program (softmax, layer
// or rms norm, a loss written out: one kernel per row); a group without one
// keeps one shape (its row scalars form a group of their own). A graph
// output inside a group, or a value used outside it, becomes one more output
// of its Compiled node; a group stops growing at 256 nodes (one kernel's
// compile time). Groups of two or more nodes get a kernel (codegen.cpp's
// generator, jit.cpp's compiler and caches); without a compiler, or if a
// compile fails, the group stays as it was (one warning per process on
// stderr). Consumers outside the groups are rewired in place to the Compiled
// outputs (same values); the arrays of the group itself keep their original
// nodes.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/primitive.h"

namespace ember::compile {

// *rewrote (if given): whether any group was replaced. The outputs alone do
// not tell: a graph output outside the groups (a reshape of a row sum) keeps
// its array, its node rewired in place.
std::vector<array> fuse(const std::vector<array>& inputs, const std::vector<array>& outputs, bool* rewrote = nullptr);

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
  // A row program (rows = true): the group mixes values of the full shape F
  // with row scalars (F with its last axis 1) and holds reductions over the
  // last axis (Reduce steps, kind sum/max/min: full -> row scalar), as in
  // softmax, layer/rms norm or a loss. The kernel computes one row (p: the
  // outputs' then the inputs' first elements of the row, s: their strides
  // along it, n its length): each reduction is a pass over the row that
  // recomputes the full steps it needs from the inputs in blocks and reduces
  // in the eager reduction's order (pieces of 4096 split pairwise, 32 or 16
  // lanes); row scalars are computed once; a last pass writes the full
  // outputs. Rows are spread over the threads.
  bool rows = false;
  std::vector<int> step_reduce;   // per step: -1 elementwise, else 0 sum, 1 max, 2 min
  std::vector<bool> row_scalar;   // per step: a row scalar (one value per row)
  std::vector<bool> in_row_bcast; // per input: broadcast along the row (last dim 1, or 0-d)
  // per input: one element when fused (a scalar, x * 2's 2): the elementwise
  // kernel reads it once; Compiled runs the unfused graph if a shapeless
  // replay gives it more
  std::vector<bool> in_scalar;
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
  // elementwise unless the group is a row program
  bool is_elementwise() const override { return !program_->rows; }
  bool is_equivalent(const Primitive& o) const override;
  const FusedProgram& program() const { return *program_; }

 private:
  void eval_rows(FusedProgram::Kernel fn, const std::vector<array>& inputs, std::vector<array>& outputs);
  // the transform rules' function (the inputs `argnums` varying) and its arguments
  std::function<std::vector<array>(const std::vector<array>&)> of_argnums(const std::vector<array>& primals,
                                                                          const std::vector<int>& argnums) const;
  static std::vector<array> pick(const std::vector<array>& primals, const std::vector<int>& argnums);
  void eval_unfused(const std::vector<array>& inputs, std::vector<array>& outputs);
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
  int64_t pch_builds = 0;  // precompiled preludes started in the background
  double compile_seconds = 0;  // wall time spent in the compiler
};
JitStats jit_stats();
void clear_memory_cache();  // for tests: forget loaded kernels (disk stays)
// Waits for this process's background builds of the precompiled prelude and
// puts them in place (for tests and benchmarks; compiles do it as they go).
void wait_pch();
std::string cache_dir();

}  // namespace ember::compile
