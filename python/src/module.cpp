// ember.core: the extension module.
#include "bindings.h"

PYBIND11_MODULE(core, m) {
  m.doc() = "Ember core: lazily evaluated arrays, ops, devices and memory.";
  ember::py_bind::init_device(m);
  ember::py_bind::init_array(m);
  ember::py_bind::init_ops(m);
}
