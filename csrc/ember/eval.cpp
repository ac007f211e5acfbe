#include "ember/eval.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>

#include "ember/device.h"
#include "ember/primitive.h"

namespace ember {

namespace {
// One evaluation at a time: graphs may share nodes across Python threads, and
// kernels already use every core through the thread pool.
std::recursive_mutex& eval_mutex() {
  static std::recursive_mutex m;
  return m;
}
uint64_t g_epoch = 0;
thread_local int t_eval_depth = 0;  // how many times this thread holds eval_mutex()

// Detaching an output: atomic, because settled() reads the pointer without
// the evaluation lock while the asynchronous worker may be detaching it.
void clear_node(const std::shared_ptr<ArrayDesc>& d) { std::atomic_store(&d->node, std::shared_ptr<Node>()); }

// Computed and detached: nothing left for an evaluation to do (readable from
// any thread at any time; the buffer was stored before the node was cleared).
bool settled(const array& a) {
  if (!a.valid()) return true;
  const auto& d = a.desc();
  return !std::atomic_load(&d->node) && d->buf;
}

void (*g_blocking_hook)(const std::function<void()>&) = nullptr;
// Runs `wait` (which blocks on another thread's evaluation) through the
// hook the Python layer installs: it lets go of the GIL meanwhile, which
// the other thread may need to free a buffer borrowed from Python.
void blocking(const std::function<void()>& wait) {
  if (auto h = g_blocking_hook)
    h(wait);
  else
    wait();
}

// Holds the evaluation lock for this thread, first asking the asynchronous
// worker to start no further job (it finishes the one it runs).
class EvalLock {
 public:
  EvalLock();
  ~EvalLock();
  EvalLock(const EvalLock&) = delete;
  EvalLock& operator=(const EvalLock&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
  bool paused_ = false;
};

// EMBER_PROFILE=1: wall time per primitive and output shape, summed over
// the process and printed to stderr at exit (slowest first); =2: keyed by
// the input shapes too. Off: one predictable branch per node.
class Profile {
 public:
  static Profile* get() {
    static Profile* p = [] {
      const char* e = std::getenv("EMBER_PROFILE");
      return e && *e && std::strcmp(e, "0") != 0 ? new Profile(std::strcmp(e, "2") == 0) : nullptr;
    }();
    return p;
  }
  // (a batch of siblings as one row: the first one's shapes, "xN")
  void add(const Primitive& prim, const std::vector<array>& inputs, const array& out, double seconds, size_t batch = 1) {
    std::string key = std::string(prim.name()) + (batch > 1 ? " x" + std::to_string(batch) : "") + " " + shape_str(out.shape());
    if (with_inputs_) {
      key += " <-";
      for (const auto& in : inputs) key += " " + shape_str(in.shape());
    }
    std::lock_guard<std::mutex> g(m_);
    auto& e = by_[key];
    e.first += seconds;
    e.second += 1;
  }

