// The mpi engine: one thread per process starts every batch with
// non-blocking MPI, tests it, and releases the batch's streams (their flag)
// when it completes, fails or times out. No sluice worker and no vendor
// callback ever makes a blocking MPI call (docs/comm.md "How it works").
#include "engine.hpp"
#include "environment.hpp"
#include "mutation.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <utility>

namespace sluice::comm::detail {

namespace {

using clock = std::chrono::steady_clock;

MPI_Datatype mpi_type(datatype t) {
  switch (t) {
    case datatype::int32: return MPI_INT32_T;
    case datatype::int64: return MPI_INT64_T;
    case datatype::float32: return MPI_FLOAT;
    case datatype::float64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return MPI_SUM;
    case reduce_op::prod: return MPI_PROD;
    case reduce_op::min: return MPI_MIN;
    case reduce_op::max: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

// All_reduce of at least this many bytes goes round the ring (ring.cpp).
std::size_t ring_bytes() {
  static const std::size_t bytes =
      static_cast<std::size_t>(sluice::detail::integer_from_environment(
          "SLUICE_COMM_RING_BYTES", 65536, 0, std::numeric_limits<int>::max()));
  return bytes;
}

// A collective of at most this many bytes per rank (and an all_gather of any
// size; 0: none of them), on at most small_ranks ranks, goes as
// point-to-point messages (post_small).
std::size_t small_bytes() {
  static const std::size_t bytes =
      static_cast<std::size_t>(sluice::detail::integer_from_environment(
          "SLUICE_COMM_SMALL_BYTES", 4096, 0, std::numeric_limits<int>::max()));
  return bytes;
}
constexpr int small_ranks = 16;

// Small collectives (and all_gather) as non-blocking sends and receives on
// c.ring, every rank with every other (Open MPI's non-blocking collectives
// build a schedule per call: several times the cost of the message at a few
// bytes). One tag, the
// communicator's largest, which the ring's tags never reach: a rank's
// collectives start in their enqueue order (order()), and MPI matches the
// messages of one sender, tag and communicator in the order they were posted.
// all_reduce: every rank's input gathered into b.scratch, then reduced in rank
// order on every rank: the same bits everywhere (COMM-5); an all_gather of at
// most small_bytes() per rank gathered there too (finish_small).
int post_small(communicator_state& c, batch& b, message& m) {
  const int count = static_cast<int>(m.count);
  MPI_Datatype type = mpi_type(m.type);
  const std::size_t bytes = m.count * element_size(m.type);
  const int tag = c.tag_limit;
  b.requests.clear();
  m.small = true;
  auto post_recv = [&](void* into, int from) {
    b.requests.push_back(MPI_REQUEST_NULL);
    return MPI_Irecv(into, count, type, from, tag, c.ring, &b.requests.back());
  };
  auto post_send = [&](const void* from, int to) {
    b.requests.push_back(MPI_REQUEST_NULL);
    return MPI_Isend(from, count, type, to, tag, c.ring, &b.requests.back());
  };
  // Room for every request first: push_back must not move one MPI holds.
  b.requests.reserve(2 * static_cast<std::size_t>(c.size));
  int code = MPI_SUCCESS;
  switch (m.kind) {
    case op_kind::broadcast:
      if (c.rank != m.peer) return post_recv(m.out, m.peer);
      for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
        if (r != c.rank) code = post_send(m.out, r);
      return code;
    case op_kind::all_gather:
      if (bytes > small_bytes()) {  // straight into `out`
        char* out = static_cast<char*>(m.out);
        char* own = out + static_cast<std::size_t>(c.rank) * bytes;
        for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
          if (r != c.rank) code = post_recv(out + static_cast<std::size_t>(r) * bytes, r);
        for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
          if (r != c.rank) code = post_send(m.in, r);
        // This rank's block while the messages move (the sends read `in`).
        if (m.in != own) std::memcpy(own, m.in, bytes);
        return code;
      }
      [[fallthrough]];  // a small one through scratch, as all_reduce
    case op_kind::all_reduce: {
      // Every rank's block into b.scratch (finish_small writes `out`).
      b.scratch.resize(bytes * static_cast<std::size_t>(c.size));
      char* all = b.scratch.data();
      char* own = all + static_cast<std::size_t>(c.rank) * bytes;
      std::memcpy(own, m.in, bytes);
      for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
        if (r != c.rank) code = post_recv(all + static_cast<std::size_t>(r) * bytes, r);
      for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
        if (r != c.rank) code = post_send(own, r);
      return code;
    }
    default: return MPI_ERR_OTHER;
  }
}

// The small collective m of b completed (finish(), once its stream got
// there): every rank's block from b.scratch into `out`, all_reduce's reduced
// in rank order. So such a collective reads `in` when posted and writes `out`
// when finished, in its stream's order (what lets it start early).
void finish_small(const communicator_state& c, const batch& b, message& m) noexcept {
  const std::size_t bytes = m.count * element_size(m.type);
  const char* all = b.scratch.data();
  if (m.kind == op_kind::all_gather) {
    if (bytes <= small_bytes()) std::memcpy(m.out, all, bytes * static_cast<std::size_t>(c.size));
    return;
  }
  if (m.kind != op_kind::all_reduce) return;
  std::memcpy(m.out, all, bytes);
  for (int r = 1; r < c.size; ++r)
    reduce(m.out, m.out, all + static_cast<std::size_t>(r) * bytes, m.count, m.type, m.op);
}

// Whether message m, its batch's only one and not a piece, goes by
// post_small (when no ring all_reduce takes it first: post()): a broadcast
// or all_reduce of at most small_bytes() per rank or an all_gather, on 2 to
// small_ranks ranks with a ring communicator.
bool goes_small(const communicator_state& c, const message& m) {
  return m.kind != op_kind::send && m.kind != op_kind::recv && c.size > 1 &&
         c.size <= small_ranks && c.ring != MPI_COMM_NULL && small_bytes() > 0 &&
         (m.kind == op_kind::all_gather || bytes_of(m) <= small_bytes());
}

// Whether b goes by post_small through b.scratch: a small all_reduce below
// the ring's size or a small all_gather, neither staged.
bool through_scratch(const communicator_state& c, const batch& b) {
  if (b.messages.size() != 1 || b.pieces != 1) return false;
  const message& m = b.messages.front();
  const std::size_t bytes = bytes_of(m);
  return (m.kind == op_kind::all_gather ||
          (m.kind == op_kind::all_reduce && bytes < ring_bytes())) &&
         bytes <= small_bytes() && goes_small(c, m) && m.stage_in.device == nullptr &&
         m.stage_out.device == nullptr;
}

// The bytes collective m writes at `out`.
std::size_t written_by(const communicator_state& c, const message& m) {
  return m.kind == op_kind::all_gather ? bytes_of(m) * static_cast<std::size_t>(c.size)
                                       : bytes_of(m);
}

// The first of the ring's tags of the collective-th collective on c.ring: its
// place modulo the window of collectives whose tags differ, times the ring's
// steps; -1 when c has no ring (one rank, no second duplicate, or too few
// tags for two collectives).
int ring_tags(const communicator_state& c, std::uint64_t collective) {
  if (c.size < 2 || c.ring == MPI_COMM_NULL) return -1;
  const int steps = ring_all_reduce::steps_for(c.size);
  const int window = c.tag_limit / steps;
  if (window < 2) return -1;
  return static_cast<int>(collective % static_cast<std::uint64_t>(window)) * steps;
}

// Posts one message of b (or, `piece`, one piece of a collective: never the
// small path, whose finish reads the whole message); an MPI error code,
// MPI_SUCCESS when posted.
int post(communicator_state& c, batch& b, message& m, bool piece = false) {
  const std::uint64_t collective = b.collective;  // its place among c's collectives (tags)
  const int count = static_cast<int>(m.count);    // comm.cpp checked it fits
  if (m.kind == op_kind::all_reduce && m.count * element_size(m.type) >= ring_bytes()) {
    const int base = ring_tags(c, collective);
    if (base >= 0) {
      m.ring = std::make_shared<ring_all_reduce>(m, c, base, mpi_type(m.type));
      return m.ring->start();
    }
  }
  // all_gather at any size: libnbc's took 3-5x the blocking call's time at
  // 1-4 MiB on 2 ranks (this VM, under load); every rank sends its block to
  // every other, as many bytes per rank as a ring.
  if (!piece && b.messages.size() == 1 && goes_small(c, m)) return post_small(c, b, m);
  switch (m.kind) {
    case op_kind::send: return MPI_Isend(m.in, count, MPI_BYTE, m.peer, m.tag, c.mpi, &m.request);
    case op_kind::recv:
      if (mutation::is(mutation::kind::receive_unprobed))
        return MPI_Irecv(m.out, count, MPI_BYTE, m.peer, m.tag, c.mpi, &m.request);
      m.probing = true;  // poll() probes for its message
      return MPI_SUCCESS;
    case op_kind::all_reduce:
      return MPI_Iallreduce(m.in == m.out ? MPI_IN_PLACE : m.in, m.out, count, mpi_type(m.type),
                            mpi_op(m.op), c.mpi, &m.request);
    case op_kind::broadcast:
      return MPI_Ibcast(m.out, count, mpi_type(m.type), m.peer, c.mpi, &m.request);
    case op_kind::all_gather: {
      const void* own = static_cast<const char*>(m.out) +
                        static_cast<std::size_t>(c.rank) * m.count * element_size(m.type);
      return MPI_Iallgather(m.in == own ? MPI_IN_PLACE : m.in, count, mpi_type(m.type), m.out,
                            count, mpi_type(m.type), c.mpi, &m.request);
    }
  }
  return MPI_ERR_OTHER;
}

// A broadcast's pieces go from the root to every rank on the ring's
// communicator (when it has one and the tags' window allows): requests per
// piece, the root's one per other rank.
bool broadcast_in_messages(const communicator_state& c, const message& m) {
  return m.kind == op_kind::broadcast && ring_tags(c, 0) >= 0;
}
std::size_t broadcast_requests(const communicator_state& c, const message& m) {
  return c.rank == m.peer ? static_cast<std::size_t>(c.size - 1) : 1;
}

// Pieces (docs/comm.md "Pieces"): the next piece of m, m.posted; an MPI
// error code. A send or receive goes on c.pieces with its match number as
// the tag (its pieces and header match in the order they were posted); a
// collective's piece is the collective on that part of the buffers.
int post_piece(communicator_state& c, batch& b, message& m) {
  const byte_range r = piece_range(m, bytes_of(m), m.posted);
  const int length = static_cast<int>(r.length);  // at most the message's, which fits
  int code = MPI_SUCCESS;
  switch (m.kind) {
    case op_kind::send:
      code = MPI_Isend(static_cast<const char*>(m.in) + r.offset, length, MPI_BYTE, m.peer, m.tag,
                       c.pieces, &m.piece_requests[m.posted]);
      break;
    case op_kind::recv:
      code = MPI_Irecv(static_cast<char*>(m.out) + r.offset, length, MPI_BYTE, m.peer, m.tag,
                       c.pieces, &m.piece_requests[m.posted]);
      break;
    default: {
      message part = m;
      part.in = m.in == nullptr ? nullptr : static_cast<const char*>(m.in) + r.offset;
      part.out = static_cast<char*>(m.out) + r.offset;
      part.count = r.length / element_size(m.type);
      part.piece = 0;
      part.ring.reset();
      part.request = MPI_REQUEST_NULL;
      // On the ring's communicator with the ring's tags of this collective
      // (its place modulo the window): a later collective may start while
      // this one's pieces still go, and MPI's own collectives would then be
      // called in different orders on different ranks. all_reduce round the
      // ring; broadcast from the root to every rank.
      const int tag = ring_tags(c, b.collective);
      if (tag >= 0) {
        MPI_Datatype type = mpi_type(m.type);
        const int count = static_cast<int>(part.count);
        if (m.kind == op_kind::all_reduce) {
          m.ring = std::make_shared<ring_all_reduce>(part, c, tag, type);
          code = m.ring->start();
        } else {  // this piece's requests: piece_requests[j * per .. (j + 1) * per)
          MPI_Request* next = &m.piece_requests[m.posted * broadcast_requests(c, m)];
          for (int to = 0; to < c.size && code == MPI_SUCCESS; ++to) {
            if (to == c.rank || (c.rank != m.peer && to != m.peer)) continue;
            code = c.rank == m.peer ? MPI_Isend(part.out, count, type, to, tag, c.ring, next++)
                                    : MPI_Irecv(part.out, count, type, m.peer, tag, c.ring, next++);
          }
        }
        break;
      }
      code = post(c, b, part, true);
      m.request = part.request;
      m.ring = std::move(part.ring);
      break;
    }
  }
  if (code == MPI_SUCCESS) ++m.posted;
  return code;
}

// A message in pieces starts: a send tells its size and piece size (the
// header) and posts its first piece; a receive waits for the header first
// (poll_pieces checks it before posting a piece); a collective posts its
// first piece (every rank cuts the same count the same way).
int start_pieces(communicator_state& c, batch& b, message& m) {
  m.posted = 0;
  m.completed = 0;
  m.header_checked = m.kind != op_kind::recv;
  if (m.kind == op_kind::send || m.kind == op_kind::recv)
    m.piece_requests.assign(pieces_of(m, bytes_of(m)), MPI_REQUEST_NULL);
  if (broadcast_in_messages(c, m))
    m.piece_requests.assign(pieces_of(m, bytes_of(m)) * broadcast_requests(c, m), MPI_REQUEST_NULL);
  if (m.kind == op_kind::recv)
    return MPI_Irecv(m.header, 2, MPI_UINT64_T, m.peer, m.tag, c.pieces, &m.header_request);
  if (m.kind == op_kind::send) {
    m.header[0] = m.count;
    m.header[1] = m.piece;
    const int code =
        MPI_Isend(m.header, 2, MPI_UINT64_T, m.peer, m.tag, c.pieces, &m.header_request);
    if (code != MPI_SUCCESS) return code;
  }
  return post_piece(c, b, m);
}

// The nccl engine: NCCL carries the data (its calls are on the streams
// already); the engine exchanges what NCCL cannot check, the size of each
// send: the sender's `request` tells it to the receiver, whose `size_request`
// learns it into peer_bytes (one way: a send does not wait for its receiver).
int post_sizes(communicator_state& c, message& m) {
  m.own_bytes = m.count;
  m.size_told = m.kind != op_kind::send;
  m.size_learned = m.kind != op_kind::recv;
  if (m.kind == op_kind::send)
    return MPI_Isend(&m.own_bytes, 1, MPI_UINT64_T, m.peer, m.tag, c.mpi, &m.request);
  if (m.kind == op_kind::recv)
    return MPI_Irecv(&m.peer_bytes, 1, MPI_UINT64_T, m.peer, m.tag, c.mpi, &m.size_request);
  return MPI_SUCCESS;
}

// m failed: b's failure (the first one only) is m's description followed by
// `what`; m is done.
void fail_message(batch& b, message& m, const std::string& what) {
  if (b.failure.empty()) b.failure = m.describe() + what;
  m.done = true;
}

// What a receive's failure says when its send had another size.
template <typename Count>
std::string sent_other_size(Count bytes) {
  return ": the matching send had " + std::to_string(bytes) +
         " bytes (a receive must be exactly as large as its send)";
}

// Whether m's size exchange completed (tested as needed); code: an MPI error.
bool sizes_known(message& m, int& code) {
  code = MPI_SUCCESS;
  int completed = 0;
  if (!m.size_told) {
    code = MPI_Test(&m.request, &completed, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) return false;
    m.size_told = completed != 0;
  }
  if (m.size_told && !m.size_learned) {
    code = MPI_Test(&m.size_request, &completed, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) return false;
    m.size_learned = completed != 0;
  }
  return m.size_told && m.size_learned;
}

}  // namespace

const char* to_string(op_kind k) noexcept {
  switch (k) {
    case op_kind::send: return "send";
    case op_kind::recv: return "recv";
    case op_kind::all_reduce: return "all_reduce";
    case op_kind::broadcast: return "broadcast";
    case op_kind::all_gather: return "all_gather";
  }
  return "unknown";
}

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) noexcept {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes != 0 && b_bytes != 0 && x < y + b_bytes && y < x + a_bytes;
}

std::size_t bytes_of(const message& m) noexcept {
  return m.kind == op_kind::send || m.kind == op_kind::recv ? m.count
                                                            : m.count * element_size(m.type);
}

std::size_t pieces_of(const message& m, std::size_t bytes) noexcept {
  return m.piece == 0 || bytes == 0 ? 1 : (bytes + m.piece - 1) / m.piece;
}

byte_range piece_range(const message& m, std::size_t bytes, std::size_t j) noexcept {
  if (m.piece == 0) return j == 0 ? byte_range{0, bytes} : byte_range{bytes, 0};
  const std::size_t offset = std::min(bytes, j * m.piece);
  return byte_range{offset, std::min(m.piece, bytes - offset)};
}

std::string message::describe() const {
  switch (kind) {
    case op_kind::send:
      return "send of " + std::to_string(count) + " bytes to rank " + std::to_string(peer);
    case op_kind::recv:
      return "recv of " + std::to_string(count) + " bytes from rank " + std::to_string(peer);
    case op_kind::broadcast:
      return "broadcast of " + std::to_string(count) + " elements from rank " +
             std::to_string(peer);
    default: return std::string(to_string(kind)) + " of " + std::to_string(count) + " elements";
  }
}

std::string batch::describe() const {
  if (messages.size() == 1) return messages.front().describe();
  std::string text = "group of " + std::to_string(messages.size()) + " (";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) text += ", ";
    text += messages[i].describe();
  }
  return text + ")";
}

