// sluice-comm-kill-<backend>: a rank killed mid-exchange must end the job
// through the launcher or surface as errc::comm_failure on the others: never
// a hang (COMM-7). Run by kill_check.cmake under mpirun with a time limit.
// Rank 1 exchanges once, then kills itself (SIGKILL) while rank 0 waits for
// its second message; rank 0 prints what it saw.
#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <csignal>
#include <cstdio>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  {
    sluice::comm::communicator c(MPI_COMM_WORLD, sluice::device(0));
    sluice::stream s(sluice::device(0));
    int value = rank;
    int other = -1;
    const int peer = rank == 0 ? 1 : 0;
    if (rank <= 1) {
      {
        sluice::comm::group g(c);
        sluice::comm::send(s, &value, sizeof value, peer, c);
        sluice::comm::recv(s, &other, sizeof other, peer, c);
      }
      s.synchronize();
      std::printf("rank %d: first exchange done (got %d)\n", rank, other);
      std::fflush(stdout);
      if (rank == 1) std::raise(SIGKILL);  // mid-exchange: rank 0 waits for a second message
      sluice::comm::recv(s, &other, sizeof other, 1, c);
      try {
        s.synchronize();
        std::printf("rank 0: the receive from the killed rank completed\n");
        code = 1;
      } catch (const sluice::error& e) {
        std::printf("rank 0: %s: %s\n", sluice::to_string(e.code()), e.what());
        code = e.code() == sluice::errc::comm_failure ? 3 : 1;
      }
    }
  }
  MPI_Finalize();
  return code;
}