 private:
  explicit Profile(bool with_inputs) : with_inputs_(with_inputs) { std::atexit([] { get()->print(); }); }
  void print() {
    std::lock_guard<std::mutex> g(m_);
    std::vector<std::pair<std::string, std::pair<double, uint64_t>>> rows(by_.begin(), by_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    double total = 0;
    for (auto& r : rows) total += r.second.first;
    std::fprintf(stderr, "EMBER_PROFILE: %.3f s in %zu kinds of node\n%10s %6s %10s %9s  %s\n", total, rows.size(),
                 "ms", "%", "calls", "us/call", "primitive output-shape");
    for (auto& r : rows) {
      double ms = r.second.first * 1e3;
      std::fprintf(stderr, "%10.2f %6.2f %10llu %9.2f  %s\n", ms, total > 0 ? 100 * r.second.first / total : 0.0,
                   static_cast<unsigned long long>(r.second.second), 1e3 * ms / r.second.second, r.first.c_str());
    }
  }
  bool with_inputs_;
  std::mutex m_;
  std::unordered_map<std::string, std::pair<double, uint64_t>> by_;
};

// A node's outputs to compute into: its arrays, or scratch for an output
// that everyone has dropped.
std::vector<array> node_outputs(Node* n) {
  std::vector<array> outs;
  outs.reserve(n->outputs.size());
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    auto d = n->outputs[i].lock();
    if (d) {
      outs.emplace_back(std::move(d));
    } else {
      auto s = std::make_shared<ArrayDesc>();
      s->shape = n->out_shapes.at(i);
      s->strides = row_strides(s->shape);
      s->size = checked_size(s->shape, "eval");
      s->dtype = n->out_dtypes.at(i);
      s->position = static_cast<int>(i);
      outs.emplace_back(std::move(s));
    }
  }
  return outs;
}

// After a node's kernel: its outputs become plain data, and the node (and,
// if unshared, its inputs) go.
void detach(std::vector<array>& outs) {
  // A tracer keeps its graph for the transform that is tracing it.
  if (in_tracing()) {
    for (auto& o : outs)
      if (o.desc()->tracer) return;
  }
  std::shared_ptr<Node> keep = outs[0].desc()->node;  // the node stays alive until here
  for (auto& o : outs) clear_node(o.desc());
  // `keep` is released last: the node and, if unshared, its inputs go now.
}

// A failed kernel may have given its outputs storage already: take it back,
// so that the outputs still count as not computed (and a later evaluation
// raises again instead of reading garbage).
void unalloc(std::vector<array>& outs) {
  for (auto& o : outs) o.desc()->buf.reset();
}

// Calls eval(), the kernel of the n nodes whose outputs are outs[0..n)
// (one node, or a batch of siblings led by prim), timed for EMBER_PROFILE
// when that is on, then detaches them; a failed kernel's outputs get their
// storage taken back.
template <class F>
void run_kernel(const Primitive& prim, const std::vector<array>& inputs, std::vector<array>* outs, size_t n, F&& eval) {
  try {
    if (Profile* p = Profile::get()) {
      auto t0 = std::chrono::steady_clock::now();
      eval();
      p->add(prim, inputs, outs[0][0], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), n);
    } else {
      eval();
    }
  } catch (...) {
    for (size_t i = 0; i < n; ++i) unalloc(outs[i]);
    throw;
  }
  for (size_t i = 0; i < n; ++i) detach(outs[i]);
}

// Run one node's primitive and detach it.
void run_node(Node* n) {
  std::vector<array> outs = node_outputs(n);
  run_kernel(*n->prim, n->inputs, &outs, 1, [&] { n->prim->eval_cpu(n->inputs, outs); });
}

// Run a batch of sibling nodes (Primitive::batches_with) as one call of the
// first one's eval_cpu_batch, and detach them all.
void run_batch(const std::vector<Node*>& nodes) {
  std::vector<Primitive*> prims;
  std::vector<const std::vector<array>*> ins;
  std::vector<std::vector<array>> outs;
  for (Node* n : nodes) {
    prims.push_back(n->prim.get());
    ins.push_back(&n->inputs);
    outs.push_back(node_outputs(n));
  }
  run_kernel(*prims[0], *ins[0], outs.data(), outs.size(), [&] { prims[0]->eval_cpu_batch(prims, ins, outs); });
}

// Sibling batches on (EMBER_SIBLING_BATCHES=0: off; set_sibling_batches)
std::atomic<bool>& sibling_batches_on() {
  static std::atomic<bool> on{[] {
    const char* e = std::getenv("EMBER_SIBLING_BATCHES");
    return !(e && std::strcmp(e, "0") == 0);
  }()};
  return on;
}

// Sibling batches in an evaluation's order: a node whose primitive batches
// with an earlier one's, that reads the same first input (the same array)
// and no other input computed in this evaluation (mark == epoch), can run
// at that earlier node's place (it needs nothing computed after it). Each
// batch's later members leave order (null entries); batches[i] lists the
// batch that order[i] leads, empty for most.
std::vector<std::vector<Node*>> sibling_batches(std::vector<Node*>& order, uint64_t epoch) {
  std::vector<std::vector<Node*>> batches;
  std::unordered_map<const ArrayDesc*, std::vector<size_t>> leaders;  // by first input: indices in order
  if (in_tracing() || !sibling_batches_on().load(std::memory_order_relaxed)) return batches;
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    if (!n->prim->batches() || n->inputs.empty() || n->outputs.size() != 1) continue;
    bool settled_rest = true;
    for (size_t k = 1; k < n->inputs.size() && settled_rest; ++k) {
      Node* m = n->inputs[k].desc()->node.get();
      settled_rest = !m || m->mark != epoch;
    }
    auto& cands = leaders[n->inputs[0].desc().get()];
    bool joined = false;
    if (settled_rest) {
      for (size_t l : cands) {
        if (order[l]->prim->batches_with(*n->prim)) {
          if (batches.empty()) batches.resize(order.size());
          if (batches[l].empty()) batches[l].push_back(order[l]);
          batches[l].push_back(n);
          order[i] = nullptr;
          joined = true;
          break;
        }
      }
    }
    if (!joined) cands.push_back(i);
  }
  return batches;
}

// run_node, returning its error instead of throwing it (for the scheduler,
// which raises the first error of either thread once both are done).
std::exception_ptr run_caught(Node* n) {
  try {
    run_node(n);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

// The node that still has to run for `a`, or null (computed, or a constant).
// A computed array whose graph was kept for tracing drops it here once no
// transform is tracing it any more.
Node* pending(const array& a) {
  Node* n = a.desc()->node.get();
  if (n && a.desc()->buf) {
    if (!a.is_tracer()) clear_node(a.desc());
    return nullptr;
  }
  return n;
}

// ---- communication beside compute ------------------------------------------

std::atomic<bool (*)(const Primitive&)> g_is_comm{nullptr};
std::atomic<uint64_t> g_offloaded{0}, g_inline{0}, g_async_jobs{0}, g_batched{0};

// One evaluation's schedule, shared by the evaluating thread and the
// communication thread (every field below `mu` is guarded by it).
struct Schedule {
  std::vector<Node*> order;
  std::vector<char> comm;                  // order[i] is a communication node
  std::vector<int> waiting;                // producers of order[i] not run yet
  std::vector<std::vector<int>> consumers;  // positions that take order[i]'s outputs
  std::vector<int> comm_seq;               // the communication nodes' positions, ascending

  std::mutex mu;
  std::condition_variable to_main, to_comm;
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // compute nodes that can run
  std::deque<int> queue;  // communication nodes handed to the communication thread
  size_t next_comm = 0;   // comm_seq[next_comm] is the next one to dispatch
  size_t done = 0;
  bool comm_busy = false, closing = false, comm_exited = false, failed = false, comm_failed = false;
  std::exception_ptr error;

  void finish(int i) {
    ++done;
    for (int c : consumers[static_cast<size_t>(i)])
      if (--waiting[static_cast<size_t>(c)] == 0 && !comm[static_cast<size_t>(c)]) ready.push(c);
  }
  void fail(std::exception_ptr e) {
    if (!failed) {
      failed = true;
      error = std::move(e);
    }
  }
};

// Runs the communication nodes handed to it, one at a time, in the order
// they were handed (the order of the graph, the same on every process).
void serve(const std::shared_ptr<Schedule>& sp) {
  Schedule& s = *sp;
  std::unique_lock<std::mutex> l(s.mu);
  for (;;) {
    s.to_comm.wait(l, [&] { return !s.queue.empty() || s.closing; });
    if (s.queue.empty()) break;
    int i = s.queue.front();
    s.queue.pop_front();
    // after a collective failed the ranks are out of step: drop the rest (an
    // error on the evaluating thread does not: what was handed out runs, as
    // the other ranks run it)
    if (s.comm_failed) continue;
    s.comm_busy = true;
    l.unlock();
    std::exception_ptr err = run_caught(s.order[static_cast<size_t>(i)]);
    l.lock();
    s.comm_busy = false;
    if (err) {
      s.comm_failed = true;
      s.fail(err);
    } else
      s.finish(i);
    s.to_main.notify_one();
  }
  s.comm_exited = true;
  s.to_main.notify_one();
}

// The communication thread: parked between evaluations, never destroyed
// (as the kernels' pool).
class CommThread {
 public:
  CommThread() {
    std::thread([this] { loop(); }).detach();
  }
  void start(std::shared_ptr<Schedule> s) {
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = std::move(s);
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<Schedule> s;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return job_ != nullptr; });
        s = std::move(job_);
      }
      serve(s);
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Schedule> job_;
};

CommThread& comm_thread() {
  static CommThread* t = new CommThread();
  return *t;
}

// Whether some node of `order` (an evaluation's post-order, every node
// marked `epoch`) neither feeds order[c] nor follows it, i.e. could run
// while it communicates. Marks the nodes that feed it and those that follow
// it with fresh epochs of their own.
bool overlappable(const std::vector<Node*>& order, size_t c, uint64_t epoch) {
  uint64_t feeds = ++g_epoch, follows = ++g_epoch;
  size_t related = 1;
  std::vector<Node*> stack{order[c]};
  while (!stack.empty()) {  // what it depends on (all before it)
    Node* m = stack.back();
    stack.pop_back();
    for (const array& in : m->inputs) {
      Node* p = in.desc()->node.get();
      if (p && p->mark == epoch) {
        p->mark = feeds;
        related++;
        stack.push_back(p);
      }
    }
  }
  order[c]->mark = follows;
  for (size_t i = c + 1; i < order.size(); i++) {  // what depends on it (all after it)
    for (const array& in : order[i]->inputs) {
      Node* p = in.desc()->node.get();
      if (p && p->mark == follows) {
        order[i]->mark = follows;
        related++;
        break;
      }
    }
  }
  return related < order.size();
}

void run_scheduled(std::vector<Node*> order, bool (*is_comm)(const Primitive&)) {
  auto sp = std::make_shared<Schedule>();
  Schedule& s = *sp;
  size_t n = order.size();
  s.order = std::move(order);
  s.comm.assign(n, 0);
  s.waiting.assign(n, 0);
  s.consumers.resize(n);
  std::unordered_map<Node*, int> pos;
  pos.reserve(n * 2);
  for (size_t i = 0; i < n; i++) pos.emplace(s.order[i], static_cast<int>(i));
  for (size_t i = 0; i < n; i++) {
    Node* m = s.order[i];
    if (is_comm(*m->prim)) {
      s.comm[i] = 1;
      s.comm_seq.push_back(static_cast<int>(i));
    }
    for (const array& in : m->inputs) {
      auto it = pos.find(in.desc()->node.get());
      if (it == pos.end()) continue;
      s.waiting[i]++;
      s.consumers[static_cast<size_t>(it->second)].push_back(static_cast<int>(i));
    }
    if (s.waiting[i] == 0 && !s.comm[i]) s.ready.push(static_cast<int>(i));
  }
  bool started = false;
  auto run_here = [&](std::unique_lock<std::mutex>& l, int i) {
    l.unlock();
    std::exception_ptr err = run_caught(s.order[static_cast<size_t>(i)]);
    l.lock();
    if (err)
      s.fail(err);
    else
      s.finish(i);
  };
  std::unique_lock<std::mutex> l(s.mu);
  while (s.done < n && !s.failed) {
    // hand out the communication nodes that can start, in the graph's order
    bool ran = false;
    while (s.next_comm < s.comm_seq.size() && s.waiting[static_cast<size_t>(s.comm_seq[s.next_comm])] == 0) {
      int c = s.comm_seq[s.next_comm++];
      if (s.ready.empty() && s.queue.empty() && !s.comm_busy) {
        // nothing to overlap it with: no hand-off
        g_inline.fetch_add(1, std::memory_order_relaxed);
        run_here(l, c);
        ran = true;
        break;
      }
      g_offloaded.fetch_add(1, std::memory_order_relaxed);
      s.queue.push_back(c);
      if (!started) {
        comm_thread().start(sp);
        started = true;
      }
      s.to_comm.notify_one();
    }
    if (ran || s.failed) continue;
    if (!s.ready.empty()) {
      int i = s.ready.top();
      s.ready.pop();
      run_here(l, i);
      continue;
    }
    if (s.queue.empty() && !s.comm_busy) {
      s.fail(std::make_exception_ptr(std::logic_error("[eval] the schedule stalled (a cycle in the graph?)")));
      break;
    }
    s.to_main.wait(l);
  }
  if (started) {
    s.closing = true;
    s.to_comm.notify_one();
    s.to_main.wait(l, [&] { return s.comm_exited; });
  }
  if (s.failed) std::rethrow_exception(s.error);
}
}  // namespace