// --- pooled batches and their flags ------------------------------------------

namespace {
// Flags no batch uses any more, kept (never freed: a stream may still wait
// on one, or store it late) where leak checkers see them. Rare: a flag used
// up (2^32 uses) or one its stream never stored.
void retire(sluice::flag* f) noexcept {
  try {
    static auto* m = new std::mutex;
    static auto* retired = new std::vector<sluice::flag*>;
    std::lock_guard<std::mutex> lock(*m);
    retired->push_back(f);
  } catch (...) {
    // No memory to list it: it stays allocated, unlisted.
  }
}
}  // namespace

flag_lease batch::next_flag(std::size_t i) {
  while (own_flags.size() <= i) own_flags.push_back(flag_lease{});
  flag_lease& f = own_flags[i];
  if (f.flag == nullptr || f.value == UINT32_MAX) {  // none yet, or used up: a new one
    if (f.flag != nullptr) retire(f.flag);
    f = flag_lease{new sluice::flag(0), 0};
  }
  ++f.value;
  return f;
}

namespace {

// Batches given back, newest first: any thread pushes one (a CAS), a thread
// that needs one takes the whole list at once (an exchange) into its own
// cache, so no pop ever races another (no ABA) and no lock is taken.
std::atomic<batch*>& returned_batches() noexcept {
  static std::atomic<batch*> head{nullptr};  // trivially destroyed: usable by late thread exits
  return head;
}

void push_returned(batch* first, batch* last) noexcept {
  auto& head = returned_batches();
  batch* h = head.load(std::memory_order_relaxed);
  do {
    last->next = h;
  } while (
      !head.compare_exchange_weak(h, first, std::memory_order_release, std::memory_order_relaxed));
}

// A thread's batches taken from the pool and not used yet; given back when it ends.
struct batch_cache {
  batch* head = nullptr;
  ~batch_cache() {
    if (head == nullptr) return;
    batch* last = head;
    while (last->next != nullptr) last = last->next;
    push_returned(head, last);
  }
};
thread_local batch_cache cached_batches;

}  // namespace

