// sluice::comm's inside: what the API layer (comm.cpp) hands to the engine
// that carries it (mpi_engine.cpp; docs/comm.md "How it works"). Internal.
#pragma once

#include <sluice/comm.hpp>
#include <sluice/event.hpp>
#include <sluice/flag.hpp>
#include <sluice/stream.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sluice::comm::detail {

enum class op_kind { send, recv, all_reduce, broadcast, all_gather };
const char* to_string(op_kind k) noexcept;

struct communicator_state;
struct message;

std::size_t element_size(datatype t) noexcept;
//! out[i] = a[i] op b[i] for n elements of t (ring.cpp; out may be a).
void reduce(void* out, const void* a, const void* b, std::size_t n, datatype t,
            reduce_op op) noexcept;

//! A large all_reduce as a ring of non-blocking sends and receives (ring.cpp):
//! 2(size - 1) steps, each a send to the next rank and a receive from the
//! previous one, on the communicator's second duplicate with tags
//! tag_base .. tag_base + steps() - 1. Every rank gets the same result: each
//! chunk is reduced once, in ring order, then passed on.
class ring_all_reduce {
 public:
  //! Copies in to out (when not in place); MPI is called from start() on,
  //! on c.ring.
  ring_all_reduce(const message& m, const communicator_state& c, int tag_base, MPI_Datatype type);
  int start();           // an MPI error code
  int test(bool& done);  // an MPI error code; done: the result is in out
  void cancel(std::vector<MPI_Request>& cancelled);  // a timed-out one
  static int steps_for(int size) noexcept { return 2 * (size - 1); }
  int steps() const noexcept { return steps_for(size_); }

 private:
  std::size_t chunk_begin(int i) const noexcept;
  std::size_t chunk_count(int i) const noexcept;
  int post_step();
  const char* in_;
  char* out_;
  std::size_t count_, element_;
  datatype type_;
  reduce_op op_;
  int rank_, size_;
  MPI_Comm comm_;
  int tag_base_;
  MPI_Datatype mpi_type_;
  std::vector<char> scratch_;  // the chunk received in a reduce-scatter step
  int step_ = 0;
  int recv_chunk_ = 0;
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

//! One message or collective, as enqueued.
struct message {
  op_kind kind = op_kind::send;
  const void* in = nullptr;         // send, all_reduce, all_gather
  void* out = nullptr;              // recv, all_reduce, broadcast, all_gather
  std::size_t count = 0;            // elements (bytes for send and recv)
  datatype type = datatype::int32;  // unused by send and recv (bytes)
  reduce_op op = reduce_op::sum;
  int peer = -1;               // send: to; recv: from; broadcast: root
  int tag = 0;                 // send and recv: the match sequence number (COMM-4)
  std::uint64_t sequence = 0;  // send and recv: the match number before it wraps (nccl: its lane)
  std::size_t stream = 0;      // its stream: batch::streams[stream]
  // in / out is memory only the device can address (comm.cpp's checks ask
  // the backend once; stage() copies such buffers through pinned memory).
  bool in_device = false;
  bool out_device = false;
  // Device memory staged through pinned memory (an MPI that cannot read
  // device memory): copied in before the operation, out after it, on the
  // message's stream. slot < 0: nothing of its own to give back.
  struct stage {
    void* device = nullptr;
    void* pinned = nullptr;
    std::size_t bytes = 0;
    int slot = -1;
  };
  stage stage_in, stage_out;
  // The engine's (mpi: the request and whether it completed; nccl: the size
  // exchange of a send or receive, below).
  MPI_Request request = MPI_REQUEST_NULL;
  std::shared_ptr<ring_all_reduce> ring;  // a large all_reduce: the ring instead of request
  // A small collective as point-to-point messages (mpi_engine.cpp): its
  // requests are the batch's `requests` (the batch holds nothing else).
  bool small = false;
  // mpi: a whole receive is posted only once its message is there
  // (MPI_Improbe) and as large as the receive: an Open MPI with CMA single
  // copy wrote past a receive buffer smaller than a rendezvous send
  // (docs/results/runs/2026-11-28-openmpi-receive-overrun.md).
  bool probing = false;
  bool done = false;
  // nccl: NCCL cannot tell a receive of another size than its send, so a
  // send's `request` tells its size (own_bytes) to the receiver, whose
  // `size_request` learns it (peer_bytes).
  MPI_Request size_request = MPI_REQUEST_NULL;
  std::uint64_t own_bytes = 0;
  std::uint64_t peer_bytes = 0;
  bool size_told = false;     // nccl: request completed (or none)
  bool size_learned = false;  // nccl: size_request completed (or none)
  // mpi: a message in pieces (docs/comm.md "Pieces"): `piece` bytes each
  // (0: whole), carried one after another, so that the stream copies one
  // piece in or out of staging while MPI carries another. A send or receive
  // in pieces goes on the communicator's `pieces` duplicate, after a header
  // (its bytes and piece size) that the receiver checks before it posts a
  // piece. The engine's: pieces posted and completed, the header.
  std::size_t piece = 0;
  std::size_t posted = 0;
  std::size_t completed = 0;
  std::uint64_t header[2] = {0, 0};
  MPI_Request header_request = MPI_REQUEST_NULL;
  std::vector<MPI_Request> piece_requests;  // a send's or receive's, one per piece
  bool header_checked = false;
  // mpi: a whole receive whose send went in pieces (another size: its
  // header, found on the pieces communicator, is being received into
  // `header` by header_request; docs/comm.md "Sizes").
  bool straddled = false;
  std::string describe() const;
};

//! How many pieces m goes in (1: whole), and piece j's byte range within
//! `bytes` (the staged buffer's bytes, or bytes_of(m)).
std::size_t pieces_of(const message& m, std::size_t bytes) noexcept;
struct byte_range {
  std::size_t offset = 0;
  std::size_t length = 0;
};
byte_range piece_range(const message& m, std::size_t bytes, std::size_t j) noexcept;
std::size_t bytes_of(const message& m) noexcept;
//! Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte (empty ranges never do).
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) noexcept;

