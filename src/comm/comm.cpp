// sluice::comm's API: checks every argument before anything is enqueued
// (COMM-6), gives sends and receives their match numbers in enqueue order
// (COMM-4), and puts each operation on its stream(s) as two steps: a host
// function that tells the engine the stream reached it, then a wait on a
// flag that the engine stores when the operation is done (COMM-1..3).
#include "engine.hpp"
#include "environment.hpp"
#include "mutation.hpp"
#include "trace.hpp"

#include <sluice/backend.hpp>
#include <sluice/comm.hpp>
#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>
#include <sluice/memory.hpp>
#include <sluice/trace.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

namespace sluice::comm {

const char* to_string(engine e) noexcept {
  switch (e) {
    case engine::automatic: return "automatic";
    case engine::mpi: return "mpi";
    case engine::nccl: return "nccl";
  }
  return "unknown";
}

const char* to_string(reduce_op op) noexcept {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::prod: return "prod";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
  }
  return "unknown";
}

namespace detail {

namespace {

[[noreturn]] void reject(errc code, const char* api, const std::string& why) {
  throw error(code, std::string(api) + ": " + why, 0, api);
}

bool known(reduce_op op) {
  return op == reduce_op::sum || op == reduce_op::prod || op == reduce_op::min ||
         op == reduce_op::max;
}

communicator_state& checked(const std::shared_ptr<communicator_state>& state, const char* api) {
  if (!state) reject(errc::invalid_handle, api, "the communicator is empty (moved from)");
  return *state;
}

void check_stream(stream_ref s, const communicator_state& c, const char* api) {
  const sluice::device d = s.device();  // errc::invalid_handle for a destroyed stream
  if (d != c.device)
    reject(errc::invalid_argument, api,
           "the stream is on device " + std::to_string(d.id()) +
               " but the communicator's device is " + std::to_string(c.device.id()));
}

void check_rank(int r, const communicator_state& c, const char* what, const char* api) {
  if (mutation::is(mutation::kind::skip_rank_checks)) return;
  if (r < 0 || r >= c.size)
    reject(errc::invalid_argument, api,
           std::string(what) + " rank " + std::to_string(r) + " is out of range [0, " +
               std::to_string(c.size) + ")");
}

// count elements of `bytes_each` bytes: the byte count, checked for what MPI
// takes in one call (an int count).
std::size_t checked_count(std::size_t count, std::size_t bytes_each, const char* api) {
  if (count > static_cast<std::size_t>(INT_MAX))
    reject(errc::not_supported, api,
           "count " + std::to_string(count) + " is larger than one message can carry (" +
               std::to_string(INT_MAX) + " elements)");
  if (bytes_each != 0 && count > SIZE_MAX / bytes_each)
    reject(errc::invalid_argument, api, "count * element size overflows");
  return count * bytes_each;
}

void check_buffer(const void* p, std::size_t bytes, const char* which, const char* api) {
  if (p == nullptr && bytes != 0)
    reject(
        errc::invalid_argument, api,
        std::string("the ") + which + " buffer is null with " + std::to_string(bytes) + " bytes");
}

// Device memory must be the communicator's device's. True when p is device
// memory (what stage() copies through pinned memory): one vendor query per
// buffer and operation, here.
bool check_memory(const void* p, const communicator_state& c, const char* which, const char* api) {
  if (p == nullptr) return false;
  const int device = sluice::detail::device_memory_of(p);
  if (device >= 0 && device != c.device.id())
    reject(errc::invalid_argument, api,
           std::string("the ") + which + " buffer is memory of device " + std::to_string(device) +
               ", the communicator's device is " + std::to_string(c.device.id()));
  return device >= 0;
}

// The group that lives on this thread, if any (one per communicator: they do
// not nest, and a thread has few).
thread_local std::vector<group_state*> live_groups;

}  // namespace

struct group_state {
  std::shared_ptr<communicator_state> comm;
  batch_ptr b;  // its sends and receives; streams in first-use order
};

namespace {

group_state* live_group(const communicator_state& c) {
  for (group_state* g : live_groups)
    if (g->comm.get() == &c) return g;
  return nullptr;
}

// A setting that every rank must agree on, as rank 0 reads it:
// integer_from_environment's value, or -1 when it is not a valid one (rank 0
// broadcasts it, and every rank rejects it then: none throws alone).
long long rank0_setting(const char* name, int fallback, int low, int high) {
  try {
    return sluice::detail::integer_from_environment(name, fallback, low, high);
  } catch (const sluice::error&) {
    return -1;
  }
}

// SLUICE_COMM_PIECE_BYTES: the bytes of a piece (docs/comm.md "Pieces"), 0 or
// 4096..1 GiB. Default: 4 MiB on the GPU backends (whose device buffers go
// through staging), 0 (none) on the host backend, where nothing is staged.
long long piece_bytes_asked() {
  const long long n = rank0_setting(
      "SLUICE_COMM_PIECE_BYTES", sluice::backend() == backend_kind::host ? 0 : 4 << 20, 0, 1 << 30);
  return n > 0 && n < 4096 ? -1 : n;
}

// Which messages of b go in pieces (mpi engine; every rank decides by the
// count alone, so that a send and its receive, or every rank's collective,
// agree): sends, receives, all_reduce and broadcast of at least two pieces.
void plan_pieces(batch& b) {
  const auto& c = *b.comm;
  b.pieces = 1;
  if (c.kind != engine::mpi || c.piece_bytes == 0) return;
  for (message& m : b.messages) {
    if (m.kind == op_kind::all_gather) continue;
    const std::size_t each =
        m.kind == op_kind::send || m.kind == op_kind::recv ? 1 : element_size(m.type);
    const std::size_t piece = c.piece_bytes / each * each;
    const std::size_t bytes = bytes_of(m);
    if (piece == 0 || bytes / 2 < piece) continue;
    m.piece = piece;
    b.pieces = std::max(b.pieces, pieces_of(m, bytes));
  }
}

// Device buffers go through pinned staging (the mpi engine: an MPI that cannot
// read device memory). Leases the slots and points the message at them.
//
// The nccl engine the other way round: NCCL's kernels read and write memory
// the device can address, which pageable host memory is not: host buffers go
// through pinned staging too, copied by host tasks on the stream (a vendor
// copy from pageable memory would wait for the stream on the calling thread).
// "far" below: the memory the engine cannot use as it is; message::stage's
// "device" is then the user's host buffer.
void stage(batch& b) {
  const int size = b.comm->size;
  const int rank = b.comm->rank;
  const bool nccl = b.comm->kind == engine::nccl;
  auto far = [nccl](bool device_memory, const void* p, std::size_t bytes) {
    return p != nullptr && bytes != 0 && (nccl ? !device_memory : device_memory);
  };
  for (message& m : b.messages) {
    auto lease = [&b, &m](message::stage& st, void* device, std::size_t bytes) {
      const staging_lease l = lease_staging(bytes, b.streams[m.stream]);
      st = message::stage{device, l.data, bytes, l.slot};
      return l.data;
    };
    const std::size_t bytes = bytes_of(m);
    switch (m.kind) {
      case op_kind::send:
        if (far(m.in_device, m.in, bytes)) m.in = lease(m.stage_in, const_cast<void*>(m.in), bytes);
        break;
      case op_kind::recv:
        if (far(m.out_device, m.out, bytes)) m.out = lease(m.stage_out, m.out, bytes);
        break;
      case op_kind::broadcast:  // one buffer: in to the root, out on the others
        if (far(m.out_device, m.out, bytes)) {
          void* device = m.out;
          message::stage& st = m.peer == rank ? m.stage_in : m.stage_out;
          m.out = lease(st, device, bytes);
          m.in = m.out;
        }
        break;
      case op_kind::all_reduce:
        if (m.in == m.out && far(m.out_device, m.out, bytes)) {  // in place: one slot, in and out
          void* device = m.out;
          m.out = lease(m.stage_out, device, bytes);
          m.stage_in = message::stage{device, m.out, bytes, -1};
          m.in = m.out;
        } else {
          if (far(m.in_device, m.in, bytes))
            m.in = lease(m.stage_in, const_cast<void*>(m.in), bytes);
          if (far(m.out_device, m.out, bytes)) m.out = lease(m.stage_out, m.out, bytes);
        }
        break;
      case op_kind::all_gather: {
        const std::size_t total = bytes * static_cast<std::size_t>(size);
        const std::size_t own = static_cast<std::size_t>(rank) * bytes;
        const bool in_place = m.in == static_cast<const char*>(m.out) + own;
        if (far(m.out_device, m.out, total)) {
          void* device = m.out;
          m.out = lease(m.stage_out, device, total);
          if (in_place)  // this rank's slot copied into the staged output
            m.stage_in = message::stage{static_cast<char*>(device) + own,
                                        static_cast<char*>(m.out) + own, bytes, -1};
        }
        if (in_place)
          m.in = static_cast<const char*>(m.out) + own;
        else if (far(m.in_device, m.in, bytes))
          m.in = lease(m.stage_in, const_cast<void*>(m.in), bytes);
        break;
      }
    }
  }
}

void release_unused_staging(batch& b) noexcept {
  for (message& m : b.messages) {
    release_staging_unused(m.stage_in.slot);
    release_staging_unused(m.stage_out.slot);
  }
}

// While a trace is collected, each stream's part of a batch is one span on
// its track (docs/comm.md "Tracing"): from its arrival to its done flag,
// named after the operation ("group" for a group), with the engine, the
// peer(s), the bytes, the communicator's rank and size and the match number.
struct span {
  std::uint64_t id = 0;  // 0: no trace
  std::string name;
};

void append_message(std::string& a, const message& m) {
  switch (m.kind) {
    case op_kind::send:
    case op_kind::recv: a += "\"peer\": " + std::to_string(m.peer); break;
    case op_kind::broadcast: a += "\"root\": " + std::to_string(m.peer); break;
    default: a += "\"peer\": \"all\""; break;
  }
  a += ", \"bytes\": " + std::to_string(bytes_of(m));
  if (m.kind == op_kind::send || m.kind == op_kind::recv)
    a += ", \"match\": " + std::to_string(m.tag);
  if (m.kind == op_kind::all_reduce) a += std::string(", \"reduce\": \"") + to_string(m.op) + '"';
  if (m.stage_in.device != nullptr || m.stage_out.device != nullptr) a += ", \"staged\": true";
  if (m.piece != 0) a += ", \"pieces\": " + std::to_string(pieces_of(m, bytes_of(m)));
}

span open_span(const batch& b, std::size_t index) {
  span sp;
  std::vector<const message*> mine;
  std::size_t bytes = 0;
  for (const message& m : b.messages)
    if (m.stream == index) {
      mine.push_back(&m);
      bytes += bytes_of(m);
    }
  const bool grouped = b.grouped || mine.size() != 1;
  sp.name = grouped ? "group" : to_string(mine.front()->kind);
  std::string a = std::string("\"engine\": \"") + to_string(b.comm->kind) +
                  "\", \"rank\": " + std::to_string(b.comm->rank) +
                  ", \"ranks\": " + std::to_string(b.comm->size) + ", ";
  if (grouped) {
    // The group's messages on this stream, each with its peer and match number.
    a += "\"peers\": [";
    for (std::size_t i = 0; i < mine.size(); ++i)
      a += (i ? ", " : "") + std::to_string(mine[i]->peer);
    a += "], \"bytes\": " + std::to_string(bytes) + ", \"messages\": [";
    for (std::size_t i = 0; i < mine.size(); ++i) {
      a += i ? ", {\"op\": \"" : "{\"op\": \"";
      a += to_string(mine[i]->kind);
      a += "\", ";
      append_message(a, *mine[i]);
      a += '}';
    }
    a += "], \"group_streams\": " + std::to_string(b.streams.size());
  } else {
    append_message(a, *mine.front());
    if (b.collective != 0) a += ", \"collective\": " + std::to_string(b.collective);
  }
  sp.id = sluice::detail::trace::new_range_id();
  sluice::detail::trace::note_span(sp.id, "comm", std::move(a));
  return sp;
}

// What one stream does for a batch: copies in, tells the engine it got there
// (its arrival flag: no host function, no thread on the way), waits for the
// batch, copies out, and hands the staging slots back behind that. A span's
// begin marker goes just before the arrival, its end marker just after the
// wait (both timed like any operation of the stream).
// (nccl: host buffers, copied by a host task on the stream; a result only
// when the batch did not fail: a failed receive leaves its buffer alone.)
void stage_copy(stream_ref s, void* dst, const void* src, std::size_t bytes,
                const std::shared_ptr<std::atomic<bool>>& failed) {
  if (failed)
    s.host_func([dst, src, bytes, failed] {
      if (!failed->load()) std::memcpy(dst, src, bytes);
    });
  else
    sluice::copy(s, dst, src, bytes);
}

// (In pieces, mpi engine: the copy of piece j in, then its arrival, for
// each piece; then per piece the wait for its done flag and its copy out.
// The span begins at the first arrival and ends after the last wait.)
void enqueue_on(stream_ref s, std::size_t index, const std::vector<message>& messages,
                const flag_lease* arrival, sluice::event* arrival_event,
                const std::shared_ptr<std::atomic<bool>>& host, const span& sp,
                std::size_t piece = 0) {
  for (const message& m : messages)
    if (m.stream == index && m.stage_in.device != nullptr) {
      const byte_range r = piece_range(m, m.stage_in.bytes, piece);
      if (r.length != 0)
        stage_copy(s, static_cast<char*>(m.stage_in.pinned) + r.offset,
                   static_cast<const char*>(m.stage_in.device) + r.offset, r.length, host);
    }
  if (sp.id != 0) sluice::detail::enqueue_trace_marker(s, sp.name, true, sp.id);
  if (arrival_event != nullptr)
    arrival_event->record(s);
  else
    s.write_value(*arrival->flag, arrival->value);
}

void finish_on(stream_ref s, std::size_t index, const std::vector<message>& messages,
               const std::shared_ptr<std::atomic<bool>>& host, const span& sp,
               std::size_t piece = 0, bool last = true) {
  if (sp.id != 0) sluice::detail::enqueue_trace_marker(s, sp.name, false, sp.id);
  for (const message& m : messages)
    if (m.stream == index && m.stage_out.device != nullptr) {
      const byte_range r = piece_range(m, m.stage_out.bytes, piece);
      if (r.length != 0)
        stage_copy(s, static_cast<char*>(m.stage_out.device) + r.offset,
                   static_cast<const char*>(m.stage_out.pinned) + r.offset, r.length, host);
    }
  if (!last) return;
  for (const message& m : messages)
    if (m.stream == index) {
      release_staging_after(m.stage_in.slot, s);
      release_staging_after(m.stage_out.slot, s);
    }
}

// Puts b on its streams, then hands it to the engine, which frees it when
// done. Nothing was enqueued when this throws before any stream has it.
void enqueue(batch_ptr b) {
  progress::get();  // the engine runs before anything is enqueued
  plan_pieces(*b);
  stage(*b);
  b->lease = b->next_flag(0);
  // nccl: the NCCL calls go on the streams between two events, their arrival
  // and done, which the engine watches (docs/comm.md "The nccl engine"); the
  // mpi engine: an arrival flag per stream (the batch's own).
  const bool nccl = b->comm->kind == engine::nccl;
  for (std::size_t k = 0; k < b->streams.size(); ++k)
    if (nccl)
      b->arrival_events.push_back(lease_event(b->comm->device));
    else
      b->arrivals.push_back(b->next_flag(1 + k));
  const std::size_t streams = b->streams.size();
  const std::size_t pieces = b->pieces;
  for (std::size_t i = 0; i < (pieces - 1) * streams; ++i)
    b->piece_arrivals.push_back(b->next_flag(1 + streams + i));
  for (std::size_t j = 0; j + 1 < pieces; ++j)
    b->piece_done.push_back(b->next_flag(1 + pieces * streams + j));
  if (nccl) {
    for (std::size_t j = 0; j < b->streams.size(); ++j)
      b->done_events.push_back(lease_event(b->comm->device));
    if (b->failed_spare) {  // the batch's last one, no longer shared
      b->failed = std::move(b->failed_spare);
      b->failed->store(false);
    } else {
      b->failed = std::make_shared<std::atomic<bool>>(false);
    }
    // Only a receive waits for the engine's verdict (its size against the
    // send's): the rest goes on as soon as NCCL is done, without a round trip
    // through the engine thread (about 10 us per operation on 2x H100).
    b->gated = std::any_of(b->messages.begin(), b->messages.end(),
                           [](const message& m) { return m.kind == op_kind::recv; });
  }
  std::size_t k = 0;
  std::size_t done_on = 0;  // nccl: streams that have their done flag's store
  bool waits = false;       // a stream may wait for this batch's flags: the engine must answer
  // One span per stream while a trace is collected (tracing costs one relaxed
  // load, and no allocation, while none is).
  std::vector<span> spans;
  if (sluice::tracing() && !mutation::is(mutation::kind::untraced)) spans.resize(b->streams.size());
  static const span untraced{};
  auto span_of = [&](std::size_t j) -> const span& { return spans.empty() ? untraced : spans[j]; };
  // Enqueued on the streams and submitted in one piece: the engine sees the
  // batches of each stream in that stream's order.
  std::lock_guard<std::mutex> in_order(progress::enqueue_order());
  // Back-to-back collectives (mpi, one stream, nothing staged): the stream's
  // operations before and after this batch's, kept when they are exactly
  // this batch's (nobody else enqueued on the stream meanwhile).
  const bool counted = !nccl && streams == 1 && pieces == 1 &&
                       std::all_of(b->messages.begin(), b->messages.end(), [](const message& m) {
                         return m.stage_in.device == nullptr && m.stage_out.device == nullptr;
                       });
  const std::uint64_t from =
      counted ? sluice::detail::enqueued_count(b->streams[0]) : sluice::detail::unknown_count;
  try {
    for (; k < b->streams.size(); ++k) {
      if (!spans.empty()) spans[k] = open_span(*b, k);
      enqueue_on(b->streams[k], k, b->messages, nccl ? nullptr : &b->arrivals[k],
                 nccl ? b->arrival_events[k] : nullptr, b->failed, span_of(k));
      if (nccl) continue;
      for (std::size_t j = 1; j < pieces; ++j)
        enqueue_on(b->streams[k], k, b->messages, &b->piece_arrivals[(j - 1) * streams + k],
                   nullptr, b->failed, untraced, j);
      for (std::size_t j = 0; j + 1 < pieces; ++j) {
        waits = true;
        b->streams[k].wait_value(*b->piece_done[j].flag, b->piece_done[j].value);
        finish_on(b->streams[k], k, b->messages, b->failed, untraced, j, false);
      }
      waits = true;
      b->streams[k].wait_value(*b->lease.flag, b->lease.value);
      finish_on(b->streams[k], k, b->messages, b->failed, span_of(k), pieces - 1);
    }
    if (nccl) {
      nccl_enqueue(*b);
      for (; done_on < b->streams.size(); ++done_on) {
        b->done_events[done_on]->record(b->streams[done_on]);
        if (b->gated) b->streams[done_on].wait_value(*b->lease.flag, b->lease.value);
        finish_on(b->streams[done_on], done_on, b->messages, b->failed, span_of(done_on));
      }
    }
  } catch (const std::exception& e) {
    // Events not recorded on a stream are ready: the engine sees those
    // streams as there and done.
    if (k == 0 && !waits && done_on == 0) {  // nothing the engine must answer: as if never called
      release_unused_staging(*b);
      b->arrivals.clear();  // no stream stores them: no late store to fear
      throw;                // b goes back to the pool
    }
    // Some streams have it, others not (no memory, a stream destroyed
    // meanwhile): it is released for those that have it, failed, and this
    // call says why. The others never get there: their arrivals are given.
    b->failure = std::string("it could not be enqueued on every stream: ") + e.what();
    for (std::size_t j = k; j < b->arrivals.size(); ++j)
      b->arrivals[j].flag->store(b->arrivals[j].value);  // (nccl: their events are not recorded)
    for (std::size_t i = 0; i < b->piece_arrivals.size(); ++i)
      if (i % streams >= k) b->piece_arrivals[i].flag->store(b->piece_arrivals[i].value);
    progress::get().submit(b.release());
    throw;
  }
  if (from != sluice::detail::unknown_count) {
    // Its arrival and its wait, and a span's two markers while tracing.
    const std::uint64_t ours = span_of(0).id != 0 ? 4 : 2;
    const std::uint64_t to = sluice::detail::enqueued_count(b->streams[0]);
    if (to != sluice::detail::unknown_count && to - from == ours) {
      b->enqueued_from = from;
      b->enqueued_to = to;
    }
  }
  if (mutation::is(mutation::kind::enqueue_waits)) {
    const flag_lease done = b->lease;
    progress::get().submit(b.release());
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (done.flag->load() < done.value && std::chrono::steady_clock::now() < end)
      std::this_thread::yield();
    return;
  }
  progress::get().submit(b.release());
}

batch_ptr single(const std::shared_ptr<communicator_state>& c, stream_ref s, const message& m) {
  batch_ptr b(new_batch());
  b->comm = c;
  b->messages.push_back(m);
  b->streams.push_back(s);
  return b;
}

void point_to_point(stream_ref s, message m, const std::shared_ptr<communicator_state>& state,
                    const char* api) {
  auto& c = checked(state, api);
  check_stream(s, c, api);
  check_rank(m.peer, c, m.kind == op_kind::send ? "destination" : "source", api);
  checked_count(m.count, 1, api);
  check_buffer(m.kind == op_kind::send ? m.in : m.out, m.count,
               m.kind == op_kind::send ? "send" : "receive", api);
  if (m.kind == op_kind::send)
    m.in_device = check_memory(m.in, c, "send", api);
  else
    m.out_device = check_memory(m.out, c, "receive", api);
  group_state* g = live_group(c);
  // The match number: the n-th send from a to b meets b's n-th receive from a.
  {
    std::lock_guard<std::mutex> lock(c.m);
    auto& counter = m.kind == op_kind::send ? c.sent[static_cast<std::size_t>(m.peer)]
                                            : c.received[static_cast<std::size_t>(m.peer)];
    m.tag = mutation::is(mutation::kind::tag_zero)
                ? 0
                : static_cast<int>(counter % (static_cast<std::uint64_t>(c.tag_limit) + 1));
    m.sequence = mutation::is(mutation::kind::tag_zero) ? 0 : counter;
    if (g == nullptr) {
      enqueue(single(state, s, m));  // under c.m: match numbers and enqueue order agree
    } else {
      std::size_t index = g->b->streams.size();
      for (std::size_t k = 0; k < g->b->streams.size(); ++k)
        if (g->b->streams[k] == s) index = k;
      if (index == g->b->streams.size()) g->b->streams.push_back(s);
      m.stream = index;
      g->b->messages.push_back(m);
    }
    ++counter;
  }
}

void collective(stream_ref s, message m, const std::shared_ptr<communicator_state>& state,
                const char* api) {
  auto& c = checked(state, api);
  check_stream(s, c, api);
  m.in_device = check_memory(m.in, c, "input", api);
  m.out_device = check_memory(m.out, c, "output", api);
  mutation::active();  // an unknown name is rejected before anything is enqueued
  auto b = single(state, s, m);
  std::lock_guard<std::mutex> lock(c.m);
  b->collective = c.collectives + 1;
  enqueue(std::move(b));
  ++c.collectives;
}

message collective_message(op_kind kind, const void* in, void* out, std::size_t count, datatype t) {
  message m;
  m.kind = kind;
  m.in = in;
  m.out = out;
  m.count = count;
  m.type = t;
  return m;
}

}  // namespace

void all_reduce(stream_ref s, const void* in, void* out, std::size_t count, datatype t,
                reduce_op op, const communicator& c) {
  constexpr const char* api = "sluice::comm::all_reduce";
  const std::size_t bytes = checked_count(count, element_size(t), api);
  check_buffer(in, bytes, "input", api);
  check_buffer(out, bytes, "output", api);
  if (!known(op)) reject(errc::invalid_argument, api, "unknown reduce_op");
  if (in != out && overlap(in, bytes, out, bytes))
    reject(errc::invalid_argument, api,
           "the input and output overlap without being the same (in place)");
  message m = collective_message(op_kind::all_reduce, in, out, count, t);
  m.op = op;
  collective(s, m, communicator_state::of(c), api);
}

void broadcast(stream_ref s, void* buf, std::size_t count, datatype t, int root,
               const communicator& c) {
  constexpr const char* api = "sluice::comm::broadcast";
  const std::size_t bytes = checked_count(count, element_size(t), api);
  check_buffer(buf, bytes, "", api);
  const auto& state = communicator_state::of(c);
  check_rank(root, checked(state, api), "root", api);
  message m = collective_message(op_kind::broadcast, buf, buf, count, t);
  m.peer = root;
  collective(s, m, state, api);
}

void all_gather(stream_ref s, const void* in, void* out, std::size_t count_per_rank, datatype t,
                const communicator& c) {
  constexpr const char* api = "sluice::comm::all_gather";
  const auto& state = communicator_state::of(c);
  auto& cs = checked(state, api);
  const std::size_t bytes = checked_count(count_per_rank, element_size(t), api);
  // (count_per_rank <= INT_MAX elements of <= 8 bytes, size() <= INT_MAX: no overflow)
  const std::size_t total = bytes * static_cast<std::size_t>(cs.size);
  check_buffer(in, bytes, "input", api);
  check_buffer(out, total, "output", api);
  const void* own = static_cast<const char*>(out) + static_cast<std::size_t>(cs.rank) * bytes;
  if (in != own && overlap(in, bytes, out, total))
    reject(errc::invalid_argument, api,
           "the input overlaps the output without being this rank's own slot (in place)");
  collective(s, collective_message(op_kind::all_gather, in, out, count_per_rank, t), state, api);
}

}  // namespace detail