namespace {

struct event_pool {
  std::mutex m;
  std::map<int, std::vector<sluice::event*>> free;  // by device
};

event_pool& events() {
  static auto* pool = new event_pool;  // never destroyed: like the flags
  return *pool;
}

bool event_ready(sluice::event* e) noexcept {
  try {
    return e->ready();
  } catch (...) {
    return true;  // its stream failed: the failure reaches it by its own way
  }
}

}  // namespace

sluice::event* lease_event(sluice::device d) {
  auto& pool = events();
  {
    std::lock_guard<std::mutex> lock(pool.m);
    auto& free = pool.free[d.id()];
    if (!free.empty()) {
      sluice::event* e = free.back();
      free.pop_back();
      return e;
    }
  }
  return new sluice::event(d);  // never freed: see event_pool
}

void return_event(sluice::event* e) noexcept {
  if (e == nullptr || !event_ready(e)) return;  // a late record's event is not reused
  auto& pool = events();
  try {
    const int d = e->device().id();
    std::lock_guard<std::mutex> lock(pool.m);
    pool.free[d].push_back(e);
  } catch (...) {
    // No memory to keep it: it stays allocated, unused.
  }
}

batch* new_batch() {
  auto& cache = cached_batches;
  if (cache.head == nullptr)
    cache.head = returned_batches().exchange(nullptr, std::memory_order_acquire);
  if (cache.head == nullptr) {
    auto* b = new (std::nothrow) batch;
    if (b == nullptr)
      throw error(errc::out_of_memory, "sluice::comm: no memory for an operation", 0,
                  "sluice::comm");
    return b;
  }
  batch* b = cache.head;
  cache.head = b->next;
  b->next = nullptr;
  return b;
}