void set_communication_test(bool (*is_communication)(const Primitive&)) { g_is_comm.store(is_communication); }

EvalStats eval_stats() {
  EvalStats st;
  st.comm_offloaded = g_offloaded.load();
  st.comm_inline = g_inline.load();
  st.async_jobs = g_async_jobs.load();
  st.batched = g_batched.load();
  return st;
}

namespace {
// Evaluates `outputs`; the caller holds the evaluation lock.
void eval_locked(const std::vector<array>& outputs) {
  uint64_t epoch = ++g_epoch;
  std::vector<Node*> order;
  std::vector<std::pair<Node*, size_t>> stack;
  for (auto& a : outputs) {
    if (!a.valid()) continue;
    Node* n = pending(a);
    if (!n || n->mark == epoch) continue;
    n->mark = epoch;
    stack.emplace_back(n, 0);
    while (!stack.empty()) {
      Node* top = stack.back().first;
      size_t i = stack.back().second;
      if (i < top->inputs.size()) {
        stack.back().second = i + 1;
        Node* m = pending(top->inputs[i]);
        if (m && m->mark != epoch) {
          m->mark = epoch;
          stack.emplace_back(m, 0);
        }
      } else {
        order.push_back(top);
        stack.pop_back();
      }
    }
  }
  if (auto is_comm = g_is_comm.load(std::memory_order_relaxed)) {
    size_t ncomm = 0, first = 0;
    for (size_t i = 0; i < order.size(); i++) {
      if (is_comm(*order[i]->prim) && ncomm++ == 0) first = i;
    }
    // only collectives, or one that every other node feeds or follows:
    // nothing to overlap, so no scheduler and no hand-off
    if (ncomm == order.size() || (ncomm == 1 && !overlappable(order, first, epoch))) {
      g_inline.fetch_add(ncomm, std::memory_order_relaxed);
    } else if (ncomm) {
      run_scheduled(std::move(order), is_comm);
      return;
    }
  }
  std::vector<std::vector<Node*>> batches = sibling_batches(order, epoch);  // empty: none
  for (size_t i = 0; i < order.size(); ++i) {
    if (!batches.empty() && !batches[i].empty()) {
      g_batched.fetch_add(batches[i].size(), std::memory_order_relaxed);
      run_batch(batches[i]);
    } else if (order[i]) {  // (null: run in an earlier node's batch)
      run_node(order[i]);
    }
  }
}


// ---- asynchronous evaluation -------------------------------------------------
//
// async_eval hands its arrays to one worker thread and returns; the caller
// goes on building the next graph while they compute. The worker runs a job
// only while it holds the evaluation lock, and picks no new job while some
// other thread waits for that lock (EvalLock pauses it), so an eval() of an
// array the worker is computing waits for that job only, and an eval() of
// anything else runs as soon as the running job ends.
//
// Thread-safety of the graph: the worker writes only nodes reachable from
// its jobs (it computes and detaches them). Other threads may build new
// nodes on those arrays meanwhile (they copy the descriptors and read their
// shape and dtype, which never change) and drop their handles (reference
// counts are atomic); they read a descriptor's node or buffer only through
// settled() or under the evaluation lock. What inspects graphs (tracing by
// the transforms and compile, export, Graphviz output) first waits for the
// worker (wait_async). Collectives are ordered by the graph, so once a
// distributed group is up async_eval evaluates at once, in program order.
// Runs an evaluation whose errors are raised later, by the next eval of its
// arrays (a failed node leaves them uncomputed), as MLX's async_eval does.
template <class F>
void errors_later(F&& evaluate) {
  try {
    evaluate();
  } catch (const std::exception&) {
  }
}

class AsyncWorker {
 public:
  AsyncWorker() {
    const char* e = std::getenv("EMBER_ASYNC_EVAL");
    enabled_ = !(e && std::strcmp(e, "0") == 0);
    std::thread([this] { loop(); }).detach();
    set_before_trace([] { wait_async(); });  // before that no job can exist
    // a C++ program that returns with a job in flight: finish it before the
    // statics it uses are destroyed
    std::atexit([] { wait_async(); });
  }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_enabled(bool on) { enabled_.store(on); }

