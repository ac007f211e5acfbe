// Devices and streams. Ember computes on the CPU; a Stream orders the work
// submitted to it. The default stream is per thread-settable (stream context).
#pragma once

#include <string>
#include <vector>

namespace ember {

struct Device {
  enum class Type : int { cpu = 0, gpu = 1 };
  Type type = Type::cpu;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

struct Stream {
  int index = 0;
  Device device;
  bool operator==(const Stream& o) const { return index == o.index && device == o.device; }
  bool operator!=(const Stream& o) const { return !(*this == o); }
};

// A stream that stands for a different Stream in each thread: the first use
// in a thread creates that thread's stream (MLX's ThreadLocalStream).
struct ThreadLocalStream {
  int index = 0;
  Device device;
  bool operator==(const ThreadLocalStream& o) const { return index == o.index && device == o.device; }
};

bool is_available(const Device& d);
int device_count(Device::Type t);
const Device& default_device();
void set_default_device(const Device& d);  // throws for unavailable devices
Stream default_stream(const Device& d);
void set_default_stream(const Stream& s);
Stream new_stream(const Device& d);
// Ember evaluates on the calling thread, so every stream may be used from any
// thread; this is new_stream under MLX's name for such streams.
Stream new_thread_unsafe_stream(const Device& d);
ThreadLocalStream new_thread_local_stream(const Device& d);
Stream resolve(const ThreadLocalStream& s);  // the calling thread's stream
void clear_streams();  // forget user streams; default streams stay
// The stream an op runs on when none is given: the thread's current default.
Stream current_stream();
// Thread-local override used by the `stream(...)` context (null clears it).
void set_thread_stream(const Stream* s);
void synchronize(const Stream& s);

}  // namespace ember
