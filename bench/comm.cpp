// sluice-bench-comm-<backend>: sluice::comm next to its raw counterpart in the
// same run, comparable with nccl-tests. Run under an MPI launcher:
//   mpirun -np 2 sluice bench comm [--min-bytes=8] [--max-bytes=1073741824]
//          [--iters=N] [--warmup=N] [--trials=3] [--ops=sendrecv,all_reduce,...]
//          [--engine=mpi|nccl|automatic] [--buffers=device|pinned|host]
//          [--json=F] [--csv=F] [--png=F]
//
// Ops (as nccl-tests names them): sendrecv (each rank sends to the next and
// receives from the previous, one group), all_reduce (sum of float), broadcast
// (root 0), all_gather. Bytes: per rank (all_gather: what each rank gives).
//
// Devices: each rank uses device (node-local rank % device count), printed.
// Buffers (--buffers): device memory of that device (sluice::device_buffer;
// the default on the GPU backends), pinned host memory (sluice::pinned_buffer)
// or pageable host memory (the default on the host backend). The same buffers
// serve both sides.
//
// The raw counterpart, per engine (--engine; automatic: what sluice chose):
//  - mpi, host or pinned buffers, or the host backend: the blocking MPI call
//    on the buffers (MPI_Sendrecv, MPI_Allreduce, MPI_Bcast, MPI_Allgather on
//    a duplicate of MPI_COMM_WORLD).
//  - mpi, device buffers on a GPU backend (sluice stages them through pinned
//    memory: the MPI is not GPU-aware): what a program would write by hand,
//    per operation: copy device->pinned on a stream, synchronize, the
//    blocking MPI call on pinned buffers, copy pinned->device, synchronize.
//  - nccl: raw NCCL on its own stream and communicator (ncclSend/ncclRecv in
//    one group, ncclAllReduce, ncclBroadcast, ncclAllGather), `iters` calls
//    back to back, then the stream synchronized (as nccl-tests does).
// The vendor's calls are in comm_raw_gpu.hpp, the host backend's stand-ins in
// comm_raw_host.hpp (SLUICE_COMM_RAW_HEADER).
//
// Method, per op and size: `iters` operations back to back, after `warmup`
// of them, timed from the first enqueue to the end of synchronize() (sluice)
// or of the last raw call (blocking MPI; NCCL: the stream synchronized), the
// slowest rank's time (MPI_MAX, as nccl-tests); sluice and raw trials
// alternate, the median of --trials is reported. algbw = bytes / time; busbw =
// algbw * the factor of nccl-tests (all_reduce 2(n-1)/n, all_gather (n-1)/n,
// others 1). ratio = raw time / sluice time (> 1: sluice faster); delta =
// sluice time - raw time. After every trial each side's result is copied back
// to the host and compared with the expected values.
// SLUICE_COMMBENCH_ENQUEUE=1 also prints rank 0's enqueue time per operation
// of both sides; SLUICE_COMMBENCH_SPLIT=1 times the sluice side again in two
// parts (a line "# <op> <bytes> split"): the enqueue while a flag holds the
// stream (the calling thread alone), then the drain once the flag is stored
// (the engine and the messages alone): which of the two bounds the loop.
// SLUICE_COMMBENCH_RAW_HELD=1 holds another stream of the device on a flag
// (a stream memory wait) while the raw side is timed, as sluice holds its
// streams during an operation: whether that alone slows the raw loop.
//
// Exit status: 0; 1 wrong data (or the PNG failed); 2 usage; 77 the engine
// (or its raw counterpart) is not available in this build: no rows.
#include SLUICE_COMM_RAW_HEADER

#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;
namespace comm = sluice::comm;

enum class memory { device, pinned, host };

const char* to_string(memory m) {
  switch (m) {
    case memory::device: return "device";
    case memory::pinned: return "pinned";
    case memory::host: return "host";
  }
  return "?";
}

// How the raw side communicates.
enum class raw_kind { mpi, staged_mpi, nccl };

const char* to_string(raw_kind k) {
  switch (k) {
    case raw_kind::mpi: return "mpi";
    case raw_kind::staged_mpi: return "mpi_pinned_staging";
    case raw_kind::nccl: return "nccl";
  }
  return "?";
}

bool gpu_backend() { return std::strcmp(sluice::backend_name(), "host") != 0; }