void recycle(batch* b) noexcept {
  if (b == nullptr) return;
  // A flag of this use that its stream has not stored yet (a done flag whose
  // stream never got there, an arrival of a batch started early) is retired:
  // its late store must not meet a later use's value.
  auto retire_unstored = [b](const flag_lease& used) {
    if (used.flag == nullptr || used.flag->load() >= used.value) return;
    for (flag_lease& own : b->own_flags)
      if (own.flag == used.flag) {
        retire(own.flag);
        own = flag_lease{};
      }
  };
  for (const flag_lease& a : b->arrivals) retire_unstored(a);
  for (const flag_lease& a : b->piece_arrivals) retire_unstored(a);
  // An event whose record is still pending stays out of the pool.
  for (sluice::event* e : b->arrival_events) return_event(e);
  for (sluice::event* d : b->done_events) return_event(d);
  b->arrival_events.clear();
  b->done_events.clear();
  b->comm.reset();
  b->messages.clear();
  b->streams.clear();
  b->lease = flag_lease{};
  b->arrivals.clear();
  b->pieces = 1;
  b->piece_arrivals.clear();
  b->piece_done.clear();
  b->pieces_released = 0;
  // Kept for the batch's next nccl use unless a host task still holds it.
  if (b->failed && b->failed.use_count() == 1)
    b->failed_spare = std::move(b->failed);
  else
    b->failed.reset();
  b->gated = true;
  b->verdict_given = false;
  b->sizes_posted = false;
  b->reported = false;
  b->enqueued_from = b->enqueued_to = sluice::detail::unknown_count;
  b->chained = b->early = b->here = b->completed = false;
  b->arrived = 0;
  b->collective = 0;
  b->grouped = false;
  b->deadline = {};
  b->failure.clear();
  b->requests.clear();
  // A small all_reduce's scratch stays with the batch while it is small (a
  // few ranks' words); a larger one is given back.
  if (b->scratch.capacity() > 1024) std::vector<char>().swap(b->scratch);
  b->next = nullptr;
  push_returned(b, b);
}

// --- the engine thread --------------------------------------------------------

std::unique_lock<std::mutex> progress::mpi_guard() {
  static auto* m = new std::mutex;
  static const bool serialize = [] {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return provided < MPI_THREAD_MULTIPLE;
  }();
  return serialize ? std::unique_lock<std::mutex>(*m) : std::unique_lock<std::mutex>();
}

progress& progress::get() {
  static progress* engine = new progress;  // stopped by MPI_Finalize, never destroyed
  return *engine;
}

progress::progress()
    : timeout_s_(sluice::detail::integer_from_environment("SLUICE_COMM_TIMEOUT_S", 300, 1, 86400)) {
  // MPI_Finalize deletes MPI_COMM_SELF's attributes first: the engine stops
  // there, failing what is still pending, before MPI goes away.
  int key = MPI_KEYVAL_INVALID;
  {
    auto lock = mpi_guard();
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &progress::on_finalize, &key, this) !=
            MPI_SUCCESS ||
        MPI_Comm_set_attr(MPI_COMM_SELF, key, this) != MPI_SUCCESS)
      throw error(errc::comm_failure,
                  "sluice::comm: could not register the engine's stop with MPI_Finalize", 0,
                  "MPI_Comm_set_attr");
  }
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::exception& e) {
    throw error(errc::comm_failure,
                std::string("sluice::comm: could not start the engine thread: ") + e.what(), 0,
                "sluice::comm::communicator");
  }
}

int progress::on_finalize(MPI_Comm, int, void*, void* self) {
  static_cast<progress*>(self)->shut_down();
  return MPI_SUCCESS;
}

void progress::shut_down() noexcept {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopping_.exchange(true)) return;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // nccl: no NCCL call still running on a thread of its own when MPI (and
  // then the process) ends; one that outlives the timeout is left to it.
  nccl_settle(std::chrono::seconds(timeout_s_));
}

std::mutex& progress::enqueue_order() noexcept {
  static auto* m = new std::mutex;
  return *m;
}

namespace {
// The inbox once the engine stopped: submit() refuses from then on.
batch* closed_inbox() noexcept {
  static batch marker;
  return &marker;
}
}  // namespace

void progress::submit(batch* b) noexcept {
  batch* head = inbox_.load();
  do {
    if (head == closed_inbox()) {
      b->failure = "MPI_Finalize was called before it could start";
      finish(b);
      return;
    }
    b->next = head;
  } while (!inbox_.compare_exchange_weak(head, b));
  // seq_cst with the engine's sleeping_ store and inbox_ load: either it sees
  // this batch before it waits, or this sees it waiting.
  if (sleeping_.load()) {
    std::lock_guard<std::mutex> lock(m_);
    cv_.notify_one();
  }
}

batch* progress::take_inbox(bool close) noexcept {
  // Most passes find it empty: a load, not an exchange that takes the cache
  // line from an enqueuing thread.
  if (!close && inbox_.load(std::memory_order_relaxed) == nullptr) return nullptr;
  batch* newest = inbox_.exchange(close ? closed_inbox() : nullptr);
  if (newest == closed_inbox()) return nullptr;
  batch* oldest = nullptr;
  while (newest != nullptr) oldest = std::exchange(newest, std::exchange(newest->next, oldest));
  return oldest;
}

bool progress::advance_lanes(bool stop) {
  bool moved = false;
  for (std::size_t i = 0; i < lanes_.size();) {
    auto& waiting = lanes_[i].waiting;
    while (!waiting.empty()) {
      auto [b, k] = waiting.front();
      const bool here = b->arrival_events.empty()
                            ? b->arrivals[k].flag->load() >= b->arrivals[k].value
                            : event_ready(b->arrival_events[k]);
      if (!stop && !here) {
        if (b->sizes_posted && !b->verdict_given) early_verdict(*b);
        if (start_early(lanes_[i])) moved = true;
        break;
      }
      waiting.pop_front();
      --waiting_batches_;
      moved = true;
      if (b->streams.size() == 1 && b->collective != 0 && b->messages.size() == 1) {
        lanes_[i].written = b->messages.front().out;
        lanes_[i].written_bytes = written_by(*b->comm, b->messages.front());
      } else {
        lanes_[i].written = nullptr;  // (the next batch is not chained to it)
        lanes_[i].written_bytes = 0;
      }
      if (b->early) {  // started before: finished now if its messages completed
        b->here = true;
        if (b->completed)
          finish(b);
        else if (!stop && !mutation::is(mutation::kind::early_deadline))  // it counts from here
          b->deadline = deadline();
        continue;
      }
      if (++b->arrived < b->streams.size()) continue;
      for (sluice::event* e : b->arrival_events) return_event(e);
      b->arrival_events.clear();
      if (stop) {
        for (auto& m : b->messages) {  // nccl: its size exchange, posted when taken
          cancel(m.request);
          cancel(m.size_request);
        }
        b->failure = "MPI_Finalize was called before it could start";
        finish(b);
      } else {
        order(b);
      }
    }
    // An empty lane is kept for the stream's next operation (its queue's
    // memory with it) unless there are many.
    if (waiting.empty() && lanes_.size() > 64) {
      lanes_[i] = std::move(lanes_.back());
      lanes_.pop_back();
    } else {
      ++i;
    }
  }
  return moved;
}