//! Pinned staging buffers (staging.cpp): reused at once by the stream that
//! last used one, by another once that stream has passed the event recorded
//! behind that use.
struct staging_lease {
  void* data = nullptr;
  int slot = -1;
};
//! A slot for an operation on stream s. Throws errc::out_of_memory.
staging_lease lease_staging(std::size_t bytes, stream_ref s);
//! Records the slot's guard on s (behind its last use there) and frees it.
void release_staging_after(int slot, stream_ref s);
//! Frees a slot never used on a stream (an operation that was not enqueued).
void release_staging_unused(int slot) noexcept;
//! How many slots the process has made so far (tests/comm: COMM-1's reuse test).
std::size_t staging_slots() noexcept;

//! A flag lent to one use of a batch: streams wait for it to reach `value`.
struct flag_lease {
  sluice::flag* flag = nullptr;
  std::uint32_t value = 0;
};
//! nccl: events that mark where a stream got (its arrival, its NCCL calls
//! done), instead of stream memory writes of flags: two stream memory
//! operations around each NCCL kernel cost about 8 us of device time per
//! operation on 2x H100, an event record next to nothing. Per device, reused
//! once ready (an event never recorded is ready).
sluice::event* lease_event(sluice::device d);
//! Back to the pool if ready, else left alone (never reused).
void return_event(sluice::event* e) noexcept;

