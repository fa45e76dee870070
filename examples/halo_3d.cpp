// halo_3d: a 3-D 7-point heat stencil (double elements) decomposed over two
// devices of each rank and over MPI ranks, the six faces of every block moved
// by strided copies each step (examples/README.md).
//
//   [mpirun -np R] sluice-example-halo-3d-<backend> [--n=N] [--steps=S]
//          [--engine=mpi|nccl|automatic] [--mutation=wrong_face]
//
// The global domain is 2N x RN x N cells, periodic in every direction. Rank r
// owns two blocks of N^3 cells, block i (x from iN) on its device i, each with
// a ghost layer: (N+2)^3 doubles in a device_buffer, x fastest, so a row is
// (N+2) doubles (the pitch) and a plane N+2 rows. Per step, on block i's
// stream S_i:
//   x faces   the other block's (the other device's) faces: one strided
//             copy_peer_batch of two pieces (the ghost columns x = 0 and
//             x = N+1, 8 bytes wide, N rows, N planes), after the other
//             block's previous update (an event);
//   z faces   the block's own opposite faces (periodic, one block in z): two
//             strided copies on the device (whole rows, N rows, 1 plane);
//   y faces   the neighbouring ranks' blocks i (one communicator per device):
//             each face packed by a strided copy into a contiguous buffer in a
//             registered_host_memory range (N doubles wide, 1 row, N planes),
//             sent and received in one sluice::comm group, unpacked by a
//             strided copy into the ghosts (with one rank, unpacked as packed);
//   compute   the block copied to pinned memory, one stencil step in a host
//             function (on a GPU it would be a kernel; a host function runs on
//             every backend, the simulated CUDA runtime included), copied back
//             once the other block has read this block's faces (an event).
// At the end rank 0 gathers every block and compares it, bit for bit, with
// the same steps run by one process over the whole domain as one block: the
// exit status is 1 on any difference. --mutation=wrong_face pulls the x faces
// into the opposite ghosts: the check must then fail (ctest, label mutation).
//
// Needs 2 devices per rank (exit 77 otherwise). Rank r uses devices 2r and
// 2r+1 modulo the device count (on the host backend every process has its own
// SLUICE_HOST_DEVICES devices).
#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace comm = sluice::comm;

// Cell (x, y, z) of a cube of side n with a ghost layer, x fastest.
struct cube {
  std::size_t n = 0;
  std::size_t side() const { return n + 2; }
  std::size_t at(std::size_t x, std::size_t y, std::size_t z) const {
    return (z * side() + y) * side() + x;
  }
  std::size_t cells() const { return side() * side() * side(); }
  std::size_t pitch() const { return side() * sizeof(double); }
};

double initial(std::size_t gx, std::size_t gy, std::size_t gz) {
  return static_cast<double>((gx * 7 + gy * 13 + gz * 29 + gx * gy % 5) % 97) / 97.0;
}

// One explicit step of the interior of a box of nx x ny x nz cells (ghosts
// filled) at `u` into `v`; `row` and `plane` are the strides in elements.
// The reference and the blocks call this one function: the same operations in
// the same order, so the same bits.
void stencil(const double* u, double* v, std::size_t nx, std::size_t ny, std::size_t nz,
             std::size_t row, std::size_t plane) {
  for (std::size_t z = 1; z <= nz; ++z)
    for (std::size_t y = 1; y <= ny; ++y)
      for (std::size_t x = 1; x <= nx; ++x) {
        const std::size_t c = z * plane + y * row + x;
        const double around =
            u[c - 1] + u[c + 1] + u[c - row] + u[c + row] + u[c - plane] + u[c + plane];
        v[c] = u[c] + 0.125 * (around - 6.0 * u[c]);
      }
}

