// Saving and loading arrays: .npy, .npz, .safetensors and .gguf.
//
// Files come from strangers, so every loader validates the whole file
// structure (sizes in checked 64-bit arithmetic, headers parsed by Ember's own
// strict parsers, offsets inside the file and non-overlapping) before it
// reads or allocates any tensor data. A violation raises
// std::invalid_argument (ValueError) whose message names the file, the
// tensor and the rule; a file that cannot be opened, read or written raises
// io::os_error (OSError).
//
// Loading maps the file (or takes the bytes of a Python file object) as one
// read-only borrowed Buffer: arrays of .npy, .safetensors and stored .npz
// members are views of it whenever their data is aligned for their dtype and
// little-endian, so opening a file reads nothing but its headers. Other
// tensors (big-endian, misaligned, deflated, quantized GGUF) are copied.
// Saving evaluates the arrays and writes through a Writer: to a file, always
// a temporary file in the same folder renamed over the target once complete.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ember/array.h"

namespace ember::io {

// OSError in Python (with errno: FileNotFoundError & co.): missing,
// unreadable or unwritable files.
class os_error : public std::runtime_error {
 public:
  os_error(const std::string& what, int err) : std::runtime_error(what), err_(err) {}
  int err() const { return err_; }

 private:
  int err_;
};

// The bytes of a file (or a slice of one), kept alive by `buf`.
struct Source {
  std::shared_ptr<Buffer> buf;  // read-only borrowed memory
  size_t offset = 0;            // of this slice in buf
  size_t size = 0;
  std::string name;             // for messages: the path, or "<name>[member]"
  const uint8_t* data() const { return static_cast<const uint8_t*>(buf->ptr()) + offset; }
};
// Maps the file read-only (os_error naming `op` if it cannot be opened).
Source map_file(const std::string& path, const char* op);
// Maps the whole regular file open as `fd` (the descriptor stays the
// caller's; the mapping outlives it); `name` is for messages.
Source map_fd(int fd, const std::string& name, const char* op);
// A mapped file that shrinks underneath its arrays would kill the process
// with SIGBUS when they are read. Ember's handler (installed with the first
// mapping, chaining to the previous one for other faults) puts a page of
// zeros where the data vanished and remembers the file; check_mappings(),
// which the bindings run after every evaluation, then raises os_error
// (EIO) naming it, once per such event.
void check_mappings();
// Takes ownership of bytes read from elsewhere (a Python file object).
Source memory_source(std::string bytes, std::string name);

// Receives the bytes of a file being written, in order.
using Writer = std::function<void(const void* data, size_t n)>;
// Runs body with a Writer into a temporary file next to `path`, then
// flushes it to disk and renames it to `path`; on any error the temporary
// file is removed and `path` is left as it was.
void write_file_atomic(const std::string& path, const std::function<void(const Writer&)>& body, const char* op);

using NamedArrays = std::vector<std::pair<std::string, array>>;
using StringMap = std::vector<std::pair<std::string, std::string>>;

// .npy (NumPy format versions 1.0, 2.0, 3.0).
array load_npy(const Source& src);
void save_npy(const array& a, const Writer& w);

// .npz: a zip of .npy members (stored or deflated), keyed by member name
// without ".npy".
NamedArrays load_npz(const Source& src);
void save_npz(const NamedArrays& arrays, bool compressed, const Writer& w);

// .safetensors, with its string metadata ("__metadata__").
struct Safetensors {
  NamedArrays arrays;
  StringMap metadata;
};
Safetensors load_safetensors(const Source& src);
void save_safetensors(const NamedArrays& arrays, const StringMap& metadata, const Writer& w);

// .gguf (versions 2 and 3). Metadata values: numbers and booleans as arrays
// (0-d for scalars, 1-d for GGUF arrays), strings, and arrays of strings.
struct GgufValue {
  enum Kind { Array, String, Strings } kind = Array;
  array arr;
  std::string str;
  std::vector<std::string> strs;
};
using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;
struct Gguf {
  NamedArrays arrays;  // Q4_0/Q4_1/Q8_0 tensors as name, name.scales, name.biases
  GgufMetadata metadata;
};
Gguf load_gguf(const Source& src);
void save_gguf(const NamedArrays& arrays, const GgufMetadata& metadata, const Writer& w);

// Building blocks, exposed for the tests and the fuzz harness.
uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc = 0);
// Inflates a raw deflate stream (RFC 1951) into exactly `out_size` bytes;
// ValueError (naming `what`) for a malformed stream or any other length.
std::string inflate(const uint8_t* data, size_t n, size_t out_size, const std::string& what);
// Compresses into a raw deflate stream (LZ77 and dynamic Huffman codes;
// stored blocks where that is shorter).
std::string deflate(const uint8_t* data, size_t n);

}  // namespace ember::io