//! What the streams of one operation wait for: one message or collective, or
//! a group's sends and receives. Started by the engine once every stream it
//! waits on has reached it (and, for a group, once the group ended).
struct batch {
  std::shared_ptr<communicator_state> comm;
  std::vector<message> messages;
  std::vector<stream_ref> streams;  // each waits once, for `lease`
  flag_lease lease;
  // One per stream: the stream stores it when it gets there (write_value,
  // behind the work before it); the engine starts the batch once all are.
  std::vector<flag_lease> arrivals;
  // mpi, a batch with messages in pieces: its `pieces` (the most of any of
  // its messages); per stream, the arrival of each piece after the first
  // (piece_arrivals[(j - 1) * streams + k], stored once the stream copied
  // piece j in), and the done flag of each piece but the last (stored when
  // every message completed piece j; the last piece's is `lease`).
  std::size_t pieces = 1;
  std::vector<flag_lease> piece_arrivals;
  std::vector<flag_lease> piece_done;
  std::size_t pieces_released = 0;  // the engine's: piece_done flags stored
  // nccl: one event per stream instead of `arrivals` (recorded before the
  // batch's NCCL calls), and one recorded behind them (lease_event).
  std::vector<sluice::event*> arrival_events;
  std::vector<sluice::event*> done_events;
  // nccl: set by the engine before it releases the streams when the batch
  // failed; the host tasks that copy results out of staging then copy nothing.
  std::shared_ptr<std::atomic<bool>> failed;
  // recycle()'s: `failed` of the last use, when no host task still held it.
  std::shared_ptr<std::atomic<bool>> failed_spare;
  // nccl: whether the streams wait for the engine's verdict after the NCCL
  // calls (a batch with a receive: its size is checked against the send's
  // before the stream goes on); false: they go on when NCCL is done, and a
  // failure is reported on them as it is found, like a device fault.
  bool gated = true;
  bool verdict_given = false;  // the engine's (nccl): the lease was stored once the sizes matched
  // The engine's (nccl): the size exchange was posted when the engine took
  // the batch, before its streams got there, so that a receive's verdict is
  // usually given before its stream reaches the wait for it.
  bool sizes_posted = false;
  bool reported = false;  // the engine's: the failure was reported on the streams
  // Back-to-back collectives (docs/comm.md): the operations its one stream
  // had before and after comm.cpp enqueued it, where the backend counts them
  // (sluice::detail::enqueued_count) and nobody else enqueued meanwhile;
  // unknown_count otherwise.
  std::uint64_t enqueued_from = ~std::uint64_t{0};
  std::uint64_t enqueued_to = ~std::uint64_t{0};
  // The engine's: nothing was enqueued on its stream between the collective
  // of the same communicator before it and it (`chained`); it was started
  // before its stream got there (`early`), its stream got there (`here`), its
  // messages completed before that (`completed`: finished once `here`).
  bool chained = false;
  bool early = false;
  bool here = false;
  bool completed = false;
  std::size_t arrived = 0;       // the engine's: streams seen there
  std::uint64_t collective = 0;  // its place among the communicator's collectives; 0: none
  bool grouped = false;          // a group's (its trace span is named "group")
  // The engine's.
  std::chrono::steady_clock::time_point deadline{};
  std::string failure;    // empty: none
  batch* next = nullptr;  // the engine's inbox; the pool's free list
  std::string describe() const;

  //! The i-th flag of this use (lease: 0, arrivals: 1 ..):
  //! the batch's own flag i with a larger value than its last use (flags are
  //! never reused with a smaller value, so a stream that has not reached its
  //! wait of an earlier use yet still passes it). Throws errc::out_of_memory.
  flag_lease next_flag(std::size_t i);
  //! Flags this batch owns (kept across uses; never freed: a stream may still
  //! wait on one), each with the last value leased.
  std::vector<flag_lease> own_flags;
  // A small collective's requests and, for all_reduce, every rank's input
  // (kept across uses with the batch: no allocation per operation).
  std::vector<MPI_Request> requests;
  std::vector<char> scratch;
};

//! Batches are pooled (their vectors' capacity and their flags kept): an
//! operation allocates nothing once as many as it needs were in flight
//! before. Empty, reset; throws errc::out_of_memory.
batch* new_batch();
//! Resets b (its communicator let go, its flags that a stream may still store
//! retired) and gives it back to the pool. Any thread; never blocks.
void recycle(batch* b) noexcept;
struct batch_deleter {
  void operator()(batch* b) const noexcept { recycle(b); }
};
using batch_ptr = std::unique_ptr<batch, batch_deleter>;

//! One process-wide engine thread carries every batch (docs/comm.md).
class progress {
 public:
  //! Starts the thread on first use. Throws errc::comm_failure when it cannot.
  static progress& get();
  //! A batch enqueued on its streams: the engine starts it once every stream
  //! got there (its arrival flags). Never blocks, never throws.
  void submit(batch* b) noexcept;
  //! comm.cpp holds it from enqueueing a batch on its streams to submit():
  //! two batches of one stream reach the engine in that stream's order.
  static std::mutex& enqueue_order() noexcept;

  //! Every MPI call sluice makes holds this while MPI's thread level is below
  //! MPI_THREAD_MULTIPLE (docs/comm.md: thread levels); unlocked otherwise.
  static std::unique_lock<std::mutex> mpi_guard();
  //! True on the engine thread (which holds mpi_mutex() while it calls MPI).
  static bool on_engine_thread() noexcept;