// The reference: the whole domain (nx x ny x nz, periodic) as one block.
std::vector<double> reference(std::size_t nx, std::size_t ny, std::size_t nz, int steps) {
  const std::size_t row = nx + 2, plane = row * (ny + 2);
  std::vector<double> u(plane * (nz + 2), 0.0), v(u.size(), 0.0);
  auto at = [&](std::size_t x, std::size_t y, std::size_t z) { return z * plane + y * row + x; };
  for (std::size_t z = 1; z <= nz; ++z)
    for (std::size_t y = 1; y <= ny; ++y)
      for (std::size_t x = 1; x <= nx; ++x) u[at(x, y, z)] = initial(x - 1, y - 1, z - 1);
  for (int t = 0; t < steps; ++t) {
    for (std::size_t z = 1; z <= nz; ++z)
      for (std::size_t y = 1; y <= ny; ++y) {
        u[at(0, y, z)] = u[at(nx, y, z)];
        u[at(nx + 1, y, z)] = u[at(1, y, z)];
      }
    for (std::size_t z = 1; z <= nz; ++z)
      for (std::size_t x = 1; x <= nx; ++x) {
        u[at(x, 0, z)] = u[at(x, ny, z)];
        u[at(x, ny + 1, z)] = u[at(x, 1, z)];
      }
    for (std::size_t y = 1; y <= ny; ++y)
      for (std::size_t x = 1; x <= nx; ++x) {
        u[at(x, y, 0)] = u[at(x, y, nz)];
        u[at(x, y, nz + 1)] = u[at(x, y, 1)];
      }
    stencil(u.data(), v.data(), nx, ny, nz, row, plane);
    std::swap(u, v);
  }
  return u;
}

// One block: its device memory, its pinned mirrors, its stream and events.
struct block {
  sluice::device dev;
  sluice::stream s;
  sluice::device_buffer<double> u;
  sluice::pinned_buffer<double> now, next;  // the compute step's input and output
  sluice::event updated, read;              // u holds the step; its x faces were read
  block(sluice::device d, std::size_t cells)
      : dev(d), s(d), u(d, cells), now(cells), next(cells), updated(d), read(d) {}
};

