// The MPI calls behind the distributed primitives (mpi.cpp): raw buffers of
// one dtype, every wait bounded by the timeout. Private to distributed/.
#pragma once

#include <cstdint>

#include "ember/distributed/distributed.h"

namespace ember::distributed {

struct Comm {
  void* handle = nullptr;  // MPI_Comm (Open MPI: a pointer)
  int rank = 0;
  int size = 1;
  bool owned = false;  // created by split: freed with MPI_Comm_free
  ~Comm();
};

namespace mpi {

// What a rank is about to do, exchanged before the data so that ranks that
// disagree raise instead of corrupting or hanging.
struct Op {
  const char* name;  // the op, for messages
  int code;          // which collective (and reduction)
  Dtype dtype;
  const Shape* shape;
};

void check_agree(const Comm& c, const Op& op);
void all_reduce(const Comm& c, const void* in, void* out, int64_t count, Dtype dt, ReduceKind k);
void all_gather(const Comm& c, const void* in, void* out, int64_t count, Dtype dt);
void reduce_scatter(const Comm& c, const void* in, void* out, int64_t count_per_rank, Dtype dt);
void send(const Comm& c, const Op& op, const void* buf, int64_t count, int dst);
void recv(const Comm& c, const Op& op, void* buf, int64_t count, int src);

}  // namespace mpi
}  // namespace ember::distributed
