// Evaluation: computes arrays by walking their graph (explicit stack, never
// recursion) in topological order, running each node's primitive, then
// detaches every computed node. It belongs to the graph layer (array, Node,
// Primitive): it needs nothing but the primitive contract, and array::eval
// calls it.
#pragma once

#include <functional>
#include <vector>

#include "ember/array.h"

namespace ember {

// Computes `outputs` on the calling thread (waiting first for the
// asynchronous job that is computing them, if one is).
void eval(const std::vector<array>& outputs);
// Hands `outputs` to the asynchronous worker and returns: the caller builds
// the next graph while they compute (eval.cpp says what may touch them
// meanwhile). Its errors are not raised there but at the next
// synchronisation (the failed arrays stay uncomputed), and arrays a
// transform is tracing are refused (invalid_argument). Inside a trace, an
// evaluation, or once set_async_eval(false) (EMBER_ASYNC_EVAL=0, a
// distributed group) it evaluates at once.
void async_eval(const std::vector<array>& outputs);
// Waits until every async_eval job has finished (synchronize; the
// transforms and graph walkers call it before they inspect a graph).
void wait_async();
void set_async_eval(bool on);
// Sibling batches on (the default) or off (EMBER_SIBLING_BATCHES=0): off,
// every node runs alone (for measuring what batching gives); returns the
// setting before.
bool set_sibling_batches(bool on);
// Called as a TraceScope opens, before anything is traced (defined in
// array.cpp, so that array.cpp needs nothing of eval.cpp): the asynchronous
// worker registers wait_async there when it starts.
void set_before_trace(void (*fn)());
// How a thread waits for another's evaluation: the Python layer passes a
// function that runs `wait` with the GIL released.
void set_blocking_hook(void (*hook)(const std::function<void()>&));

// Communication beside compute. A layer above registers which primitives
// talk to other processes (the distributed collectives: they mostly wait).
// A graph with such nodes is evaluated by a scheduler: the calling thread
// runs the other nodes, in topological order but skipping those whose
// inputs are not ready yet, and hands each communication node, in the
// graph's topological order (the same on every process), to one
// communication thread, so that collectives overlap the compute that does
// not depend on them. A communication node that nothing could overlap (no
// other node is ready, none is in flight) runs on the calling thread
// instead, sparing the hand-off. The first error (from either thread) is
// raised once the communication thread is idle.
void set_communication_test(bool (*is_communication)(const Primitive&));
struct EvalStats {
  uint64_t comm_offloaded = 0;  // communication nodes run on the communication thread
  uint64_t comm_inline = 0;     // ... and on the evaluating thread
  uint64_t async_jobs = 0;      // async_eval jobs handed to the asynchronous worker
  uint64_t batched = 0;         // nodes run in a batch of siblings (Primitive::batches_with)
};
EvalStats eval_stats();

}  // namespace ember