struct options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{1} << 30;
  int iters = 0;  // 0: by size
  int warmup = 0;
  int trials = 3;
  std::vector<std::string> ops = {"sendrecv", "all_reduce", "broadcast", "all_gather"};
  comm::engine engine = comm::engine::mpi;
  memory buffers = memory::host;
  bool buffers_given = false;  // else: device on the GPU backends and for nccl, else host
  std::string json, csv, png;
};

struct row {
  std::string op;
  std::size_t bytes = 0;
  int iters = 0;
  double sluice_us = 0, raw_us = 0;  // per operation, median of trials
  // Rank 0's enqueue time per operation (first enqueue to the last call's
  // return, before the wait), median of trials: above the whole time per
  // operation's share, the host side bounds the loop.
  double sluice_enqueue_us = 0, raw_enqueue_us = 0;
  double algbw = 0, busbw = 0, raw_algbw = 0, raw_busbw = 0;  // GB/s, 1e9 bytes
  // Rank 0's sluice operations of the row (warm-ups included) that started
  // before their stream got there (back-to-back small collectives), and all.
  unsigned long long started_early = 0, operations = 0;
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

// Whether every rank says yes.
bool all_agree(bool yes) {
  int v = yes ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v != 0;
}

//! `count` floats of one kind of memory, allocated through sluice.
class buffer {
 public:
  buffer(memory kind, sluice::device d, std::size_t count) : kind_(kind) {
    if (kind == memory::device) {
      device_ = std::make_unique<sluice::device_buffer<float>>(d, count);
      data_ = device_->data();
    } else if (kind == memory::pinned) {
      pinned_ = std::make_unique<sluice::pinned_buffer<float>>(count);
      data_ = pinned_->data();
    } else {
      host_.assign(count, 0.0f);
      data_ = host_.data();
    }
  }
  float* data() const { return data_; }

  //! dst <- host[0, count), done when this returns (s synchronized).
  void upload(sluice::stream& s, const float* host, std::size_t count) {
    if (kind_ == memory::device)
      sluice::copy(s, data_, host, count * sizeof(float));
    else
      std::memcpy(data_, host, count * sizeof(float));
    s.synchronize();
  }
  //! host[0, count) <- this, after the work on s.
  void download(sluice::stream& s, float* host, std::size_t count) const {
    s.synchronize();
    if (kind_ == memory::device)
      sluice::copy(s, host, data_, count * sizeof(float));  // pageable destination: blocks
    else
      std::memcpy(host, data_, count * sizeof(float));
    s.synchronize();
  }
  //! Every byte 0xff (each float a NaN), then, if from is given, its first
  //! count floats copied in; done when this returns.
  void clear(sluice::stream& s, std::size_t count, const buffer* from, std::size_t from_count) {
    if (kind_ == memory::device) {
      sluice::fill(s, data_, 0xff, count * sizeof(float));
      if (from != nullptr) sluice::copy(s, data_, from->data_, from_count * sizeof(float));
    } else {
      std::memset(data_, 0xff, count * sizeof(float));
      if (from != nullptr) std::memcpy(data_, from->data_, from_count * sizeof(float));
    }
    s.synchronize();
  }

 private:
  memory kind_;
  float* data_ = nullptr;
  std::unique_ptr<sluice::device_buffer<float>> device_;
  std::unique_ptr<sluice::pinned_buffer<float>> pinned_;
  std::vector<float> host_;
};

float input_value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>((i % 97) + 1));
}

// What out must hold after one op (all_reduce of small integers in float: exact).
std::vector<float> expected_output(const std::string& op, int rank, int n, std::size_t count) {
  std::vector<float> e(op == "all_gather" ? count * static_cast<std::size_t>(n) : count);
  if (op == "all_gather") {
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < count; ++i)
        e[static_cast<std::size_t>(r) * count + i] = input_value(r, i);
    return e;
  }
  const int from = op == "sendrecv" ? (rank + n - 1) % n : 0;  // broadcast: rank 0's
  for (std::size_t i = 0; i < count; ++i)
    e[i] = op == "all_reduce" ? static_cast<float>(n * (n + 1) / 2) * input_value(0, i)
                              : input_value(from, i);
  return e;
}

// The raw side: what it calls, and what it owns.
struct raw_side {
  raw_kind kind = raw_kind::mpi;
  MPI_Comm world = MPI_COMM_NULL;  // a duplicate: raw messages never meet sluice's
  // staged_mpi: the hand-written loop's stream and pinned buffers.
  raw::stream_t stream{};
  void* pinned_in = nullptr;
  void* pinned_out = nullptr;
  raw::nccl nccl;
};

