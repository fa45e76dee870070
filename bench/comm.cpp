// sluice-bench-comm-<backend>: sluice::comm next to the raw engine in the same
// run, comparable with nccl-tests. Run under an MPI launcher:
//   mpirun -np 2 sluice bench comm [--min-bytes=8] [--max-bytes=1073741824]
//          [--iters=N] [--warmup=N] [--trials=3] [--ops=sendrecv,all_reduce,...]
//          [--json=F] [--csv=F]
//
// Ops (as nccl-tests names them): sendrecv (each rank sends to the next and
// receives from the previous, one group), all_reduce (sum of float), broadcast
// (root 0), all_gather. Bytes: per rank (all_gather: what each rank gives).
// Method, per op and size: `iters` operations back to back, after `warmup`
// of them, timed from the first enqueue to the end of synchronize() (sluice)
// or of the last blocking MPI call (raw: MPI_Sendrecv, MPI_Allreduce,
// MPI_Bcast, MPI_Allgather on a duplicate of MPI_COMM_WORLD), the slowest rank's
// time (MPI_MAX, as nccl-tests); sluice and raw trials alternate, the median
// of --trials is reported. algbw = bytes / time; busbw = algbw * the factor of
// nccl-tests (all_reduce 2(n-1)/n, all_gather (n-1)/n, others 1). ratio = raw
// time / sluice time (> 1: sluice faster). After the trials of each size both
// sides' data is checked against the expected values.
//
// The mpi engine's raw counterpart is plain MPI from the calling thread.
// Host backend: every buffer is host memory.
#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
namespace comm = sluice::comm;

struct options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{1} << 30;
  int iters = 0;  // 0: by size
  int warmup = 0;
  int trials = 3;
  std::vector<std::string> ops = {"sendrecv", "all_reduce", "broadcast", "all_gather"};
  std::string json, csv;
};

struct row {
  std::string op;
  std::size_t bytes = 0;
  int iters = 0;
  double sluice_us = 0, raw_us = 0;  // per operation, median of trials
  double algbw = 0, busbw = 0, raw_algbw = 0, raw_busbw = 0;  // GB/s, 1e9 bytes
  bool checked = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int iterations_for(std::size_t bytes, const options& o) {
  if (o.iters > 0) return o.iters;
  if (bytes <= 64 * 1024) return 200;
  if (bytes <= 4 * 1024 * 1024) return 50;
  if (bytes <= 64 * 1024 * 1024) return 10;
  return 4;
}

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather") return static_cast<double>(n - 1) / n;
  return 1.0;
}

// The slowest rank's seconds.
double slowest(double seconds) {
  double worst = seconds;
  MPI_Allreduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

struct buffers {
  std::vector<float> in, out;
};

void fill_input(buffers& b, int rank, std::size_t count) {
  b.in.assign(count, 0.0f);
  for (std::size_t i = 0; i < count; ++i) b.in[i] = static_cast<float>((rank + 1) * ((i % 97) + 1));
}

// What out must hold after one op (all_reduce of small integers in float: exact).
bool check(const std::string& op, const buffers& b, int rank, int n, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const float unit = static_cast<float>((i % 97) + 1);
    float expected = 0;
    if (op == "sendrecv")
      expected = static_cast<float>(((rank + n - 1) % n) + 1) * unit;
    else if (op == "all_reduce")
      expected = static_cast<float>(n * (n + 1) / 2) * unit;
    else if (op == "broadcast")
      expected = 1.0f * unit;  // rank 0's
    else
      break;
    if (b.out[i] != expected) return false;
  }
  if (op == "all_gather")
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < count; ++i)
        if (b.out[static_cast<std::size_t>(r) * count + i] !=
            static_cast<float>((r + 1) * ((i % 97) + 1)))
          return false;
  return true;
}

// out cleared, except the broadcast root's, which holds what it sends.
void reset(const std::string& op, buffers& b, int rank, std::size_t count) {
  std::fill(b.out.begin(), b.out.end(), -1.0f);
  if (op == "broadcast" && rank == 0) std::memcpy(b.out.data(), b.in.data(), count * sizeof(float));
}

