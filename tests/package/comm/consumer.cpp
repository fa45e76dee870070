// One stream-ordered all_reduce and a self send/receive through sluice::comm,
// in a process of its own (MPI's singleton start: one rank).
#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int bad = 0;
  {
    sluice::comm::communicator c(MPI_COMM_WORLD, sluice::device(0));
    sluice::stream s(sluice::device(0));
    const std::int64_t in[2] = {20, 22};
    std::int64_t out[2] = {0, 0};
    sluice::comm::all_reduce(s, in, out, 2, sluice::comm::reduce_op::sum, c);
    int sent = 42, got = 0;
    {
      sluice::comm::group g(c);
      sluice::comm::send(s, &sent, sizeof sent, 0, c);
      sluice::comm::recv(s, &got, sizeof got, 0, c);
    }
    s.synchronize();
    if (out[0] != 20 * c.size() || out[1] != 22 * c.size() || got != 42) {
      std::printf("sluice::comm: all_reduce gave %lld %lld, the receive %d\n",
                  static_cast<long long>(out[0]), static_cast<long long>(out[1]), got);
      bad = 1;
    }
  }
  MPI_Finalize();
  if (bad == 0) std::printf("sluice::comm %s backend: ok\n", sluice::backend_name());
  return bad;
}