void progress::take(batch* b) {
  // nccl: the size exchange of its sends and receives goes out now, in
  // enqueue order, not once the streams got there (sizes are known when
  // enqueued, and no data moves): the receiver usually has its verdict before
  // its stream reaches the wait for it (early_verdict), instead of a round
  // trip through both engines after the stream got there. The timeout still
  // counts from there (start).
  // (An MPI error here fails the batch as any nccl failure: reported on its
  // streams, the NCCL communicator aborted; start() then finishes it.)
  if (b->comm->kind == engine::nccl && b->failure.empty()) {
    b->sizes_posted = true;
    for (auto& m : b->messages) {
      const int code = post_sizes(*b->comm, m);
      if (code != MPI_SUCCESS) {
        fail_message(*b, m, " could not start: " + mpi_error_string(code));
        fail_nccl(*b, b->failure);
        break;
      }
    }
  }
  for (std::size_t k = 0; k < b->streams.size(); ++k) {
    auto it = std::find_if(lanes_.begin(), lanes_.end(),
                           [&](const struct lane& l) { return l.stream == b->streams[k]; });
    if (it == lanes_.end()) it = lanes_.insert(lanes_.end(), lane{b->streams[k], {}});
    it->waiting.emplace_back(b, k);
    ++waiting_batches_;
    // Batches reach the engine in their streams' order: the lane's last one
    // is the one before b on its stream.
    const bool single = b->streams.size() == 1;
    b->chained =
        single && b->collective != 0 && it->last_collective && it->last_comm == b->comm.get() &&
        b->enqueued_from != sluice::detail::unknown_count && b->enqueued_from == it->enqueued_to;
    it->last_comm = b->comm.get();
    it->last_collective = single && b->collective != 0;
    it->enqueued_to = single ? b->enqueued_to : sluice::detail::unknown_count;
  }
}

clock::time_point progress::deadline() const noexcept {
  return mutation::is(mutation::kind::no_timeout) ? clock::time_point::max()
                                                  : now_ + std::chrono::seconds(timeout_s_);
}

std::atomic<unsigned long long> progress::started_early_{0};

unsigned long long operations_started_early() noexcept {
  return progress::started_early_.load(std::memory_order_relaxed);
}

// Back-to-back collectives (docs/comm.md): the first batches of lane l that
// have not got there yet, in order, start now when each is a small
// all_reduce or all_gather (it reads `in` when posted and writes `out` when
// finished, in its stream's order: finish_small) chained to the collective
// before it (the same communicator, nothing enqueued between on the stream),
// it is its communicator's next collective (collectives start in enqueue
// order), and its `in` is nothing that one still in flight before it writes.
// Neither deadlocks nor completes what would not otherwise: every rank's
// part of such a collective needs every rank's part of it, so every rank has
// started the collective before it (docs/comm.md says why only these).
bool progress::start_early(lane& l) {
  if (mutation::is(mutation::kind::one_at_a_time)) return false;  // it finishes what it starts
  const bool unchecked = mutation::is(mutation::kind::chain_unchecked);
  bool started = false;
  std::size_t seen = 0;
  for (auto& [b, k] : l.waiting) {
    if (++seen > early_window) break;
    if (b->early) continue;
    auto& c = *b->comm;
    if (!(b->chained || unchecked) || c.kind != engine::mpi || !b->failure.empty() ||
        b->collective != c.next_collective || !c.waiting.empty() || !through_scratch(c, *b))
      break;
    const message& m = b->messages.front();
    const std::size_t bytes = bytes_of(m);
    bool reads_written = overlap(m.in, bytes, l.written, l.written_bytes);
    for (auto& [before, j] : l.waiting) {
      if (before == b) break;
      reads_written = reads_written || overlap(m.in, bytes, before->messages.front().out,
                                               written_by(c, before->messages.front()));
    }
    if (reads_written && !unchecked) break;
    ++c.next_collective;
    b->early = true;
    start(b);
    if (!mutation::is(mutation::kind::early_deadline))
      b->deadline = clock::time_point::max();  // it counts once its stream gets there
    started_early_.fetch_add(1, std::memory_order_relaxed);
    started = true;
  }
  return started;
}

void progress::early_verdict(batch& b) {
  if (!b.gated || !b.failure.empty()) return;
  for (auto& m : b.messages) {
    int code = MPI_SUCCESS;
    // A failure or another size is left for poll_nccl, once started.
    if (!sizes_known(m, code) || (m.kind == op_kind::recv && m.peer_bytes != m.own_bytes)) return;
  }
  b.verdict_given = true;
  b.lease.flag->store(b.lease.value);
}

void progress::order(batch* b) {
  if (b->collective == 0 || mutation::is(mutation::kind::collectives_unordered)) {
    start(b);
    return;
  }
  // Collectives start in the order they were enqueued on this rank, whichever
  // stream reaches its own first (MPI matches them by order).
  auto& c = *b->comm;
  if (b->collective == c.next_collective && c.waiting.empty()) {
    // Its turn, nothing parked behind it (the usual case): no map node, no
    // allocation on the engine thread per collective.
    ++c.next_collective;
    start(b);
    return;
  }
  c.waiting.emplace(b->collective, b);
  for (auto it = c.waiting.find(c.next_collective); it != c.waiting.end();
       it = c.waiting.find(c.next_collective)) {
    batch* next = it->second;
    c.waiting.erase(it);
    ++c.next_collective;
    start(next);
  }
  if (c.waiting.empty())
    parked_.erase(&c);
  else
    parked_.insert(&c);
}

void progress::start(batch* b) {
  if (!b->failure.empty()) {  // not on every stream (comm.cpp enqueue): never started
    finish(b);
    return;
  }
  auto& c = *b->comm;
  b->deadline = deadline();
  const bool nccl = c.kind == engine::nccl;
  if (!b->sizes_posted)
    for (auto& m : b->messages) {
      const int code = nccl           ? post_sizes(c, m)
                       : m.piece != 0 ? start_pieces(c, *b, m)
                                      : post(c, *b, m);
      if (code != MPI_SUCCESS) {
        b->failure = m.describe() + " could not start: " + mpi_error_string(code);
        m.done = true;
      }
    }
  if (mutation::is(mutation::kind::one_at_a_time)) {
    while (!poll(*b) && clock::now() < b->deadline) {
    }
    if (!poll(*b)) fail_expired(*b);
    finish(b);
    return;
  }
  active_.push_back(b);
}

void progress::fail_nccl(batch& b, const std::string& why) noexcept {
  report(b);  // before the abort lets its streams go on
  nccl_abort(*b.comm, "rank " + std::to_string(b.comm->rank) + ": " + why);
}