void send(stream_ref s, const void* buf, std::size_t bytes, int to, const communicator& c) {
  detail::message m;
  m.kind = detail::op_kind::send;
  m.in = buf;
  m.count = bytes;
  m.peer = to;
  detail::point_to_point(s, m, detail::communicator_state::of(c), "sluice::comm::send");
}

void recv(stream_ref s, void* buf, std::size_t bytes, int from, const communicator& c) {
  detail::message m;
  m.kind = detail::op_kind::recv;
  m.out = buf;
  m.count = bytes;
  m.peer = from;
  detail::point_to_point(s, m, detail::communicator_state::of(c), "sluice::comm::recv");
}

// --- communicator -------------------------------------------------------------

namespace detail {
namespace {

// While a trace is collected on any of its ranks: this process's trace clock
// against that of the communicator's rank 0, for `sluice trace report` to put
// the ranks' files on one timeline (docs/comm.md "Tracing"). Ranks on rank
// 0's host (same host name and boot) share its steady clock: offset 0, exact.
// Others: the best of `rounds` ping-pongs with rank 0, offset = the midpoint
// of the round trip minus rank 0's time, within +- half the round trip.
// Collective over c (under the MPI guard).
void measure_trace_clock(const communicator_state& c) {
  namespace trace = sluice::detail::trace;
  constexpr int rounds = 10;
  constexpr int host_chars = 512;
  trace::rank_info info;
  MPI_Comm_rank(MPI_COMM_WORLD, &info.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &info.ranks);
  // Rank 0's world rank and host.
  char host[host_chars] = {};
  int reference = info.rank;
  const std::string mine = trace::host_identity();
  mine.copy(host, host_chars - 1);
  if (MPI_Bcast(&reference, 1, MPI_INT, 0, c.mpi) != MPI_SUCCESS ||
      MPI_Bcast(host, host_chars, MPI_CHAR, 0, c.mpi) != MPI_SUCCESS)
    return;
  host[host_chars - 1] = '\0';
  info.reference = reference;
  info.same_host = mine == host;
  std::int64_t best_rtt = -1;
  for (int r = 1; r < c.size; ++r) {
    if (c.rank != 0 && c.rank != r) continue;
    for (int k = 0; k < rounds; ++k) {
      std::int64_t t = 0;
      if (c.rank == 0) {
        if (MPI_Recv(&t, 1, MPI_INT64_T, r, 0, c.mpi, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
        t = trace::now_ns();
        if (MPI_Send(&t, 1, MPI_INT64_T, r, 0, c.mpi) != MPI_SUCCESS) return;
      } else {
        const std::int64_t t0 = trace::now_ns();
        if (MPI_Send(&t, 1, MPI_INT64_T, 0, 0, c.mpi) != MPI_SUCCESS ||
            MPI_Recv(&t, 1, MPI_INT64_T, 0, 0, c.mpi, MPI_STATUS_IGNORE) != MPI_SUCCESS)
          return;
        const std::int64_t t1 = trace::now_ns();
        if (best_rtt < 0 || t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          info.measured_offset_ns = t0 + (t1 - t0) / 2 - t;
          info.measured_error_ns = (t1 - t0 + 1) / 2;
        }
      }
    }
  }
  if (c.rank == 0 || info.same_host) {
    info.clock_offset_ns = 0;  // the same clock
    info.clock_error_ns = 0;
  } else {
    info.clock_offset_ns = info.measured_offset_ns;
    info.clock_error_ns = info.measured_error_ns;
  }
  trace::note_rank(info);
}

}  // namespace
}  // namespace detail

communicator::communicator(MPI_Comm c, sluice::device d, engine e) {
  constexpr const char* api = "sluice::comm::communicator";
  if (e != engine::automatic && e != engine::mpi && e != engine::nccl)
    detail::reject(errc::invalid_argument, api, "unknown engine");
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    detail::reject(errc::invalid_argument, api,
                   finalized ? "MPI is finalized" : "MPI is not initialized (call MPI_Init first)");
  if (c == MPI_COMM_NULL)
    detail::reject(errc::invalid_argument, api, "the MPI communicator is MPI_COMM_NULL");
  const engine chosen = e == engine::automatic ? detail::default_engine() : e;
  if (chosen == engine::nccl && !detail::nccl_available())
    detail::reject(errc::not_supported, api,
                   "the nccl engine is not in this build (NCCL needs the CUDA backend and nccl.h; "
                   "engine::mpi works everywhere)");
  auto state = std::make_shared<detail::communicator_state>(d);
  state->kind = chosen;
  detail::progress::get();  // the engine thread, before the collective dup below
  {
    auto lock = detail::progress::mpi_guard();
    int inter = 0;
    MPI_Comm_test_inter(c, &inter);
    if (inter) detail::reject(errc::invalid_argument, api, "inter-communicators are not supported");
    if (MPI_Comm_dup(c, &state->mpi) != MPI_SUCCESS)
      detail::reject(errc::comm_failure, api, "MPI_Comm_dup failed");
    MPI_Comm_set_errhandler(state->mpi, MPI_ERRORS_RETURN);
    if (MPI_Comm_dup(state->mpi, &state->ring) != MPI_SUCCESS) {
      MPI_Comm_free(&state->mpi);  // here: the state's destructor would take the MPI guard
      detail::reject(errc::comm_failure, api, "MPI_Comm_dup failed (the ring's communicator)");
    }
    MPI_Comm_set_errhandler(state->ring, MPI_ERRORS_RETURN);
    if (MPI_Comm_dup(state->mpi, &state->pieces) != MPI_SUCCESS) {
      MPI_Comm_free(&state->ring);
      MPI_Comm_free(&state->mpi);
      detail::reject(errc::comm_failure, api, "MPI_Comm_dup failed (the pieces' communicator)");
    }
    MPI_Comm_set_errhandler(state->pieces, MPI_ERRORS_RETURN);
    MPI_Comm_rank(state->mpi, &state->rank);
    MPI_Comm_size(state->mpi, &state->size);
    void* value = nullptr;
    int present = 0;
    MPI_Comm_get_attr(state->mpi, MPI_TAG_UB, &value, &present);
    if (present && value != nullptr) state->tag_limit = *static_cast<int*>(value);
    // Whether any rank traces: then all measure the trace clocks together.
    int traced = sluice::tracing() ? 1 : 0;
    if (MPI_Allreduce(MPI_IN_PLACE, &traced, 1, MPI_INT, MPI_MAX, state->mpi) != MPI_SUCCESS)
      detail::reject(errc::comm_failure, api, "MPI_Allreduce failed");
    if (traced != 0) detail::measure_trace_clock(*state);
    // Rank 0's piece size and pieces in flight, so that every rank cuts a
    // message the same way (mpi engine only: NCCL reads device memory,
    // nothing is staged).
    const bool asks = chosen == engine::mpi && state->rank == 0;
    long long piece[2] = {
        asks ? detail::piece_bytes_asked() : 0,
        asks ? detail::rank0_setting("SLUICE_COMM_PIECES_IN_FLIGHT", 0, 0, 1024) : 0};
    if (MPI_Bcast(piece, 2, MPI_LONG_LONG, 0, state->mpi) != MPI_SUCCESS)
      detail::reject(errc::comm_failure, api, "MPI_Bcast failed (the piece size)");
    if (piece[0] < 0)
      detail::reject(errc::invalid_argument, api,
                     "SLUICE_COMM_PIECE_BYTES (rank 0's) must be 0 or a whole number from 4096 "
                     "to 1073741824");
    if (piece[1] < 0)
      detail::reject(errc::invalid_argument, api,
                     "SLUICE_COMM_PIECES_IN_FLIGHT (rank 0's) must be a whole number from 0 "
                     "(all) to 1024");
    state->piece_bytes = static_cast<std::size_t>(piece[0]);
    state->pieces_in_flight = static_cast<std::size_t>(piece[1]);
  }
  if (chosen == engine::nccl) detail::nccl_create(*state);  // collective, like the dup
  state->sent.assign(static_cast<std::size_t>(state->size), 0);
  state->received.assign(static_cast<std::size_t>(state->size), 0);
  state_ = std::move(state);
}

communicator::communicator(communicator&&) noexcept = default;
communicator& communicator::operator=(communicator&&) noexcept = default;
communicator::~communicator() = default;

int communicator::rank() const {
  return detail::checked(state_, "sluice::comm::communicator::rank").rank;
}
int communicator::size() const {
  return detail::checked(state_, "sluice::comm::communicator::size").size;
}
sluice::device communicator::device() const {
  return detail::checked(state_, "sluice::comm::communicator::device").device;
}
engine communicator::kind() const {
  return detail::checked(state_, "sluice::comm::communicator::kind").kind;
}

// --- group ----------------------------------------------------------------------

group::group(const communicator& c) {
  constexpr const char* api = "sluice::comm::group";
  const auto& state = detail::communicator_state::of(c);
  auto& cs = detail::checked(state, api);
  if (detail::live_group(cs) != nullptr)
    detail::reject(errc::invalid_argument, api,
                   "a group of this communicator already lives on this thread");
  auto g = std::make_unique<detail::group_state>();
  g->comm = state;
  g->b.reset(detail::new_batch());
  g->b->comm = state;
  g->b->grouped = true;
  detail::live_groups.push_back(g.get());
  state_ = std::move(g);
}

group::~group() {
  auto& live = detail::live_groups;
  for (auto it = live.begin(); it != live.end(); ++it)
    if (*it == state_.get()) {
      live.erase(it);
      break;
    }
  if (state_->b->messages.empty()) return;
  auto& c = *state_->comm;
  try {
    std::lock_guard<std::mutex> lock(c.m);  // beside the ungrouped enqueues
    detail::enqueue(std::move(state_->b));
  } catch (const std::exception& e) {
    // Nothing is lost: the group's streams and stderr say it.
    const std::string message = "sluice::comm: rank " + std::to_string(c.rank) +
                                ": a group could not be enqueued: " + e.what();
    std::fprintf(stderr, "sluice: %s\n", message.c_str());
    if (state_->b)
      for (stream_ref s : state_->b->streams) {
        try {
          sluice::detail::report_stream_failure(s, errc::comm_failure, message);
        } catch (...) {
        }
      }
  }
}

}  // namespace sluice::comm
