// Collectives between processes over MPI (the distributed area).
//
//   auto g = distributed::init(false);             // the world group (size 1 without MPI)
//   array s = distributed::all_sum(x, g);          // lazy: summed over the ranks when evaluated
//
// MPI is not linked: mpi.cpp loads libmpi at run time (EMBER_MPI_LIBRARY,
// the active environment's lib/, then the system) and declares the few entry
// points it calls, for Open MPI's ABI (handles are addresses of named
// globals) and MPICH's (handles are ints). Every collective is a graph node (primitives below) whose
// eval_cpu first checks that all ranks agree on the operation, dtype and
// shape (ValueError naming both ranks' shapes otherwise) with one message
// exchanged point to point, which carries a reduction of at most 1 KB
// itself (EMBER_DISTRIBUTED_CHECKS=0 skips it where it carries no data, a
// round trip, for latency) and then waits for MPI with a deadline
// (EMBER_DISTRIBUTED_TIMEOUT seconds, default 300; RuntimeError when it
// passes, e.g. when a peer died).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/ops.h"
#include "ember/primitive.h"

namespace ember::distributed {

struct Comm;  // an MPI communicator (mpi.cpp)

// A group of processes; a default-constructed group is this process alone.
class Group {
 public:
  Group() = default;
  explicit Group(std::shared_ptr<Comm> c);
  int rank() const;
  int size() const;
  // MPI_Comm_split: ranks of equal color form a group, ordered by key (-1: rank).
  Group split(int color, int key = -1) const;
  const std::shared_ptr<Comm>& comm() const { return comm_; }

 private:
  std::shared_ptr<Comm> comm_;
};

// Folders searched for libmpi before the system's (the Python package passes
// the active environment's lib/ folders).
void set_search_dirs(std::vector<std::string> dirs);
// Whether an MPI library can be loaded (it is loaded, not initialised).
bool is_available();
// The loaded library's path ("" before a successful load) and why loading
// failed ("" if it did not).
std::string library_path();
std::string load_error();
// Whether this process was started by an MPI launcher (mpirun, srun, ...).
bool launched();
// The world group. Without MPI or a launcher: this process alone, unless
// strict (then RuntimeError saying what to install).
Group init(bool strict);
void finalize();  // MPI_Finalize if init started MPI (idempotent)

enum class ReduceKind : int { sum = 0, max = 1, min = 2 };

array all_reduce(const array& x, ReduceKind kind, const Group& g, const StreamOrDevice& s = {});
array all_sum(const array& x, const Group& g, const StreamOrDevice& s = {});
array all_max(const array& x, const Group& g, const StreamOrDevice& s = {});
array all_min(const array& x, const Group& g, const StreamOrDevice& s = {});
array all_gather(const array& x, const Group& g, const StreamOrDevice& s = {});
array sum_scatter(const array& x, const Group& g, const StreamOrDevice& s = {});
array send(const array& x, int dst, const Group& g, const StreamOrDevice& s = {});
array recv(Shape shape, Dtype dtype, int src, const Group& g, const StreamOrDevice& s = {});

// The primitives. Each holds its group; eval_cpu runs the MPI call. They
// derive from Collective, which eval's scheduler runs on its communication
// thread beside the compute that does not depend on them (eval.h).
class Collective : public Primitive {
 public:
  using Primitive::Primitive;
};
class AllReduce final : public Collective {
 public:
  AllReduce(Stream s, Group g, ReduceKind k) : Collective(s), group_(std::move(g)), kind_(k) {}
  const char* name() const override;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  ReduceKind kind() const { return kind_; }

 private:
  Group group_;
  ReduceKind kind_;
};

class AllGather final : public Collective {
 public:
  AllGather(Stream s, Group g) : Collective(s), group_(std::move(g)) {}
  const char* name() const override { return "AllGather"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES

 private:
  Group group_;
};

class SumScatter final : public Collective {
 public:
  SumScatter(Stream s, Group g) : Collective(s), group_(std::move(g)) {}
  const char* name() const override { return "SumScatter"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES

 private:
  Group group_;
};

// The output is the input (a view), so that graphs can depend on the send.
class Send final : public Collective {
 public:
  Send(Stream s, Group g, int dst) : Collective(s), group_(std::move(g)), dst_(dst) {}
  const char* name() const override { return "Send"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_view() const override { return true; }
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;

 private:
  Group group_;
  int dst_;
};

class Recv final : public Collective {
 public:
  Recv(Stream s, Group g, int src) : Collective(s), group_(std::move(g)), src_(src) {}
  const char* name() const override { return "Recv"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

 private:
  Group group_;
  int src_;
};

}  // namespace ember::distributed