 private:
  progress();
  void run();
  void start(batch* b);
  void order(batch* b);  // start, or wait for the collectives before it
  //! When an operation whose peers are awaited from now on fails
  //! (SLUICE_COMM_TIMEOUT_S after now_; never under the no_timeout mutation).
  std::chrono::steady_clock::time_point deadline() const noexcept;
  friend unsigned long long operations_started_early() noexcept;
  batch* take_inbox(bool close) noexcept;  // oldest first
  bool advance_lanes(bool stop);           // true when a stream got somewhere
  void take(batch* b);                     // an enqueued batch into its streams' lanes
  void early_verdict(batch& b);  // nccl: b's lease stored before it started, sizes matched
  bool poll(batch& b);           // true when every message completed
  bool poll_nccl(batch& b);
  void poll_pieces(batch& b, message& m);  // m.done once every piece completed or one failed
  void finish(batch* b) noexcept;
  static void report(batch& b) noexcept;  // b.failure on b's streams, once
  //! b failed under nccl: reported on its streams, then its NCCL communicator
  //! aborted (which ends the kernels that wait for a peer) saying `why`.
  static void fail_nccl(batch& b, const std::string& why) noexcept;
  void fail_expired(batch& b);
  void cancel(MPI_Request& r);  // MPI_Cancel, kept in cancelled_; r becomes MPI_REQUEST_NULL
  void shut_down() noexcept;
  static int on_finalize(MPI_Comm, int, void*, void*);

  int timeout_s_;  // SLUICE_COMM_TIMEOUT_S: seconds an operation may wait for its peers
  std::chrono::steady_clock::time_point now_{};  // the engine's last clock reading
  // Enqueued batches, newest first (a lock-free stack: an enqueuing thread
  // never waits for the engine); closed_inbox() once the engine stopped.
  std::atomic<batch*> inbox_{nullptr};
  std::atomic<bool> sleeping_{false};  // the engine waits on cv_ (under m_)
  std::atomic<bool> stopping_{false};
  std::mutex m_;
  std::condition_variable cv_;
  // The thread's own. Batches not started yet, per stream in that stream's
  // order (comm.cpp enqueues and submits under one lock): only the first of
  // each stream can have arrived, so a pass looks at one flag per stream.
  struct lane {
    stream_ref stream;
    std::deque<std::pair<batch*, std::size_t>> waiting;  // batch, its index of the stream
    // The batch taken last (take()): its communicator, whether it was a
    // collective, the stream's operations after it (what `chained` compares).
    const communicator_state* last_comm = nullptr;
    bool last_collective = false;
    std::uint64_t enqueued_to = ~std::uint64_t{0};
    // What the batch that got there last writes (it may still be in flight):
    // a collective started early must not read it.
    const void* written = nullptr;
    std::size_t written_bytes = 0;
  };
  // A small all_reduce or all_gather whose stream's operation before it is a
  // collective of its communicator, with nothing enqueued between, starts
  // while that one is in flight (docs/comm.md "Back-to-back collectives"):
  // at most this many of a stream at once.
  static constexpr std::size_t early_window = 16;
  bool start_early(lane& l);  // true when it started one
  static std::atomic<unsigned long long> started_early_;
  std::vector<lane> lanes_;
  std::size_t waiting_batches_ = 0;  // entries in lanes_
  std::vector<batch*> active_;
  std::vector<MPI_Request> cancelled_;  // timed-out requests not yet completed
  // The pieces of sends whose receivers refused them (another size), taken
  // and dropped one after another (poll_pieces).
  struct drain {
    std::uint64_t pieces = 0, taken = 0;
    std::size_t piece = 0, last = 0;  // bytes of each piece and of the last
    int peer = 0, tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<char> scratch;
  };
  std::vector<drain> drains_;
  bool drain_pieces(drain& d) noexcept;  // false once every piece was taken
  // A send of another size than m's receive, matched (`matched`, `bytes`):
  // taken into scratch and dropped (drains_), m failed saying its size.
  void refuse_matched(batch& b, message& m, MPI_Message& matched, int bytes);
  // m's sender's header says another size: its pieces are drained, m failed.
  void refuse_header(batch& b, message& m, int words);
  // Whether this pass also looks on the other communicator for the send of a
  // receive (whole receives on `pieces`, receives in pieces on `mpi`): a send
  // and a receive whose sizes straddle twice the piece size travel on
  // different communicators. Every 32nd pass (the deadline passes).
  bool look_across_ = false;
  bool receive_probed(batch& b, message& m,
                      int& code);         // a whole receive, once its message is there
  std::set<communicator_state*> parked_;  // those with collectives waiting for their turn
  std::thread thread_;
};