bool progress::poll_nccl(batch& b) {
  auto& c = *b.comm;
  bool all_done = true;
  for (auto& m : b.messages) {
    if (m.done) continue;
    int code = MPI_SUCCESS;
    const bool known = sizes_known(m, code);
    if (code != MPI_SUCCESS) {
      fail_message(b, m, ": the size exchange failed: " + mpi_error_string(code));
      fail_nccl(b, b.failure);
      continue;
    }
    if (!known) {
      all_done = false;
      continue;
    }
    m.done = true;
    if (m.kind == op_kind::recv && m.peer_bytes != m.own_bytes && b.failure.empty()) {
      b.failure = m.describe() + ": the matching send had " + std::to_string(m.peer_bytes) +
                  " bytes (a receive must be exactly as large as its send; the NCCL "
                  "communicator is aborted)";
      // NCCL would wait for bytes that never come (or room that is never
      // given): its kernels end only when the communicator is aborted.
      fail_nccl(b, b.failure);
    }
  }
  // Every size is known and matched: the verdict is given now, before
  // NCCL's kernels are done, so that a gated stream does not wait for the
  // engine to see them done as well (a host round trip per receive). The
  // lease is past NCCL's calls and the done events on the streams: no
  // stream goes on before its kernels end. A failure found later (NCCL's
  // own, a timeout) is reported on the streams before the abort lets the
  // kernels end (fail_nccl), as for an ungated batch.
  if (all_done && b.gated && !b.verdict_given && b.failure.empty()) {
    b.verdict_given = true;
    b.lease.flag->store(b.lease.value);
  }
  for (sluice::event* d : b.done_events)
    if (!event_ready(d)) all_done = false;
  if (all_done && c.nccl.empty() && b.failure.empty())
    // Aborted (by another operation's failure) while this one was in flight:
    // its kernels ended, maybe without the data.
    b.failure = "the NCCL communicator was aborted meanwhile (" + c.nccl_failure + ")";
  if (!all_done) {
    const std::string why = nccl_async_error(c);
    if (!why.empty()) {
      if (b.failure.empty()) b.failure = "NCCL failed: " + why;
      fail_nccl(b, why);
    }
  }
  return all_done;
}

void progress::poll_pieces(batch& b, message& m) {
  auto& c = *b.comm;
  auto fail = [&](const std::string& why) { fail_message(b, m, ": " + why); };
  if (m.header_request != MPI_REQUEST_NULL) {
    int arrived = 0;
    MPI_Status status;
    const int code = MPI_Test(&m.header_request, &arrived, &status);
    if (code != MPI_SUCCESS) return fail("its header failed: " + mpi_error_string(code));
    if (arrived && !m.header_checked) {
      int words = 0;
      MPI_Get_count(&status, MPI_UINT64_T, &words);
      const bool unchecked = mutation::is(mutation::kind::piece_header_unchecked);
      if (!unchecked && (words != 2 || m.header[0] != m.count || m.header[1] != m.piece))
        return refuse_header(b, m, words);
      m.header_checked = true;
    }
  }
  if (!m.header_checked && m.header_request != MPI_REQUEST_NULL && look_across_ &&
      m.kind == op_kind::recv) {
    // Its send may have gone whole (a size below twice the piece size), on
    // the communicator of whole messages with the same match number.
    int found = 0;
    MPI_Message matched = MPI_MESSAGE_NULL;
    MPI_Status status;
    const int code = MPI_Improbe(m.peer, m.tag, c.mpi, &found, &matched, &status);
    if (code != MPI_SUCCESS) return fail("probing for its send failed: " + mpi_error_string(code));
    if (found) {
      MPI_Cancel(&m.header_request);  // not matched: it completes, cancelled
      cancelled_.push_back(m.header_request);
      m.header_request = MPI_REQUEST_NULL;
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      return refuse_matched(b, m, matched, bytes);
    }
  }
  if (!m.header_checked) return;
  const std::size_t bytes = bytes_of(m);
  const std::size_t n = pieces_of(m, bytes);
  const std::size_t streams = b.streams.size();
  // A send's, receive's or broadcast's pieces go as soon as they can (a
  // send's once the stream copied it in), several at once, at most
  // c.pieces_in_flight (0: no limit); an all_reduce's one after another (its
  // ring reuses the collective's tags). They complete in order.
  const bool p2p = m.kind == op_kind::send || m.kind == op_kind::recv;
  const bool messages = broadcast_in_messages(c, m);  // a broadcast's pieces: several at once too
  for (bool moved = true; moved && m.completed < n;) {
    moved = false;
    const std::size_t at_once = p2p || messages ? c.pieces_in_flight : 1;
    while (m.posted < n && (at_once == 0 || m.posted - m.completed < at_once)) {
      if (m.kind != op_kind::recv && m.posted > 0) {
        const flag_lease& a = b.piece_arrivals[(m.posted - 1) * streams + m.stream];
        if (a.flag->load() < a.value) break;
      }
      const int code = post_piece(c, b, m);
      if (code != MPI_SUCCESS)
        return fail("piece " + std::to_string(m.posted + 1) + " of " + std::to_string(n) +
                    " could not start: " + mpi_error_string(code));
      moved = true;
    }
    while (m.completed < m.posted) {
      int completed = 0;
      MPI_Status status;
      int code = MPI_SUCCESS;
      if (p2p) {
        code = MPI_Test(&m.piece_requests[m.completed], &completed, &status);
      } else if (messages) {
        const std::size_t per = broadcast_requests(c, m);
        code = MPI_Testall(static_cast<int>(per), &m.piece_requests[m.completed * per], &completed,
                           MPI_STATUSES_IGNORE);
      } else if (m.ring != nullptr) {
        bool finished = false;
        code = m.ring->test(finished);
        completed = finished ? 1 : 0;
      } else {
        code = MPI_Test(&m.request, &completed, &status);
      }
      if (code != MPI_SUCCESS)
        return fail(
            "piece " + std::to_string(m.completed + 1) + " of " + std::to_string(n) +
            " failed: " + mpi_error_string(code == MPI_ERR_IN_STATUS ? status.MPI_ERROR : code));
      if (!completed) break;
      if (m.kind == op_kind::recv) {
        int received = 0;
        MPI_Get_count(&status, MPI_BYTE, &received);
        if (static_cast<std::size_t>(received) != piece_range(m, bytes, m.completed).length)
          return fail("piece " + std::to_string(m.completed + 1) + " had " +
                      std::to_string(received) + " bytes");
      }
      m.ring.reset();
      ++m.completed;
      moved = true;
    }
  }
  if (m.completed < n) return;
  if (m.header_request == MPI_REQUEST_NULL) m.done = true;  // a send's header went too
}