void raw_mpi(const std::string& op, const void* in, void* out, std::size_t count, MPI_Comm world) {
  int n = 1, rank = 0;
  MPI_Comm_size(world, &n);
  MPI_Comm_rank(world, &rank);
  const int k = static_cast<int>(count);
  if (op == "sendrecv") {
    MPI_Sendrecv(in, k, MPI_FLOAT, (rank + 1) % n, 0, out, k, MPI_FLOAT, (rank + n - 1) % n, 0,
                 world, MPI_STATUS_IGNORE);
  } else if (op == "all_reduce") {
    MPI_Allreduce(in, out, k, MPI_FLOAT, MPI_SUM, world);
  } else if (op == "broadcast") {
    MPI_Bcast(out, k, MPI_FLOAT, 0, world);
  } else {
    MPI_Allgather(in, k, MPI_FLOAT, out, k, MPI_FLOAT, world);
  }
}

// One raw operation. nccl: enqueued only (the caller synchronizes).
void raw_op(const std::string& op, raw_side& r, const float* in, float* out, std::size_t count,
            int rank, int n) {
  const std::size_t bytes = count * sizeof(float);
  switch (r.kind) {
    case raw_kind::mpi: raw_mpi(op, in, out, count, r.world); return;
    case raw_kind::staged_mpi: {
      // The straightforward user code: to pinned memory, wait, MPI, back, wait.
      const bool sends = op != "broadcast" || rank == 0;
      const bool receives = op != "broadcast" || rank != 0;
      const std::size_t out_bytes =
          op == "all_gather" ? bytes * static_cast<std::size_t>(n) : bytes;
      if (sends) {
        raw::memcpy_async(op == "broadcast" ? r.pinned_out : r.pinned_in,
                          op == "broadcast" ? out : in, bytes, r.stream);
        raw::stream_synchronize(r.stream);
      }
      raw_mpi(op, r.pinned_in, r.pinned_out, count, r.world);
      if (receives) {
        raw::memcpy_async(out, r.pinned_out, out_bytes, r.stream);
        raw::stream_synchronize(r.stream);
      }
      return;
    }
    case raw_kind::nccl:
      if (op == "sendrecv")
        r.nccl.sendrecv(in, out, bytes, (rank + 1) % n, (rank + n - 1) % n);
      else if (op == "all_reduce")
        r.nccl.all_reduce(in, out, count);
      else if (op == "broadcast")
        r.nccl.broadcast(out, count, 0);
      else
        r.nccl.all_gather(in, out, count);
      return;
  }
}

void sluice_op(const std::string& op, sluice::stream_ref s, const float* in, float* out,
               std::size_t count, const comm::communicator& c) {
  const int n = c.size();
  const int rank = c.rank();
  if (op == "sendrecv") {
    comm::group g(c);
    comm::send(s, in, count * sizeof(float), (rank + 1) % n, c);
    comm::recv(s, out, count * sizeof(float), (rank + n - 1) % n, c);
  } else if (op == "all_reduce") {
    comm::all_reduce(s, in, out, count, comm::reduce_op::sum, c);
  } else if (op == "broadcast") {
    comm::broadcast(s, out, count, 0, c);
  } else {
    comm::all_gather(s, in, out, count, c);
  }
}

bool parse(int argc, char** argv, options& o, std::string& why) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::size_t n = std::strlen(name);
      return a.compare(0, n, name) == 0 ? argv[i] + n : nullptr;
    };
    try {
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
      } else if (const char* v8 = value("--png=")) {
        o.png = v8;
      } else if (const char* v9 = value("--engine=")) {
        const std::string e = v9;
        if (e == "mpi")
          o.engine = comm::engine::mpi;
        else if (e == "nccl")
          o.engine = comm::engine::nccl;
        else if (e == "automatic")
          o.engine = comm::engine::automatic;
        else
          return why = "unknown engine '" + e + "' (mpi, nccl, automatic)", false;
      } else if (const char* v10 = value("--buffers=")) {
        const std::string b = v10;
        o.buffers_given = true;
        if (b == "device")
          o.buffers = memory::device;
        else if (b == "pinned")
          o.buffers = memory::pinned;
        else if (b == "host")
          o.buffers = memory::host;
        else
          return why = "unknown buffers '" + b + "' (device, pinned, host)", false;
      } else if (const char* v11 = value("--ops=")) {
        o.ops.clear();
        std::stringstream list(v11);
        std::string op;
        while (std::getline(list, op, ','))
          if (op == "sendrecv" || op == "all_reduce" || op == "broadcast" || op == "all_gather")
            o.ops.push_back(op);
          else
            return why = "unknown op '" + op + "'", false;
      } else {
        return why = "unknown argument '" + a + "'", false;
      }
    } catch (const std::exception&) {
      return why = "not a number in '" + a + "'", false;
    }
  }
  if (!o.buffers_given)
    o.buffers = gpu_backend() || o.engine == comm::engine::nccl ? memory::device : memory::host;
  if (o.min_bytes < 4 || o.max_bytes < o.min_bytes)
    return why = "need 4 <= --min-bytes <= --max-bytes", false;
  if (o.max_bytes / sizeof(float) > static_cast<std::size_t>(INT32_MAX))
    return why = "--max-bytes too large for an MPI count of floats", false;
  if (o.trials < 1 || o.iters < 0 || o.warmup < 0)
    return why = "need --trials >= 1, --iters >= 0, --warmup >= 0", false;
  if (o.ops.empty()) return why = "no ops", false;
  if (o.engine == comm::engine::nccl && o.buffers == memory::host)
    return why = "raw NCCL needs memory the device can address: device or pinned buffers", false;
  return true;
}