  void submit(std::vector<array> job) {
    {
      std::lock_guard<std::mutex> l(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  void pause() {
    std::lock_guard<std::mutex> l(mu_);
    ++paused_;
  }
  void resume() {
    bool wake;
    {
      std::lock_guard<std::mutex> l(mu_);
      wake = --paused_ == 0 && !jobs_.empty();
    }
    if (wake) cv_.notify_one();  // an idle worker stays asleep through eval calls
  }
  // The queued jobs (the caller holds the evaluation lock and runs them).
  std::deque<std::vector<array>> take_all() {
    std::lock_guard<std::mutex> l(mu_);
    return std::move(jobs_);
  }

 private:
  void loop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return !jobs_.empty() && paused_ == 0; });
      }
      std::vector<array> job;
      {
        std::lock_guard<std::recursive_mutex> g(eval_mutex());
        {
          std::lock_guard<std::mutex> l(mu_);
          if (jobs_.empty() || paused_ > 0) continue;  // someone else waits for the lock, or took the jobs
          job = std::move(jobs_.front());
          jobs_.pop_front();
        }
        ++t_eval_depth;
        errors_later([&] { eval_locked(job); });
        --t_eval_depth;
      }
      job.clear();  // outside the lock: freeing a borrowed buffer may wait for the GIL
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<array>> jobs_;
  int paused_ = 0;
  std::atomic<bool> enabled_{true};
};

AsyncWorker& async_worker() {
  static AsyncWorker* w = new AsyncWorker();  // parked between jobs, never destroyed
  return *w;
}

EvalLock::EvalLock() : lock_(eval_mutex(), std::defer_lock) {
  if (t_eval_depth == 0) {
    async_worker().pause();
    paused_ = true;
  }
  if (!lock_.try_lock()) {
    try {
      blocking([&] { lock_.lock(); });
    } catch (...) {
      if (paused_) async_worker().resume();
      throw;
    }
  }
  ++t_eval_depth;
}

EvalLock::~EvalLock() {
  --t_eval_depth;
  lock_.unlock();
  if (paused_) async_worker().resume();
}

bool all_settled(const std::vector<array>& outputs) {
  for (const array& a : outputs)
    if (!settled(a)) return false;
  return true;
}
}  // namespace

