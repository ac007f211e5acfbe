// The MPI calls behind the distributed primitives (mpi.cpp): raw buffers of
// one dtype, every wait bounded by the timeout. Private to distributed/.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ember/distributed/distributed.h"

namespace ember::distributed {

struct Comm {
  void* handle = nullptr;  // MPI_Comm (Open MPI: a pointer)
  int rank = 0;
  int size = 1;
  bool owned = false;  // created by split: freed with MPI_Comm_free
  // Each member's process id and host (a hash of its name), exchanged when
  // the group is made, to name a peer that died.
  std::vector<int64_t> pids, hosts;
  // Set when a collective on the group timed out: MPI may still be working
  // on it, so every later collective on the group raises at once.
  std::string broken;
  ~Comm();
};


namespace mpi {

// A wait that ran past EMBER_DISTRIBUTED_TIMEOUT: the MPI request is still
// outstanding, so its buffers must stay alive (distributed.cpp keeps them).
struct Timeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Keeps `b` for the life of the process (a buffer an outstanding request
// may still read or write after a Timeout); null is ignored.
void abandon(std::shared_ptr<Buffer> b);

// What a rank is about to do, exchanged before the data so that ranks that
// disagree raise instead of corrupting or hanging.
struct Op {
  const char* name;  // the op, for messages
  int code;          // which collective (and reduction)
  Dtype dtype;
  const Shape* shape;
  int inline_kind = -1;  // a reduction (ReduceKind) whose data may ride with the check
};

// Raises (ValueError) unless every rank of the group is about to run the
// same collective on the same dtype and shape. For a reduction of at most
// 16 KB (op.inline_kind >= 0, `data` its input) the data rides in the same
// message: it is reduced into `result` and the call returns true.
bool check_agree(Comm& c, const Op& op, const void* data = nullptr, void* result = nullptr);
void all_reduce(Comm& c, const void* in, void* out, int64_t count, Dtype dt, ReduceKind k);
void all_gather(Comm& c, const void* in, void* out, int64_t count, Dtype dt);
void reduce_scatter(Comm& c, const void* in, void* out, int64_t count_per_rank, Dtype dt);
void send(Comm& c, const Op& op, const void* buf, int64_t count, int dst);
void recv(Comm& c, const Op& op, void* buf, int64_t count, int src);

}  // namespace mpi
}  // namespace ember::distributed
