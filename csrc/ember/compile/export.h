// Export and import of traced functions (ember.core.export_function,
// import_function, exporter): one or more traces of a function written to a
// file that a later process, or a C++ program linking libember.a, reads back
// and runs.
//
//   ember::export_function("f.emfn", [](const std::vector<array>& a) {
//     return std::vector<array>{tanh(a[0] * a[1])};
//   }, {ones({4}), ones({4})});
//   auto f = ember::import_function("f.emfn");
//   auto out = f({x, y});  // the outputs, lazily
//
// A trace is the unfused tape of the traced graph (compile's record and
// simplification passes, no fusion; a compiled function called inside is
// expanded to its steps), its captured arrays stored as constants. Each
// step is written as its primitive's name() and its parameters, through a
// table of codecs in export.cpp keyed by that name; a primitive without a
// codec (a Python custom function, a collective) makes the export raise
// ValueError naming it.
//
// The file (little endian):
//   "EMBERFN\0"  u32 format version (1)  str Ember version  str metadata
//   u8 shapeless  u32 n_traces, then per trace:
//     u32 n_args  u32 n_kwargs  str kwarg name * n_kwargs (sorted)
//     inputs:    u32 n, then per input: dtype shape
//     constants: u32 n, then per constant: dtype shape u64 nbytes bytes (row-major)
//     steps:     u32 n, then per step: str op  u32 n_in  u32 value id * n_in
//                u32 n_out  (dtype shape) * n_out  u32 nbytes  parameters
//     outputs:   u32 n  u32 value id * n
//   u32 CRC-32 (zlib's) of every byte before it.
// with str = u32 length + bytes, dtype = u8, shape = u32 rank + i64 dims;
// value ids number the inputs, then the constants, then the steps' outputs.
//
// Import treats the file as untrusted: every length is bounded by the bytes
// left, ranks by 64, names by the codec table, value ids by the values
// defined before the step; then each step is rebuilt through the public ops
// (which validate shapes, dtypes and parameters as for any caller) on
// placeholders and must give the shapes and dtypes the file records. Every
// failure is a ValueError ("[import_function] ..."); an unreadable path is a
// RuntimeError. Each trace is then compiled (compile_graph: passes and
// fusion run again), and calls replay it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/array.h"

namespace ember {

class Primitive;
namespace compiler {
struct Tape;
}

// A function read back by import_function: its traces, each for a number of
// positional arrays, a set of keyword names and the traced shapes (ranks
// for a shapeless export) and dtypes. A call runs the first trace that
// matches; none matching raises ValueError listing them.
struct ImportedFunction {
  std::vector<array> operator()(const std::vector<array>& args) const;
  std::vector<array> operator()(const std::vector<array>& args, const std::map<std::string, array>& kwargs) const;

  struct Trace {
    int n_args = 0;
    std::vector<std::string> kwarg_names;  // sorted; the tape's inputs are the args, then these
    std::shared_ptr<compiler::Tape> tape;
  };
  std::vector<Trace> traces;
  bool shapeless = false;
  std::string metadata;
  // The signatures of the traces, one line each ("2 positional, 0 keyword: float32 (3), float32 (3)").
  std::string describe() const;
};

// Reads and validates the export file at `path` (see above).
ImportedFunction import_function(const std::string& path);

// Traces `fun` on placeholders shaped like `example_args` and writes the one
// trace to `path`.
void export_function(const std::string& path, const std::function<std::vector<array>(const std::vector<array>&)>& fun,
                     const std::vector<array>& example_args, bool shapeless = false);

namespace compiler {

// One trace as it is written: the recorded, simplified, unfused tape
// between `placeholders` (the positional arguments', then the keyword
// arguments' in name order) and `outputs`.
struct ExportTrace {
  int n_args = 0;
  std::vector<std::string> kwarg_names;
  std::shared_ptr<Tape> tape;
};
ExportTrace export_trace(const std::vector<array>& placeholders, const std::vector<array>& outputs, int n_args,
                         std::vector<std::string> kwarg_names);
// The parameters of a primitive as the file stores them, as values (the
// callback form of export_function shows them); ValueError for a primitive
// that cannot be exported.
struct ExportArg {
  enum Kind { Int, Float, Bool, DtypeArg, Ints } kind;
  int64_t i = 0;  // Int, Bool, DtypeArg (the dtype's code)
  double f = 0;   // Float
  std::vector<int64_t> ints;
};
std::vector<ExportArg> export_arguments(const Primitive& p);
// The bytes of an export file holding these traces (ValueError for a step
// that cannot be written) and their reading (validated, as import_function).
std::string serialize_function(const std::vector<ExportTrace>& traces, bool shapeless, const std::string& metadata);
ImportedFunction deserialize_function(const std::string& bytes);
// Whole-file writes (a temporary file renamed over `path`) and reads;
// RuntimeError naming the path when it cannot be opened.
void write_export_file(const std::string& path, const std::string& bytes);
std::string read_export_file(const std::string& path);

}  // namespace compiler
}  // namespace ember