void set_blocking_hook(void (*hook)(const std::function<void()>&)) { g_blocking_hook = hook; }

void set_async_eval(bool on) { async_worker().set_enabled(on); }

bool set_sibling_batches(bool on) { return sibling_batches_on().exchange(on); }

void wait_async() {
  EvalLock lock;  // the running job, if any, has ended
  if (t_eval_depth > 1) return;  // inside an evaluation: the worker cannot run now
  for (auto& job : async_worker().take_all()) errors_later([&] { eval_locked(job); });
}

// Every stream's work is computed by eval on the calling thread or by the
// one asynchronous worker: waiting for the worker is waiting for every stream.
void synchronize(const Stream&) { wait_async(); }

void eval(const std::vector<array>& outputs) {
  if (all_settled(outputs)) return;
  EvalLock lock;
  eval_locked(outputs);
}

void async_eval(const std::vector<array>& outputs) {
  // as MLX: an array that depends on a transform's traced inputs cannot be
  // evaluated asynchronously (eval inside grad is allowed, async_eval is not)
  for (const array& a : outputs) {
    if (a.is_tracer()) throw std::invalid_argument("[async_eval] Not allowed inside a graph transformation.");
  }
  std::vector<array> todo;
  for (const array& a : outputs)
    if (!settled(a)) todo.push_back(a);
  if (todo.empty()) return;
  AsyncWorker& w = async_worker();
  if (w.enabled() && t_eval_depth == 0 && !in_tracing()) {
    g_async_jobs.fetch_add(1, std::memory_order_relaxed);
    w.submit(std::move(todo));
    return;
  }
  // inline: its errors still surface at the next evaluation of these arrays
  errors_later([&] { eval(todo); });
}

}  // namespace ember
