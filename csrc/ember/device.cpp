#include "ember/device.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace ember {

namespace {
std::mutex g_mu;
Device g_default_device;
Stream g_default_stream{0, Device{}};
int g_next_stream = 1;
int g_next_local = 0;
thread_local std::unordered_map<int, Stream> t_local_streams;  // ThreadLocalStream index -> stream
thread_local bool t_has_stream = false;
thread_local Stream t_stream;
}  // namespace

bool is_available(const Device& d) { return d.type == Device::Type::cpu && d.index == 0; }
int device_count(Device::Type t) { return t == Device::Type::cpu ? 1 : 0; }

const Device& default_device() {
  std::lock_guard<std::mutex> l(g_mu);
  return g_default_device;
}

void set_default_device(const Device& d) {
  if (!is_available(d)) {
    throw std::invalid_argument(std::string("[set_default_device] Device ") +
                                (d.type == Device::Type::gpu ? "gpu" : "cpu") + "(" + std::to_string(d.index) +
                                ") is not available.");
  }
  std::lock_guard<std::mutex> l(g_mu);
  g_default_device = d;
}

Stream default_stream(const Device& d) {
  if (!is_available(d)) {
    throw std::invalid_argument("[default_stream] The requested device is not available.");
  }
  if (t_has_stream && t_stream.device == d) return t_stream;  // inside a stream(...) context
  std::lock_guard<std::mutex> l(g_mu);
  return g_default_stream;
}

void set_default_stream(const Stream& s) {
  if (!is_available(s.device)) throw std::invalid_argument("[set_default_stream] The stream's device is not available.");
  std::lock_guard<std::mutex> l(g_mu);
  g_default_stream = s;
}

Stream new_stream(const Device& d) {
  if (!is_available(d)) throw std::invalid_argument("[new_stream] The requested device is not available.");
  std::lock_guard<std::mutex> l(g_mu);
  return Stream{g_next_stream++, d};
}

Stream new_thread_unsafe_stream(const Device& d) { return new_stream(d); }

ThreadLocalStream new_thread_local_stream(const Device& d) {
  if (!is_available(d)) throw std::invalid_argument("[new_thread_local_stream] The requested device is not available.");
  std::lock_guard<std::mutex> l(g_mu);
  return ThreadLocalStream{g_next_local++, d};
}

Stream resolve(const ThreadLocalStream& s) {
  auto it = t_local_streams.find(s.index);
  if (it != t_local_streams.end()) return it->second;
  Stream fresh = new_stream(s.device);
  t_local_streams.emplace(s.index, fresh);
  return fresh;
}

void clear_streams() {
  std::lock_guard<std::mutex> l(g_mu);
  g_next_stream = 1;
  g_default_stream = Stream{0, g_default_device};
}

Stream current_stream() {
  if (t_has_stream) return t_stream;
  std::lock_guard<std::mutex> l(g_mu);
  return g_default_stream;
}

void set_thread_stream(const Stream* s) {
  t_has_stream = s != nullptr;
  if (s) t_stream = *s;
}

// synchronize(stream) is defined beside the asynchronous worker it waits
// for, in eval.cpp (the graph layer, above this one).

}  // namespace ember