// The pieces of a send whose receiver refused it (another size): each taken
// into scratch once the one before it arrived; false once all were.
bool progress::drain_pieces(drain& d) noexcept {
  for (;;) {
    if (d.request != MPI_REQUEST_NULL) {
      int arrived = 0;
      if (MPI_Test(&d.request, &arrived, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
      if (!arrived) return true;
      ++d.taken;
    }
    if (d.taken == d.pieces) return false;
    try {
      if (d.scratch.size() < d.piece) d.scratch.resize(d.piece);
    } catch (...) {
      return false;  // no memory: the sender's other pieces wait for its timeout
    }
    const int count = static_cast<int>(d.taken + 1 == d.pieces ? d.last : d.piece);
    if (MPI_Irecv(d.scratch.data(), count, MPI_BYTE, d.peer, d.tag, d.comm, &d.request) !=
        MPI_SUCCESS)
      return false;
  }
}

// A whole receive: its message, once there, is received if it is exactly as
// large (MPI_Imrecv into the receive's buffer), else taken into scratch and
// dropped, and the receive fails: MPI never gets a buffer smaller than its
// message (Open MPI 4.1's shared-memory single copy wrote past a truncated
// receive's buffer: docs/results/runs/2026-11-28-openmpi-receive-overrun.md).
// False while it is not there or when it failed (then m.done); `code` an MPI
// error code.
bool progress::receive_probed(batch& b, message& m, int& code) {
  auto& c = *b.comm;
  if (m.straddled) {  // its send went in pieces: the header tells its size
    int arrived = 0;
    MPI_Status status;
    code = MPI_Test(&m.header_request, &arrived, &status);
    if (code != MPI_SUCCESS) {
      fail_message(b, m, " failed: " + mpi_error_string(code));
    } else if (arrived) {
      int words = 0;
      MPI_Get_count(&status, MPI_UINT64_T, &words);
      refuse_header(b, m, words);
    }
    return false;
  }
  int found = 0;
  MPI_Message matched = MPI_MESSAGE_NULL;
  MPI_Status status;
  code = MPI_Improbe(m.peer, m.tag, c.mpi, &found, &matched, &status);
  if (code == MPI_SUCCESS && !found && look_across_ && c.piece_bytes != 0) {
    // Its send may have gone in pieces (twice the piece size or more; none
    // does when the piece size is 0): then its header comes first on the
    // pieces communicator, with the same match number.
    code = MPI_Improbe(m.peer, m.tag, c.pieces, &found, &matched, &status);
    if (code == MPI_SUCCESS && found) {  // (m.probing stays: poll() comes back here)
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      if (bytes != static_cast<int>(sizeof m.header)) {  // not a header: refused whole
        refuse_matched(b, m, matched, bytes);
        return false;
      }
      m.straddled = true;
      code = MPI_Imrecv(m.header, 2, MPI_UINT64_T, &matched, &m.header_request);
      if (code != MPI_SUCCESS) fail_message(b, m, " failed: " + mpi_error_string(code));
      return false;
    }
  }
  if (code != MPI_SUCCESS || !found) {
    if (code != MPI_SUCCESS) fail_message(b, m, " failed: " + mpi_error_string(code));
    return false;
  }
  m.probing = false;
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  if (static_cast<std::size_t>(bytes) == m.count) {
    code = MPI_Imrecv(m.out, bytes, MPI_BYTE, &matched, &m.request);
    return true;
  }
  refuse_matched(b, m, matched, bytes);
  return false;
}

void progress::refuse_matched(batch& b, message& m, MPI_Message& matched, int bytes) {
  fail_message(b, m, sent_other_size(bytes));
  try {
    drain d;
    d.pieces = 1;
    d.scratch.resize(static_cast<std::size_t>(std::max(bytes, 1)));
    if (MPI_Imrecv(d.scratch.data(), bytes, MPI_BYTE, &matched, &d.request) == MPI_SUCCESS)
      drains_.push_back(std::move(d));
  } catch (...) {
    // No memory: the message stays matched and unreceived; its sender's
    // request waits for its own timeout.
  }
}

// The sender's pieces are taken, one after another, into a piece of scratch
// and dropped (drain_pieces), so that they neither hold the sender nor meet
// a later receive.
void progress::refuse_header(batch& b, message& m, int words) {
  if (words == 2 && m.header[1] != 0 && m.header[1] <= (1U << 30) && m.header[0] <= INT_MAX) {
    drain d;
    d.pieces = (m.header[0] + m.header[1] - 1) / m.header[1];
    d.piece = static_cast<std::size_t>(m.header[1]);
    d.last = static_cast<std::size_t>(m.header[0] - (d.pieces - 1) * m.header[1]);
    d.peer = m.peer;
    d.tag = m.tag;
    d.comm = b.comm->pieces;
    try {
      drains_.push_back(std::move(d));
    } catch (...) {
      // No memory: the sender's pieces wait for its timeout.
    }
  }
  fail_message(b, m,
               words == 2 ? sent_other_size(m.header[0])
                          : ": the matching send's header was not one (" + std::to_string(words) +
                                " words)");
}

// The pieces every message of b completed: their done flags (the stream then
// copies them out of staging while MPI carries the next).
void release_pieces(batch& b) noexcept {
  while (b.pieces_released + 1 < b.pieces) {
    const std::size_t j = b.pieces_released;
    for (const message& m : b.messages)
      if (!m.done && (m.piece == 0 || m.completed <= j)) return;
    b.piece_done[j].flag->store(b.piece_done[j].value);
    ++b.pieces_released;
  }
}

bool progress::poll(batch& b) {
  if (b.comm->kind == engine::nccl) return poll_nccl(b);
  bool all_done = true;
  for (auto& m : b.messages) {
    if (m.done) continue;
    if (m.piece != 0) {
      poll_pieces(b, m);
      if (!m.done) all_done = false;
      continue;
    }
    int completed = 0;
    MPI_Status status;
    int code = MPI_SUCCESS;
    if (m.ring != nullptr) {
      bool finished = false;
      code = m.ring->test(finished);
      completed = finished ? 1 : 0;
      status.MPI_ERROR = code;
    } else if (m.small) {
      code = MPI_Testall(static_cast<int>(b.requests.size()), b.requests.data(), &completed,
                         MPI_STATUSES_IGNORE);
      status.MPI_ERROR = code;  // (finish() writes the result: finish_small)
    } else {
      if (m.probing && !receive_probed(b, m, code)) {
        all_done = all_done && m.done;
        continue;
      }
      if (code == MPI_SUCCESS) code = MPI_Test(&m.request, &completed, &status);
    }
    if (code != MPI_SUCCESS && b.failure.empty()) {
      b.failure = m.describe() + " failed: " +
                  mpi_error_string(code == MPI_ERR_IN_STATUS ? status.MPI_ERROR : code);
      completed = 1;
    }
    if (!completed) {
      all_done = false;
      continue;
    }
    m.done = true;
    if (m.kind == op_kind::recv && b.failure.empty()) {
      int received = 0;
      MPI_Get_count(&status, MPI_BYTE, &received);
      if (static_cast<std::size_t>(received) != m.count)
        b.failure = m.describe() + sent_other_size(received);
    }
  }
  if (b.pieces > 1) release_pieces(b);
  return all_done;
}

void progress::cancel(MPI_Request& r) {
  if (r == MPI_REQUEST_NULL) return;
  MPI_Cancel(&r);
  cancelled_.push_back(r);  // completes later, cancelled or not; never waited for
  r = MPI_REQUEST_NULL;
}

void progress::fail_expired(batch& b) {
  std::string waiting;
  const bool nccl = b.comm->kind == engine::nccl;
  for (auto& m : b.messages) {
    if (m.done && !nccl) continue;  // nccl: every message waits for NCCL's kernel
    if (!waiting.empty()) waiting += ", ";
    waiting += m.describe();
    if (m.ring != nullptr) m.ring->cancel(cancelled_);
    if (m.small)
      for (MPI_Request& r : b.requests) cancel(r);
    for (MPI_Request& r : m.piece_requests) cancel(r);
    for (MPI_Request* r : {&m.request, &m.size_request, &m.header_request}) cancel(*r);
    m.done = true;
  }
  if (b.failure.empty())
    b.failure =
        "no answer within SLUICE_COMM_TIMEOUT_S=" + std::to_string(timeout_s_) + " s: " + waiting;
  // The NCCL kernels that wait for the peer end only with the communicator.
  if (nccl) fail_nccl(b, b.failure);
}

void progress::report(batch& b) noexcept {
  if (b.failure.empty() || b.reported) return;
  b.reported = true;
  if (b.failed) b.failed->store(true);
  std::string message;
  try {
    message = "sluice::comm: rank " + std::to_string(b.comm->rank) + ": " + b.describe() + ": " +
              b.failure;
  } catch (...) {
    message = "sluice::comm: an operation failed (no memory to say more)";
  }
  for (stream_ref s : b.streams) {
    try {
      sluice::detail::report_stream_failure(s, errc::comm_failure, message);
    } catch (...) {
      // The stream is gone: nobody can ask. Nothing is lost: say it here.
      std::fprintf(stderr, "sluice: %s (its stream was destroyed)\n", message.c_str());
    }
  }
}

void progress::finish(batch* b) noexcept {
  if (b->failure.empty())
    for (auto& m : b->messages)
      if (m.small && m.done) finish_small(*b->comm, *b, m);
  report(*b);
  for (const flag_lease& d : b->piece_done) d.flag->store(d.value);  // every piece's copy out
  b->lease.flag->store(b->lease.value);                              // the streams go on
  recycle(b);  // with its flags (one its stream has not stored yet is retired there)
}

namespace {
thread_local bool on_engine_thread = false;
}

bool progress::on_engine_thread() noexcept { return detail::on_engine_thread; }

void progress::run() {
  detail::on_engine_thread = true;
  now_ = clock::now();
  clock::time_point idle_since{};
  unsigned idle_passes = 0;
  unsigned deadline_passes = 0;
  bool slow = false;  // no progress for 200 us: poll every 50 us
  for (;;) {
    // Nothing to do: sleep, but only once 200 us passed without progress
    // (`slow`): a thread that enqueues one operation at a time, each after
    // the engine finished the one before, would otherwise wake it (a futex
    // wake and a context switch) per operation.
    if (slow && active_.empty() && cancelled_.empty() && drains_.empty() && waiting_batches_ == 0 &&
        inbox_.load() == nullptr) {
      std::unique_lock<std::mutex> lock(m_);
      sleeping_.store(true);
      cv_.wait(lock, [&] { return inbox_.load() != nullptr || stopping_.load(); });
      sleeping_.store(false);
      now_ = clock::now();
    }
    const bool stop = stopping_.load();
    batch* incoming = take_inbox(stop);
    bool moved = false;
    {
      auto mpi_lock = mpi_guard();
      while (incoming != nullptr) {
        batch* b = std::exchange(incoming, incoming->next);
        moved = true;
        if (mutation::is(mutation::kind::post_at_enqueue)) {
          order(b);  // the mutation: started before its streams get there
          continue;
        }
        take(b);
      }
      if (advance_lanes(stop)) moved = true;
      // Deadlines are seconds: the clock is read every 32nd pass (and after
      // a sleep); a batch's deadline counts from that reading.
      const bool check_deadlines = stop || slow || (++deadline_passes & 31U) == 0;
      if (check_deadlines) now_ = clock::now();
      look_across_ = check_deadlines;
      bool finished = false;
      for (std::size_t i = 0; i < active_.size();) {
        batch* b = active_[i];
        bool done = poll(*b);
        if (!done && check_deadlines && (stop || now_ >= b->deadline)) {
          if (stop && b->failure.empty())
            b->failure = "MPI_Finalize was called while it was pending";
          fail_expired(*b);
          done = true;
        }
        if (done) {
          active_[i] = active_.back();
          active_.pop_back();
          if (b->early && !b->here) {  // finished once its stream gets there
            b->completed = true;
            moved = true;
            continue;
          }
          finish(b);
          moved = true;
          finished = true;
        } else {
          ++i;
        }
      }
      // A finished operation may have let its stream reach the next one (the
      // host backend runs a stream's flag ops on the thread that stores the
      // flag): start it in this pass.
      if (finished && !stop) advance_lanes(false);
      for (std::size_t i = 0; i < drains_.size();) {
        if (!stop && drain_pieces(drains_[i])) {
          ++i;
        } else {
          if (drains_[i].request != MPI_REQUEST_NULL) cancelled_.push_back(drains_[i].request);
          drains_.erase(drains_.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      for (std::size_t i = 0; i < cancelled_.size();) {
        int completed = 0;
        MPI_Test(&cancelled_[i], &completed, MPI_STATUS_IGNORE);
        if (completed || stop) {
          cancelled_[i] = cancelled_.back();
          cancelled_.pop_back();
        } else {
          ++i;
        }
      }
    }
    if (stop) {
      // Collectives that never got their turn: their streams go on, failed.
      // (A communicator with waiting batches is alive: they hold it.)
      std::vector<batch*> never_started;
      for (communicator_state* c : parked_)
        for (auto& [place, b] : c->waiting) never_started.push_back(b);
      parked_.clear();
      for (batch* b : never_started) {
        b->comm->waiting.erase(b->collective);
        b->failure = "MPI_Finalize was called before an earlier collective of this rank started";
        finish(b);
      }
      return;
    }
    // Spin while messages move, then poll gently: latency when busy, little
    // CPU when a peer is slow (docs/comm.md states the bound). After progress
    // look again at once: a finished operation may have let its stream reach
    // the next one (the host backend runs flag ops on the thread that stores
    // the flag).
    if (moved) {
      idle_passes = 0;
      slow = false;
      continue;
    }
    if (slow) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    // Spin as a blocking MPI call would, reading the clock and giving the CPU
    // away every 64 passes (a 2-core machine: the thread that makes the next
    // move may need it). MPI moves a message only while it is tested: with
    // requests in flight the engine keeps testing (a large message takes
    // milliseconds to seconds without completing) and slows down only after
    // 1 s without a completion (a late peer); with none, 200 us after the last
    // progress (streams still on their way to an operation).
    if ((++idle_passes & 63U) != 0) continue;
    const auto now = clock::now();
    const auto patience =
        active_.empty() ? std::chrono::microseconds(200) : std::chrono::microseconds(1000000);
    if (idle_passes == 64)
      idle_since = now;
    else if (now - idle_since >= patience)
      slow = true;
    std::this_thread::yield();
  }
}

communicator_state::~communicator_state() {
  if (kind == engine::nccl) nccl_destroy(*this);
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (mpi == MPI_COMM_NULL || finalized) return;
  auto free_both = [this] {
    MPI_Comm_free(&mpi);
    if (ring != MPI_COMM_NULL) MPI_Comm_free(&ring);
    if (pieces != MPI_COMM_NULL) MPI_Comm_free(&pieces);
  };
  if (progress::on_engine_thread()) {  // it holds the MPI guard
    free_both();
    return;
  }
  auto lock = progress::mpi_guard();
  free_both();
}

}  // namespace sluice::comm::detail
