// Pooled batches and their flags: an operation takes a batch from the pool
// (new_batch) and the engine gives it back when done (recycle), with the
// capacity of its vectors and the flags it owns.
#include "comm/impl/batch.hpp"
#include "comm/impl/event_pool.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace sluice::comm::detail {

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

}  // namespace sluice::comm::detail