sluice::pitched_ptr at(double* base, const cube& c, std::size_t x, std::size_t y, std::size_t z) {
  return {base + c.at(x, y, z), c.pitch(), c.side()};
}
sluice::const_pitched_ptr at(const double* base, const cube& c, std::size_t x, std::size_t y,
                             std::size_t z) {
  return {base + c.at(x, y, z), c.pitch(), c.side()};
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::size_t n = 24;
  int steps = 10;
  comm::engine engine = comm::engine::automatic;
  bool wrong_face = false;  // test-only (ctest ...mutation.wrong_face): must give a wrong result
  bool bad = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--n=", 0) == 0)
      n = std::strtoull(argv[i] + 4, nullptr, 10);
    else if (a.rfind("--steps=", 0) == 0)
      steps = std::atoi(argv[i] + 8);
    else if (a == "--engine=mpi")
      engine = comm::engine::mpi;
    else if (a == "--engine=nccl")
      engine = comm::engine::nccl;
    else if (a == "--engine=automatic")
      engine = comm::engine::automatic;
    else if (a == "--mutation=wrong_face")
      wrong_face = true;
    else
      bad = true;
  }
  if (bad || n < 2 || n > 512 || steps < 1) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: [mpirun -np R] sluice-example-halo-3d [--n=N (2-512)] [--steps=S] "
                   "[--engine=mpi|nccl|automatic]\n");
    MPI_Finalize();
    return 1;
  }
  if (sluice::device_count() < 2) {
    if (rank == 0)
      std::printf("halo_3d: needs 2 devices per rank, the %s backend has %d: skipped\n",
                  sluice::backend_name(), sluice::device_count());
    MPI_Finalize();
    return 77;
  }
  int status = 0;
  {
    const cube c{n};
    const std::size_t face = n * n;  // cells of one face
    const std::size_t row_bytes = n * sizeof(double);
    const int count = sluice::device_count();
    const std::array<sluice::device, 2> devs = {sluice::device((2 * rank) % count),
                                                sluice::device((2 * rank + 1) % count)};
    for (int i = 0; i < 2; ++i)
      if (sluice::link(devs[1 - i], devs[i]).peer_access_possible)
        sluice::enable_peer_access(devs[1 - i], devs[i]);
    std::array<std::unique_ptr<block>, 2> blocks;
    std::array<std::unique_ptr<comm::communicator>, 2> comms;  // collective: same order everywhere
    for (int i = 0; i < 2; ++i) {
      blocks[i] = std::make_unique<block>(devs[i], c.cells());
      comms[i] = std::make_unique<comm::communicator>(MPI_COMM_WORLD, devs[i], engine);
    }
    // The y faces' contiguous buffers: per block lo-out, hi-out, lo-in, hi-in,
    // in one registered range (pinned for copies, unstaged by sluice::comm).
    std::vector<double> faces(8 * face, 0.0);
    sluice::registered_host_memory faces_registered(faces.data(), faces.size() * sizeof(double));
    auto face_buffer = [&](int i, int k) { return faces.data() + (4 * i + k) * face; };

    // Initial values into each block's interior (ghosts 0), uploaded.
    for (int i = 0; i < 2; ++i) {
      block& b = *blocks[i];
      double* h = b.now.data();
      std::fill(h, h + c.cells(), 0.0);
      std::fill(b.next.data(), b.next.data() + c.cells(), 0.0);
      for (std::size_t z = 1; z <= n; ++z)
        for (std::size_t y = 1; y <= n; ++y)
          for (std::size_t x = 1; x <= n; ++x)
            h[c.at(x, y, z)] = initial(i * n + x - 1, rank * n + y - 1, z - 1);
      sluice::copy(b.s, b.u.data(), h, c.cells() * sizeof(double));
      b.updated.record(b.s);
    }
    const int down = (rank + size - 1) % size, up = (rank + 1) % size;
    const sluice::extent x_face{sizeof(double), n, n}, y_face{row_bytes, 1, n},
        z_face{row_bytes, n, 1};
    sluice::copy_path x_path = sluice::copy_path::local;
    for (int t = 0; t < steps; ++t) {
      // Halos of both blocks first, then their updates: each wait below is
      // issued after the record it waits for and before that event's next one.
      for (int i = 0; i < 2; ++i) {
        block& b = *blocks[i];
        const block& o = *blocks[1 - i];
        double* const u = b.u.data();
        const double* const cu = u;  // u as a source
        const double* const ou = o.u.data();
        b.s.wait(o.updated);  // the other block's faces hold step t
        const std::size_t into_low = wrong_face ? n + 1 : 0, into_high = wrong_face ? 0 : n + 1;
        const sluice::strided_piece x_pieces[2] = {
            {at(u, c, into_low, 1, 1), at(ou, c, n, 1, 1), x_face},
            {at(u, c, into_high, 1, 1), at(ou, c, 1, 1, 1), x_face}};
        x_path = sluice::copy_peer_batch(b.s, b.dev, o.dev, x_pieces, 2);
        b.read.record(b.s);
        sluice::copy(b.s, at(u, c, 1, 1, 0), at(cu, c, 1, 1, n), z_face);
        sluice::copy(b.s, at(u, c, 1, 1, n + 1), at(cu, c, 1, 1, 1), z_face);
        // Packed: face y = 1 (to the rank below), y = n (to the rank above).
        // (With one rank the block is its own neighbour in y: the packed faces
        // are unpacked as they are, the two faces' footprints interleaving
        // with the ghosts' too much for one strided copy inside the block.)
        const sluice::pitched_ptr packed_low{face_buffer(i, 0), row_bytes, 1};
        const sluice::pitched_ptr packed_high{face_buffer(i, 1), row_bytes, 1};
        sluice::copy(b.s, packed_low, at(cu, c, 1, 1, 1), y_face);
        sluice::copy(b.s, packed_high, at(cu, c, 1, n, 1), y_face);
        int low_in = 1, high_in = 0;
        if (size > 1) {
          // With 2 ranks both neighbours are one rank: its two sends arrive
          // in this order, its low face first, which is this block's high ghost.
          comm::group g(*comms[i]);
          comm::send(b.s, face_buffer(i, 0), face * sizeof(double), down, *comms[i]);
          comm::send(b.s, face_buffer(i, 1), face * sizeof(double), up, *comms[i]);
          comm::recv(b.s, face_buffer(i, 3), face * sizeof(double), up, *comms[i]);
          comm::recv(b.s, face_buffer(i, 2), face * sizeof(double), down, *comms[i]);
          low_in = 2;
          high_in = 3;
        }
        const sluice::const_pitched_ptr in_low{face_buffer(i, low_in), row_bytes, 1};
        const sluice::const_pitched_ptr in_high{face_buffer(i, high_in), row_bytes, 1};
        sluice::copy(b.s, at(u, c, 1, 0, 1), in_low, y_face);
        sluice::copy(b.s, at(u, c, 1, n + 1, 1), in_high, y_face);
      }
      for (int i = 0; i < 2; ++i) {
        block& b = *blocks[i];
        double* const now = b.now.data();
        double* const next = b.next.data();
        sluice::copy(b.s, now, b.u.data(), c.cells() * sizeof(double));
        b.s.host_func(
            [now, next, n, side = c.side()] { stencil(now, next, n, n, n, side, side * side); });
        b.s.wait(blocks[1 - i]->read);  // the other block has read this block's faces
        sluice::copy(b.s, b.u.data(), next, c.cells() * sizeof(double));
        b.updated.record(b.s);
      }
    }
    // Every block's interior, gathered on rank 0 in rank and block order.
    std::vector<double> mine(2 * n * face);
    for (int i = 0; i < 2; ++i) {
      block& b = *blocks[i];
      sluice::copy(b.s, b.now.data(), b.u.data(), c.cells() * sizeof(double));
      b.s.synchronize();
      for (std::size_t z = 1; z <= n; ++z)
        for (std::size_t y = 1; y <= n; ++y)
          std::memcpy(&mine[((i * n + z - 1) * n + y - 1) * n], &b.now.data()[c.at(1, y, z)],
                      row_bytes);
    }
    std::vector<double> all(rank == 0 ? mine.size() * static_cast<std::size_t>(size) : 0);
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
               static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const std::size_t nx = 2 * n, ny = n * static_cast<std::size_t>(size), nz = n;
      const std::vector<double> expected = reference(nx, ny, nz, steps);
      std::size_t differ = 0;
      for (int r = 0; r < size; ++r)
        for (int i = 0; i < 2; ++i)
          for (std::size_t z = 0; z < n; ++z)
            for (std::size_t y = 0; y < n; ++y)
              for (std::size_t x = 0; x < n; ++x) {
                const double got =
                    all[(((static_cast<std::size_t>(r) * 2 + i) * n + z) * n + y) * n + x];
                const std::size_t gx = i * n + x + 1, gy = r * n + y + 1, gz = z + 1;
                const double want = expected[(gz * (ny + 2) + gy) * (nx + 2) + gx];
                if (std::memcmp(&got, &want, sizeof(double)) != 0) ++differ;
              }
      std::printf(
          "halo_3d: %d rank(s) x 2 blocks of %zu^3 cells (domain %zu x %zu x %zu, periodic), %d "
          "steps, backend %s, engine %s; rank 0 on devices %d and %d of %d\n",
          size, n, nx, ny, nz, steps, sluice::backend_name(), comm::to_string(comms[0]->kind()),
          devs[0].id(), devs[1].id(), count);
      std::printf("x faces: copy_peer_batch of 2 strided pieces, path %s\n",
                  sluice::to_string(x_path));
      std::printf("result: %s one block's run over the whole domain (%zu of %zu cells differ)\n",
                  differ == 0 ? "bit-identical to" : "DIFFERENT from", differ, nx * ny * nz);
      if (differ != 0) status = 1;
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