//! Inside a gnuplot single-quoted string.
std::string gnuplot_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\'')
      out += "''";
    else if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out;
}

//! <png>.dat and <png>.gnuplot, then gnuplot: per op, bus bandwidth and time
//! against size, sluice and raw. Empty: done; else why not.
std::string write_png(const std::string& png, const std::vector<row>& rows,
                      const std::vector<std::string>& ops, const std::string& title,
                      const std::string& raw_name) {
  const std::string data = png + ".dat";
  const std::string script = png + ".gnuplot";
  std::vector<std::string> drawn;
  {
    std::ofstream d(data);
    d << "# bytes sluice_us raw_us sluice_busbw raw_busbw (GB/s), one block per op\n";
    for (const std::string& op : ops) {
      bool any = false;
      for (const row& r : rows)
        if (r.op == op) {
          if (!any) d << "# " << op << '\n';
          any = true;
          d << r.bytes << ' ' << r.sluice_us << ' ' << r.raw_us << ' ' << r.busbw << ' '
            << r.raw_busbw << '\n';
        }
      if (any) {
        d << "\n\n";
        drawn.push_back(op);
      }
    }
    if (!d) return "cannot write " + data;
  }
  if (drawn.empty()) return "no rows to draw";
  {
    std::ofstream g(script);
    g << "set terminal pngcairo noenhanced size 1400," << 60 + 330 * drawn.size() << "\n"
      << "set output '" << gnuplot_text(png) << "'\n"
      << "set multiplot layout " << drawn.size() << ",2 title '" << gnuplot_text(title) << "'\n"
      << "set logscale x 2\nset format x '%.0b %BB'\nset xlabel 'bytes per rank'\n"
      << "set grid\nset key left top\n";
    for (std::size_t i = 0; i < drawn.size(); ++i) {
      const std::string& op = drawn[i];
      g << "set title '" << op << ": bus bandwidth'\nunset logscale y\nset ylabel 'busbw, GB/s'\n"
        << "plot '" << gnuplot_text(data) << "' index " << i
        << " using 1:4 with linespoints lw 2 title 'sluice', '' index " << i
        << " using 1:5 with linespoints dashtype 2 title 'raw " << gnuplot_text(raw_name) << "'\n"
        << "set title '" << op << ": time per operation'\nset logscale y 10\n"
        << "set ylabel 'us'\n"
        << "plot '" << gnuplot_text(data) << "' index " << i
        << " using 1:2 with linespoints lw 2 title 'sluice', '' index " << i
        << " using 1:3 with linespoints dashtype 2 title 'raw " << gnuplot_text(raw_name) << "'\n";
    }
    g << "unset multiplot\n";
    if (!g) return "cannot write " + script;
  }
  std::string gnuplot = "gnuplot";
  char* args[] = {gnuplot.data(), const_cast<char*>(script.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "gnuplot", nullptr, nullptr, args, environ) != 0)
    return "gnuplot not found (Debian: gnuplot-nox, which scripts/setup installs)";
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "gnuplot failed on " + script;
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const std::string program = std::string("sluice-bench-comm-") + sluice::backend_name();
  raw::set_program("sluice-bench-comm");
  options o;
  std::string why;
  if (!parse(argc, argv, o, why)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "%s: %s\n"
                   "usage: mpirun -np N %s [--min-bytes=8] [--max-bytes=1073741824]\n"
                   "       [--iters=N] [--warmup=N] [--trials=3] "
                   "[--ops=sendrecv,all_reduce,broadcast,all_gather]\n"
                   "       [--engine=mpi|nccl|automatic] [--buffers=device|pinned|host]\n"
                   "       [--json=F] [--csv=F] [--png=F]\n",
                   program.c_str(), why.c_str(), program.c_str());
    MPI_Finalize();
    return 2;
  }

  // The rank's device: node-local rank % device count.
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  const int device_id = local_rank % sluice::device_count();
  const sluice::device dev(device_id);
  raw::set_device(device_id);  // the raw calls' device (sluice never changes it: XDEV-2)
  std::vector<int> devices(static_cast<std::size_t>(n));
  std::vector<std::array<char, 96>> names(static_cast<std::size_t>(n));
  {
    std::array<char, 96> name{};
    std::snprintf(name.data(), name.size(), "%s", dev.name().c_str());
    MPI_Gather(&device_id, 1, MPI_INT, devices.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(name.data(), static_cast<int>(name.size()), MPI_CHAR, names.data(),
               static_cast<int>(name.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  }
  if (rank == 0) {
    std::printf("%s: %d ranks, MPI thread level %d\n", program.c_str(), n, provided);
    if (n == 1)
      std::printf(
          "  1 rank: nothing crosses processes (sendrecv is to itself); the rows measure what "
          "each side costs per operation in one process, not a link\n");
    for (int r = 0; r < n; ++r)
      std::printf("  rank %d: device %d (%s)\n", r, devices[static_cast<std::size_t>(r)],
                  names[static_cast<std::size_t>(r)].data());
  }

  int failures = 0;
  std::vector<row> rows;
  std::string skipped;  // why there are no rows
  comm::engine chosen = o.engine;
  bool staged = false;
  raw_kind raw_used = raw_kind::mpi;
  std::string raw_method;
  {
    // sluice's side: the communicator on the engine asked for.
    std::unique_ptr<comm::communicator> c;
    std::string failure;
    try {
      c = std::make_unique<comm::communicator>(MPI_COMM_WORLD, dev, o.engine);
    } catch (const sluice::error& e) {
      failure = std::string("sluice::comm::communicator(engine ") + comm::to_string(o.engine) +
                ") failed: " + e.what() +
                (e.code() == sluice::errc::not_supported ? " [errc::not_supported]" : "");
    }
    if (!all_agree(failure.empty())) {
      skipped = failure.empty() ? "another rank could not build the communicator" : failure;
    } else {
      chosen = c->kind();
      if (chosen == comm::engine::nccl && o.buffers == memory::host)
        skipped = "the engine chosen is nccl: raw NCCL needs device or pinned buffers";
    }

    // The raw side, the same on every rank.
    raw_side r;
    MPI_Comm_dup(MPI_COMM_WORLD, &r.world);
    std::size_t max_count = o.max_bytes / sizeof(float);
    const std::size_t out_max = max_count * static_cast<std::size_t>(n);
    if (skipped.empty()) {
      if (chosen == comm::engine::nccl) {
        r.kind = raw_kind::nccl;
        staged = o.buffers != memory::device;
        const std::string e = r.nccl.init(r.world);
        if (!all_agree(e.empty()))
          skipped = "raw NCCL: " + (e.empty() ? std::string("failed on another rank") : e);
        raw_method = raw::nccl::version() +
                     " on its own stream and communicator (ncclSend/ncclRecv in a group, "
                     "ncclAllReduce, ncclBroadcast, ncclAllGather), iters back to back, then "
                     "the stream synchronized";
      } else if (o.buffers == memory::device && gpu_backend()) {
        staged = true;
        r.kind = raw_kind::staged_mpi;
        r.stream = raw::stream_create();
        r.pinned_in = raw::pinned_alloc(max_count * sizeof(float));
        r.pinned_out = raw::pinned_alloc(out_max * sizeof(float));
        raw_method = std::string("blocking MPI through pinned staging, per operation: ") +
                     raw::staging_calls;
      } else {
        r.kind = raw_kind::mpi;
        raw_method =
            "blocking MPI calls on the buffers (MPI_Sendrecv, MPI_Allreduce, MPI_Bcast, "
            "MPI_Allgather)";
      }
      raw_used = r.kind;
    }
    // How sluice::comm moves these buffers: the mpi engine stages device
    // memory through pinned memory (the MPI is not GPU-aware); the nccl engine
    // stages what is not device memory (NCCL's kernels need device-addressable
    // buffers; sluice treats pinned memory as host memory there).
    const char* path = staged ? "staged" : "direct";
    const char* why_staged = chosen == comm::engine::nccl
                                 ? " (sluice::comm's nccl engine copies host buffers through its "
                                   "pinned staging)"
                                 : " (sluice::comm copies device buffers through pinned memory: "
                                   "the MPI is not GPU-aware)";
    if (rank == 0) {
      std::printf("engine %s (asked: %s), buffers %s", comm::to_string(chosen),
                  comm::to_string(o.engine), to_string(o.buffers));
      if (skipped.empty())
        std::printf(", path %s%s\nraw: %s\n", path, staged ? why_staged : "", raw_method.c_str());
      else
        std::printf("\n%s: SKIPPED, no rows: %s\n", program.c_str(), skipped.c_str());
      if (o.engine != comm::engine::mpi)
        std::printf("raw NCCL side of this bench: %s\n",
                    raw::nccl::built ? raw::nccl::version().c_str() : "not built");
    }

    if (skipped.empty()) {
      sluice::stream s(dev);
      // SLUICE_COMMBENCH_RAW_HELD (above): the held stream and its flag, made
      // only when asked for.
      const bool raw_held = std::getenv("SLUICE_COMMBENCH_RAW_HELD") != nullptr;
      std::optional<sluice::stream> held;
      std::optional<sluice::flag> held_flag;
      if (raw_held) {
        held.emplace(dev);
        held_flag.emplace(0);
      }
      std::uint32_t held_round = 0;
      buffer in(o.buffers, dev, max_count);
      buffer out(o.buffers, dev, out_max);
      {
        std::vector<float> host(max_count);
        for (std::size_t i = 0; i < max_count; ++i) host[i] = input_value(rank, i);
        in.upload(s, host.data(), max_count);
      }
      std::vector<float> got;
      if (rank == 0)
        std::printf("%-11s %12s %6s %11s %9s %9s %11s %9s %9s %7s %9s %5s\n", "op", "bytes",
                    "iters", "sluice_us", "algbw", "busbw", "raw_us", "algbw", "busbw", "ratio",
                    "delta_us", "data");
      for (const std::string& op : o.ops) {
        for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
          const std::size_t count = bytes / sizeof(float);
          const std::size_t out_count =
              op == "all_gather" ? count * static_cast<std::size_t>(n) : count;
          const std::vector<float> expected = expected_output(op, rank, n, count);
          got.resize(out_count);
          const bool root_holds = op == "broadcast" && rank == 0;
          auto reset = [&] { out.clear(s, out_count, root_holds ? &in : nullptr, count); };
          auto correct = [&] {
            out.download(s, got.data(), out_count);
            return std::memcmp(got.data(), expected.data(), out_count * sizeof(float)) == 0;
          };
          reset();
          const int iters = iterations_for(bytes, o);
          const int warmup = o.warmup > 0 ? o.warmup : std::max(2, iters / 10);
          std::vector<double> sluice_t, raw_t, sluice_enq, raw_enq;
          const unsigned long long early_before = comm::detail::operations_started_early();
          bool ok = true;
          for (int trial = 0; trial < o.trials; ++trial) {
            // sluice: enqueue them all, then wait.
            for (int i = 0; i < warmup; ++i) sluice_op(op, s, in.data(), out.data(), count, *c);
            s.synchronize();
            MPI_Barrier(MPI_COMM_WORLD);
            auto t0 = clock_type::now();
            for (int i = 0; i < iters; ++i) sluice_op(op, s, in.data(), out.data(), count, *c);
            sluice_enq.push_back(std::chrono::duration<double>(clock_type::now() - t0).count() /
                                 iters);
            s.synchronize();
            sluice_t.push_back(
                slowest(std::chrono::duration<double>(clock_type::now() - t0).count()) / iters);
            ok = correct() && ok;
            reset();
            // raw: back to back (NCCL: enqueued, then the stream synchronized).
            for (int i = 0; i < warmup; ++i) raw_op(op, r, in.data(), out.data(), count, rank, n);
            if (r.kind == raw_kind::nccl) r.nccl.synchronize();
            if (raw_held) held->wait_value(*held_flag, ++held_round);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = clock_type::now();
            for (int i = 0; i < iters; ++i) raw_op(op, r, in.data(), out.data(), count, rank, n);
            raw_enq.push_back(std::chrono::duration<double>(clock_type::now() - t0).count() /
                              iters);
            if (r.kind == raw_kind::nccl) r.nccl.synchronize();
            raw_t.push_back(slowest(std::chrono::duration<double>(clock_type::now() - t0).count()) /
                            iters);
            if (raw_held) {
              held_flag->store(held_round);
              held->synchronize();
            }
            ok = correct() && ok;
            reset();
          }
          // SLUICE_COMMBENCH_SPLIT: the sluice side in two parts, per trial: the
          // enqueue of `iters` operations while a flag holds the stream (the
          // calling thread alone: nothing runs meanwhile), then, from the
          // flag's store, the drain (the engine and the messages alone, no
          // enqueuing thread beside them; slowest rank). Where there are cores
          // enough for both, the whole loop above can be as short as the larger
          // of the two; on 2 cores with 2 ranks it took about their sum
          // (docs/comm.md).
          std::vector<double> held_enq, drain;
          if (std::getenv("SLUICE_COMMBENCH_SPLIT") != nullptr) {
            for (int trial = 0; trial < o.trials; ++trial) {
              for (int i = 0; i < warmup; ++i) sluice_op(op, s, in.data(), out.data(), count, *c);
              s.synchronize();
              sluice::flag hold(0);
              s.wait_value(hold, 1);
              MPI_Barrier(MPI_COMM_WORLD);
              auto t0 = clock_type::now();
              for (int i = 0; i < iters; ++i) sluice_op(op, s, in.data(), out.data(), count, *c);
              held_enq.push_back(std::chrono::duration<double>(clock_type::now() - t0).count() /
                                 iters);
              MPI_Barrier(MPI_COMM_WORLD);
              t0 = clock_type::now();
              hold.store(1);
              s.synchronize();
              drain.push_back(
                  slowest(std::chrono::duration<double>(clock_type::now() - t0).count()) / iters);
              ok = correct() && ok;
              reset();
            }
          }
          row w;
          w.started_early = comm::detail::operations_started_early() - early_before;
          w.operations = static_cast<unsigned long long>(o.trials) *
                         static_cast<unsigned long long>(iters + warmup) *
                         (drain.empty() ? 1ULL : 2ULL);
          w.op = op;
          w.bytes = bytes;
          w.iters = iters;
          w.sluice_us = median(sluice_t) * 1e6;
          w.raw_us = median(raw_t) * 1e6;
          w.sluice_enqueue_us = median(sluice_enq) * 1e6;
          w.raw_enqueue_us = median(raw_enq) * 1e6;
          w.algbw = static_cast<double>(bytes) / (w.sluice_us * 1e3);
          w.raw_algbw = static_cast<double>(bytes) / (w.raw_us * 1e3);
          w.busbw = w.algbw * bus_factor(op, n);
          w.raw_busbw = w.raw_algbw * bus_factor(op, n);
          w.checked = all_agree(ok);
          if (!w.checked) ++failures;
          rows.push_back(w);
          if (rank == 0) {
            std::printf("%-11s %12zu %6d %11.2f %9.3f %9.3f %11.2f %9.3f %9.3f %7.3f %9.2f %5s\n",
                        op.c_str(), bytes, iters, w.sluice_us, w.algbw, w.busbw, w.raw_us,
                        w.raw_algbw, w.raw_busbw, w.raw_us / w.sluice_us, w.sluice_us - w.raw_us,
                        w.checked ? "ok" : "BAD");
            if (!drain.empty())
              std::printf(
                  "# %s %zu split (median of %d): enqueue while held %.3f us per "
                  "operation (rank 0), drain %.3f us per operation (slowest rank)\n",
                  op.c_str(), bytes, o.trials, median(held_enq) * 1e6, median(drain) * 1e6);
            if (w.started_early != 0)
              std::printf("# %s %zu started early: %llu of %llu operations (rank 0)\n", op.c_str(),
                          bytes, w.started_early, w.operations);
            if (std::getenv("SLUICE_COMMBENCH_ENQUEUE") != nullptr)
              std::printf("# %s %zu enqueue per operation (rank 0): sluice %.2f us, raw %.2f us\n",
                          op.c_str(), bytes, w.sluice_enqueue_us, w.raw_enqueue_us);
            std::fflush(stdout);
          }
          if (bytes > o.max_bytes / 2) break;
        }
      }
      s.synchronize();
    }
    if (r.kind == raw_kind::staged_mpi) {
      raw::pinned_free(r.pinned_in);
      raw::pinned_free(r.pinned_out);
      raw::stream_destroy(r.stream);
    }
    MPI_Comm_free(&r.world);
  }
  const char* path = staged ? "staged" : "direct";
  const std::string engine_name = comm::to_string(chosen);
  if (rank == 0) {
    if (!o.csv.empty()) {
      std::ofstream csv(o.csv);
      csv << "op,bytes,ranks,iters,sluice_us,sluice_algbw,sluice_busbw,raw_us,raw_algbw,"
             "raw_busbw,ratio,delta_us,data,engine,buffers,path,raw\n";
      for (const row& w : rows)
        csv << w.op << ',' << w.bytes << ',' << n << ',' << w.iters << ',' << w.sluice_us << ','
            << w.algbw << ',' << w.busbw << ',' << w.raw_us << ',' << w.raw_algbw << ','
            << w.raw_busbw << ',' << w.raw_us / w.sluice_us << ',' << w.sluice_us - w.raw_us << ','
            << (w.checked ? "ok" : "bad") << ',' << engine_name << ',' << to_string(o.buffers)
            << ',' << path << ',' << to_string(raw_used) << '\n';
      csv.close();
      if (csv) {
        std::printf("csv:  %s\n", o.csv.c_str());
      } else {
        std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), o.csv.c_str());
        ++failures;
      }
    }
    if (!o.json.empty()) {
      using json = nlohmann::ordered_json;
      json ranks = json::array();
      for (int k = 0; k < n; ++k)
        ranks.push_back({{"rank", k},
                         {"device", devices[static_cast<std::size_t>(k)]},
                         {"name", names[static_cast<std::size_t>(k)].data()}});
      json doc = {{"bench", "sluice-bench-comm"},
                  {"backend", sluice::backend_name()},
                  {"ranks", n},
                  {"mpi_thread_level", provided},
                  {"engine", engine_name},
                  {"engine_asked", comm::to_string(o.engine)},
                  {"buffers", to_string(o.buffers)},
                  {"path", path},
                  {"raw", skipped.empty() ? to_string(raw_used) : "none"},
                  {"raw_method", raw_method},
                  {"devices", ranks},
                  {"method",
                   "iters back to back, slowest rank, median of trials; ratio = "
                   "raw_us / sluice_us; delta_us = sluice_us - raw_us; every trial's "
                   "data checked on the host"},
                  {"skipped", skipped.empty() ? json(nullptr) : json(skipped)},
                  {"rows", json::array()}};
      for (const row& w : rows)
        doc["rows"].push_back({{"op", w.op},
                               {"bytes", w.bytes},
                               {"iters", w.iters},
                               {"sluice_us", w.sluice_us},
                               {"sluice_algbw_GBps", w.algbw},
                               {"sluice_busbw_GBps", w.busbw},
                               {"raw_us", w.raw_us},
                               {"raw_algbw_GBps", w.raw_algbw},
                               {"raw_busbw_GBps", w.raw_busbw},
                               {"ratio", w.raw_us / w.sluice_us},
                               {"delta_us", w.sluice_us - w.raw_us},
                               {"data", w.checked ? "ok" : "bad"},
                               {"sluice_enqueue_us", w.sluice_enqueue_us},
                               {"raw_enqueue_us", w.raw_enqueue_us},
                               {"started_early", w.started_early},
                               {"operations", w.operations}});
      std::ofstream js(o.json);
      js << doc.dump(2) << '\n';
      js.close();
      if (js) {
        std::printf("json: %s\n", o.json.c_str());
      } else {
        std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), o.json.c_str());
        ++failures;
      }
    }
    const auto bad =
        std::count_if(rows.begin(), rows.end(), [](const row& w) { return !w.checked; });
    if (bad > 0) std::printf("%d rows with wrong data\n", static_cast<int>(bad));
  }
  MPI_Finalize();
  // The plot after MPI is done (no child process while MPI runs).
  if (rank == 0 && !o.png.empty() && skipped.empty()) {
    const std::string title = program + ": engine " + engine_name + ", " + to_string(o.buffers) +
                              " buffers (" + path + "), " + std::to_string(n) + " ranks";
    const std::string e = write_png(o.png, rows, o.ops, title, to_string(raw_used));
    if (e.empty()) {
      std::printf("png:  %s\n", o.png.c_str());
    } else {
      std::fprintf(stderr, "%s: --png: %s\n", program.c_str(), e.c_str());
      return 1;
    }
  }
  if (!skipped.empty()) return 77;
  return failures > 0 ? 1 : 0;
}
