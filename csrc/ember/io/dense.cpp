// The one place the savers evaluate: a lazy or strided array becomes an
// evaluated row-major one through the op API (the sanitizer harness,
// tests/cpp/io_fuzz.cpp, builds the loaders without the ops and replaces it).
#include "ember/eval.h"
#include "ember/io/reader.h"
#include "ember/ops.h"

namespace ember::io::detail {

array dense(const array& a) {
  eval({a});
  if (a.row_contiguous()) return a;  // written straight from its buffer
  array c = contiguous(a);
  eval({c});
  if (!c.row_contiguous()) throw std::logic_error("[save] contiguous() returned a strided array");
  return c;
}

}  // namespace ember::io::detail