//! The engine that `automatic` picks in this build, and whether nccl is in it
//! (engines_*.cpp: one per build kind; no vendor #if).
engine default_engine() noexcept;
bool nccl_available() noexcept;

// The nccl engine's NCCL calls (engines_nccl_cuda.cpp; engines_mpi.cpp has
// none of them: nccl_create throws errc::not_supported there).
//! Collective over c.mpi: the ncclUniqueId broadcast, ncclCommInitRank on
//! c.device, the connections to every peer made. Throws errc::comm_failure.
void nccl_create(communicator_state& c);
//! Enqueues b's NCCL calls on its streams (one NCCL group), under c.m. Never
//! throws: a failure goes to b.failure (and no call of b was enqueued).
void nccl_enqueue(batch& b) noexcept;
//! The communicator's asynchronous NCCL error (ncclCommGetAsyncError), empty
//! when none.
std::string nccl_async_error(communicator_state& c) noexcept;
//! ncclCommAbort (the kernels of c waiting for a peer end); later operations
//! of c fail with `why`. Any thread; takes c.m.
void nccl_abort(communicator_state& c, const std::string& why) noexcept;
//! ncclCommDestroy (the communicator's destructor), on a thread of its own:
//! it may wait for device work that the caller holds.
void nccl_destroy(communicator_state& c) noexcept;
//! Waits up to `patience` for the aborts and destroys still running (the
//! engine's stop, at MPI_Finalize); false when some still run.
bool nccl_settle(std::chrono::seconds patience) noexcept;

//! A communicator, shared by the operations in flight on it.
struct communicator_state {
  MPI_Comm mpi = MPI_COMM_NULL;     // sluice's duplicate
  MPI_Comm ring = MPI_COMM_NULL;    // a second one: the ring all_reduce's messages
  MPI_Comm pieces = MPI_COMM_NULL;  // a third one: sends and receives in pieces
  // mpi: the bytes of a piece (rank 0's SLUICE_COMM_PIECE_BYTES); a send,
  // receive, all_reduce or broadcast of at least twice this goes in pieces.
  // 0: none does.
  std::size_t piece_bytes = 0;
  // mpi: how many pieces of one send, receive or broadcast are posted at
  // once (rank 0's SLUICE_COMM_PIECES_IN_FLIGHT); 0: all that can go.
  std::size_t pieces_in_flight = 0;
  int rank = 0;
  int size = 0;
  sluice::device device;
  engine kind = engine::mpi;
  int tag_limit = 32767;  // MPI_TAG_UB
  // nccl: the NCCL communicators (ncclComm_t), its lanes (engines_nccl_cuda.cpp:
  // collectives', then each direction's sends; empty once aborted), and why it
  // was aborted (both written under m, by the engine thread only).
  std::vector<void*> nccl;
  std::unique_ptr<sluice::stream> nccl_helper;  // nccl: a batch's later lanes run there
  std::uint64_t nccl_set = 0;                   // nccl: its lanes' id (kept for reuse)
  std::vector<int> nccl_members;                // nccl: MPI_COMM_WORLD ranks, in rank order
  std::string nccl_failure;
  // Enqueue order (any thread, under m).
  std::mutex m;
  std::vector<std::uint64_t> sent;      // per peer: sends enqueued so far
  std::vector<std::uint64_t> received;  // per peer: receives enqueued so far
  std::uint64_t collectives = 0;        // collectives enqueued so far
  // The engine thread's: the next collective to start, and those that wait for it.
  std::uint64_t next_collective = 1;
  std::map<std::uint64_t, batch*> waiting;

  explicit communicator_state(sluice::device d) : device(d) {}
  static const std::shared_ptr<communicator_state>& of(const communicator& c) noexcept {
    return c.state_;
  }
  ~communicator_state();
  communicator_state(const communicator_state&) = delete;
  communicator_state& operator=(const communicator_state&) = delete;
};

}  // namespace sluice::comm::detail