void sluice_op(const std::string& op, sluice::stream_ref s, buffers& b, std::size_t count,
               const comm::communicator& c) {
  const int n = c.size();
  const int rank = c.rank();
  if (op == "sendrecv") {
    comm::group g(c);
    comm::send(s, b.in.data(), count * sizeof(float), (rank + 1) % n, c);
    comm::recv(s, b.out.data(), count * sizeof(float), (rank + n - 1) % n, c);
  } else if (op == "all_reduce") {
    comm::all_reduce(s, b.in.data(), b.out.data(), count, comm::reduce_op::sum, c);
  } else if (op == "broadcast") {
    comm::broadcast(s, b.out.data(), count, 0, c);
  } else {
    comm::all_gather(s, b.in.data(), b.out.data(), count, c);
  }
}

void raw_op(const std::string& op, buffers& b, std::size_t count, MPI_Comm world) {
  int n = 1, rank = 0;
  MPI_Comm_size(world, &n);
  MPI_Comm_rank(world, &rank);
  const int k = static_cast<int>(count);
  if (op == "sendrecv") {
    MPI_Sendrecv(b.in.data(), k, MPI_FLOAT, (rank + 1) % n, 0, b.out.data(), k, MPI_FLOAT,
                 (rank + n - 1) % n, 0, world, MPI_STATUS_IGNORE);
  } else if (op == "all_reduce") {
    MPI_Allreduce(b.in.data(), b.out.data(), k, MPI_FLOAT, MPI_SUM, world);
  } else if (op == "broadcast") {
    MPI_Bcast(b.out.data(), k, MPI_FLOAT, 0, world);
  } else {
    MPI_Allgather(b.in.data(), k, MPI_FLOAT, b.out.data(), k, MPI_FLOAT, world);
  }
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::size_t n = std::strlen(name);
      return a.compare(0, n, name) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--min-bytes=")) {
      o.min_bytes = std::stoull(v);
    } else if (const char* v2 = value("--max-bytes=")) {
      o.max_bytes = std::stoull(v2);
    } else if (const char* v3 = value("--iters=")) {
      o.iters = std::stoi(v3);
    } else if (const char* v4 = value("--warmup=")) {
      o.warmup = std::stoi(v4);
    } else if (const char* v5 = value("--trials=")) {
      o.trials = std::stoi(v5);
    } else if (const char* v6 = value("--json=")) {
      o.json = v6;
    } else if (const char* v7 = value("--csv=")) {
      o.csv = v7;
    } else if (const char* v8 = value("--ops=")) {
      o.ops.clear();
      std::stringstream list(v8);
      std::string op;
      while (std::getline(list, op, ','))
        if (op == "sendrecv" || op == "all_reduce" || op == "broadcast" || op == "all_gather")
          o.ops.push_back(op);
        else
          return false;
    } else {
      return false;
    }
  }
  return o.min_bytes >= 4 && o.max_bytes >= o.min_bytes && o.trials >= 1 && !o.ops.empty();
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  options o;
  if (!parse(argc, argv, o) || n < 2) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: mpirun -np N (N >= 2) sluice-bench-comm-%s [--min-bytes=8] "
                   "[--max-bytes=1073741824] [--iters=N] [--warmup=N] [--trials=3] "
                   "[--ops=sendrecv,all_reduce,broadcast,all_gather] [--json=F] [--csv=F]\n",
                   sluice::backend_name());
    MPI_Finalize();
    return 2;
  }
  int failures = 0;
  std::vector<row> rows;
  {
    const sluice::device dev(0);
    comm::communicator c(MPI_COMM_WORLD, dev, comm::engine::mpi);
    sluice::stream s(dev);
    MPI_Comm raw_world = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw_world);
    if (rank == 0) {
      std::printf("sluice-bench-comm-%s: %d ranks, engine %s, MPI thread level %d\n",
                  sluice::backend_name(), n, comm::to_string(c.kind()), provided);
      std::printf("%-11s %12s %6s %11s %9s %9s %11s %9s %9s %7s %5s\n", "op", "bytes", "iters",
                  "sluice_us", "algbw", "busbw", "raw_us", "algbw", "busbw", "ratio", "data");
    }
    for (const std::string& op : o.ops) {
      for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
        const std::size_t count = bytes / sizeof(float);
        buffers b;
        fill_input(b, rank, count);
        b.out.assign(op == "all_gather" ? count * static_cast<std::size_t>(n) : count, -1.0f);
        reset(op, b, rank, count);
        const int iters = iterations_for(bytes, o);
        const int warmup = o.warmup > 0 ? o.warmup : std::max(2, iters / 10);
        std::vector<double> sluice_t, raw_t;
        bool ok = true;
        for (int trial = 0; trial < o.trials; ++trial) {
          // sluice: enqueue them all, then wait.
          for (int i = 0; i < warmup; ++i) sluice_op(op, s, b, count, c);
          s.synchronize();
          MPI_Barrier(MPI_COMM_WORLD);
          auto t0 = clock_type::now();
          for (int i = 0; i < iters; ++i) sluice_op(op, s, b, count, c);
          s.synchronize();
          sluice_t.push_back(
              slowest(std::chrono::duration<double>(clock_type::now() - t0).count()) / iters);
          ok = ok && check(op, b, rank, n, count);
          reset(op, b, rank, count);
          // raw: the blocking MPI calls, back to back.
          for (int i = 0; i < warmup; ++i) raw_op(op, b, count, raw_world);
          MPI_Barrier(MPI_COMM_WORLD);
          t0 = clock_type::now();
          for (int i = 0; i < iters; ++i) raw_op(op, b, count, raw_world);
          raw_t.push_back(
              slowest(std::chrono::duration<double>(clock_type::now() - t0).count()) / iters);
          ok = ok && check(op, b, rank, n, count);
          reset(op, b, rank, count);
        }
        int all_ok = ok ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        row r;
        r.op = op;
        r.bytes = bytes;
        r.iters = iters;
        r.sluice_us = median(sluice_t) * 1e6;
        r.raw_us = median(raw_t) * 1e6;
        r.algbw = static_cast<double>(bytes) / (r.sluice_us * 1e3);
        r.raw_algbw = static_cast<double>(bytes) / (r.raw_us * 1e3);
        r.busbw = r.algbw * bus_factor(op, n);
        r.raw_busbw = r.raw_algbw * bus_factor(op, n);
        r.checked = all_ok != 0;
        if (!r.checked) ++failures;
        rows.push_back(r);
        if (rank == 0)
          std::printf("%-11s %12zu %6d %11.2f %9.3f %9.3f %11.2f %9.3f %9.3f %7.3f %5s\n",
                      op.c_str(), bytes, iters, r.sluice_us, r.algbw, r.busbw, r.raw_us,
                      r.raw_algbw, r.raw_busbw, r.raw_us / r.sluice_us, r.checked ? "ok" : "BAD");
        if (bytes > o.max_bytes / 2) break;
      }
    }
    MPI_Comm_free(&raw_world);
  }
  if (rank == 0) {
    if (!o.csv.empty()) {
      std::ofstream csv(o.csv);
      csv << "op,bytes,ranks,iters,sluice_us,sluice_algbw,sluice_busbw,raw_us,raw_algbw,"
             "raw_busbw,ratio,data\n";
      for (const row& r : rows)
        csv << r.op << ',' << r.bytes << ',' << n << ',' << r.iters << ',' << r.sluice_us << ','
            << r.algbw << ',' << r.busbw << ',' << r.raw_us << ',' << r.raw_algbw << ','
            << r.raw_busbw << ',' << r.raw_us / r.sluice_us << ',' << (r.checked ? "ok" : "bad")
            << '\n';
      std::printf("csv:  %s\n", o.csv.c_str());
    }
    if (!o.json.empty()) {
      using json = nlohmann::ordered_json;
      json doc = {{"bench", "sluice-bench-comm"},
                  {"backend", sluice::backend_name()},
                  {"ranks", n},
                  {"engine", "mpi"},
                  {"method", "iters back to back, slowest rank, median of trials; ratio = "
                             "raw_us / sluice_us"},
                  {"rows", json::array()}};
      for (const row& r : rows)
        doc["rows"].push_back({{"op", r.op},
                               {"bytes", r.bytes},
                               {"iters", r.iters},
                               {"sluice_us", r.sluice_us},
                               {"sluice_algbw_GBps", r.algbw},
                               {"sluice_busbw_GBps", r.busbw},
                               {"raw_us", r.raw_us},
                               {"raw_algbw_GBps", r.raw_algbw},
                               {"raw_busbw_GBps", r.raw_busbw},
                               {"ratio", r.raw_us / r.sluice_us},
                               {"data", r.checked ? "ok" : "bad"}});
      std::ofstream js(o.json);
      js << doc.dump(2) << '\n';
      std::printf("json: %s\n", o.json.c_str());
    }
    if (failures > 0) std::printf("%d rows with wrong data\n", failures);
  }
  MPI_Finalize();
  return failures > 0 ? 1 : 0;
}
