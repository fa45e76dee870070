// sluice-stress-<backend>: many host threads enqueue a random program of
// copies, fills, peer copies, host functions, event records and waits over
// many streams on several devices; the final memory is checked against the
// same program run sequentially on the host.
//
//   sluice-stress-<backend> [--ops=N] [--streams=S] [--devices=D] [--threads=T]
//                           [--seed=X] [--slot=BYTES]
//   defaults: 1000000 operations, 64 streams, 4 devices, 16 threads, seed 1, 64 B
//
// The program (made from the seed, before anything runs) is a list of items.
// Each item runs on one stream: a fill of its own slot with a value, a copy of
// an earlier item's slot into its own slot (copy_peer when that slot is on
// another device), or a host function. A copy whose source item is on another
// stream makes its stream wait first: on an event recorded right after the
// source item (or, for one in eight, on the source's whole stream with
// wait(stream)). Those dependencies form a random DAG across streams and
// devices. Every slot is written once, by its item; so if any dependency were
// not honored, a copy would read a slot not yet written (zeros) and the final
// check finds it. Thread t owns the streams s with s % threads == t and
// enqueues their items in program order; before waiting on an item of another thread's
// stream it waits (host side) until that thread has recorded the event.
//
// Counted operations: every enqueued fill, copy, copy_peer, host_func, record
// and wait. Exit status: 0 when the memory and the host-function counts match
// the reference, 1 when not, 2 for bad arguments, 77 when the backend has no
// device (GPU backends on a machine without one).
//
// --churn: streams come and go while others are held (IND-1, LIFE-1).
//
//   sluice-stress-<backend> --churn [--streams=S] [--devices=D] [--threads=T]
//                           [--rounds=R] [--live=L] [--held=H] [--watchdog=SECONDS]
//                           [--seed=X] [--slot=BYTES]
//   defaults: 64 streams per device per round, 4 devices, 16 threads, 3 rounds,
//   48 live, 2 held, watchdog 30 s
//
// Each round, H streams per device are held by flags (sluice::flag and
// wait_value, a fill, a copy to pinned memory and a host function behind
// each). While they are held, T threads create S streams on every device
// (priorities low, normal, high in turn), each with an event, a flag and a
// device buffer (stream-ordered or synchronous): the stream fills the buffer,
// records the event, writes the flag, copies the buffer to pinned memory and
// runs a host function that checks the copy. The next stream of the same
// thread on the same device waits on that event or that flag (in turn),
// copies the buffer too (record_stream) and checks it in a host function.
// One stream in four is destroyed right after its work is enqueued (LIFE-1);
// the threads keep the latest L of these per device (about 3/4 L streams
// live) and retire older ones: once their events say the flag was written and
// waited on, the flag, events, buffer and stream (work still in flight) go.
// Nothing behind the held streams' flags may have run when the churn ends;
// then the host releases them, and every copy and host function is checked.
//
// A watchdog turns a hang into a failure: a call of a churn thread that has not
// returned after the watchdog's time (stream creation waiting for the held
// streams, as CUDA 13's did past about 33 streams on a device:
// tests/fake_cudart/README.md) is reported with what it was and where, the
// flags are released so that the call can return, and the run fails.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct options {
  std::uint64_t ops = 1000000;
  int streams = 64;
  int devices = 4;
  int threads = 16;
  std::uint64_t seed = 1;
  std::size_t slot = 64;
  // --churn
  bool churn = false;
  int rounds = 3;
  int live = 48;
  int held = 2;
  int watchdog_s = 30;
};

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* name) -> std::optional<std::uint64_t> {
      const std::string prefix = std::string("--") + name + "=";
      if (a.rfind(prefix, 0) != 0) return std::nullopt;
      char* end = nullptr;
      const std::string digits = a.substr(prefix.size());
      const unsigned long long v = std::strtoull(digits.c_str(), &end, 10);
      if (digits.empty() || *end != '\0' || v == 0) {
        std::fprintf(stderr, "sluice-stress: %s needs a positive integer\n", prefix.c_str());
        std::exit(2);
      }
      return v;
    };
    if (a == "--churn")
      o.churn = true;
    else if (auto r = value("rounds"))
      o.rounds = static_cast<int>(*r);
    else if (auto l = value("live"))
      o.live = static_cast<int>(*l);
    else if (auto h = value("held"))
      o.held = static_cast<int>(*h);
    else if (auto w = value("watchdog"))
      o.watchdog_s = static_cast<int>(*w);
    else if (auto v = value("ops"))
      o.ops = *v;
    else if (auto s = value("streams"))
      o.streams = static_cast<int>(*s);
    else if (auto d = value("devices"))
      o.devices = static_cast<int>(*d);
    else if (auto t = value("threads"))
      o.threads = static_cast<int>(*t);
    else if (auto x = value("seed"))
      o.seed = *x;
    else if (auto b = value("slot"))
      o.slot = static_cast<std::size_t>(*b);
    else {
      std::fprintf(stderr, "sluice-stress: unknown argument %s\n", a.c_str());
      return false;
    }
  }
  return true;
}

enum class kind : std::uint8_t { fill, copy, host };
enum class dependency : std::uint8_t { none, event, stream };

struct item {
  kind what = kind::fill;
  dependency dep = dependency::none;
  bool exported = false;    // an event is recorded right after it
  unsigned char value = 0;  // fill: the byte; also the reference for copies
  int stream = 0;
  std::uint32_t source = 0;  // copy: the item whose slot is read
  std::uint32_t slot = 0;    // fill/copy: the slot index on its stream's device
  std::uint32_t event = 0;   // exported: index into the events
  // host: the last item on the same stream that wrote a slot (copied to
  // pinned memory right before the host function, which checks the value)
  std::int64_t probe = -1;
  std::uint32_t probe_slot = 0;  // host with a probe: its slot of pinned memory
};

struct program {
  std::vector<item> items;
  std::vector<std::uint32_t> slots_per_device;
  std::uint32_t events = 0;
  std::uint32_t probes = 0;
  std::uint64_t ops = 0;
};

program make_program(const options& o, int devices) {
  program p;
  p.slots_per_device.assign(static_cast<std::size_t>(devices), 0);
  std::mt19937_64 rng(o.seed);
  const auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
  std::vector<std::uint32_t> writers;  // items that wrote a slot (copy sources)
  std::vector<std::int64_t> last_writer(static_cast<std::size_t>(o.streams), -1);
  while (p.ops < o.ops) {
    item it;
    it.stream = static_cast<int>(pick(static_cast<std::uint64_t>(o.streams)));
    const int device = it.stream % devices;
    const auto roll = pick(100);
    if (roll < 5) {
      it.what = kind::host;
      it.probe = last_writer[static_cast<std::size_t>(it.stream)];
      if (it.probe >= 0) {
        it.probe_slot = p.probes++;
        it.value = p.items[static_cast<std::size_t>(it.probe)].value;
        ++p.ops;  // the copy to pinned memory
      }
    } else if (roll < 30 || writers.empty()) {
      it.what = kind::fill;
      it.value = static_cast<unsigned char>(1 + pick(255));
    } else {
      it.what = kind::copy;
      // Mostly recent sources (dense cross-stream traffic), sometimes old ones.
      const std::uint64_t window =
          pick(8) == 0 ? writers.size() : std::min<std::uint64_t>(256, writers.size());
      it.source = writers[writers.size() - 1 - pick(window)];
      item& src = p.items[it.source];
      it.value = src.value;
      if (src.stream != it.stream) {
        if (pick(8) == 0) {
          it.dep = dependency::stream;
        } else {
          it.dep = dependency::event;
          if (!src.exported) {
            src.exported = true;
            src.event = p.events++;
            ++p.ops;  // its record
          }
        }
        ++p.ops;  // the wait
      }
    }
    if (it.what != kind::host) {
      it.slot = p.slots_per_device[static_cast<std::size_t>(device)]++;
      writers.push_back(static_cast<std::uint32_t>(p.items.size()));
      last_writer[static_cast<std::size_t>(it.stream)] = static_cast<std::int64_t>(p.items.size());
    }
    ++p.ops;
    p.items.push_back(it);
  }
  return p;
}

// ---------------------------------------------------------------------------
// --churn: streams, events, flags and buffers come and go while streams are held.

using steady = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
      .count();
}

double seconds_since(std::int64_t t_ns) { return static_cast<double>(now_ns() - t_ns) / 1e9; }

//! The call a churn thread is inside of, for the watchdog.
enum class call : int {
  none,
  create_stream,
  create_event,
  create_flag,
  allocate,
  enqueue,
  destroy_stream,
  retire
};

const char* describe(call c) {
  switch (c) {
    case call::create_stream: return "creating a stream (sluice::stream's constructor)";
    case call::create_event: return "creating an event";
    case call::create_flag: return "creating a flag";
    case call::allocate: return "allocating a device buffer";
    case call::enqueue:
      return "enqueueing work (fill, record, write_value, copy, host_func, waits)";
    case call::destroy_stream: return "destroying a stream with work in flight";
    case call::retire: return "retiring a stream (waiting for its events, destroying it)";
    case call::none: break;
  }
  return "nothing";
}

//! What a churn thread is doing: written by the thread, read by the watchdog.
struct activity {
  std::atomic<int> what{0};
  std::atomic<int> device{-1};
  std::atomic<std::int64_t> since_ns{0};
};

//! Marks a call for the watchdog for the scope's duration.
class in_call {
 public:
  in_call(activity& a, call c, int device) : a_(a) {
    a_.device.store(device, std::memory_order_relaxed);
    a_.since_ns.store(now_ns(), std::memory_order_relaxed);
    a_.what.store(static_cast<int>(c), std::memory_order_release);
  }
  ~in_call() { a_.what.store(static_cast<int>(call::none), std::memory_order_release); }
  in_call(const in_call&) = delete;
  in_call& operator=(const in_call&) = delete;

 private:
  activity& a_;
};

//! One churned stream and what it uses.
struct churned {
  std::size_t index = 0;  // in the round: its slots of pinned memory
  int device = 0;
  unsigned char value = 0;
  std::optional<sluice::stream> s;      // empty once destroyed
  std::optional<sluice::event> filled;  // after the fill
  std::optional<sluice::event> wrote;   // after write_value: the flag may go once it completed
  std::optional<sluice::event> passed;  // on the next item's stream, after its waits on this one
  std::unique_ptr<sluice::flag> written;
  std::optional<sluice::device_buffer<unsigned char>> buffer;
};

//! What the churn threads of one round share.
struct churn_round {
  churn_round(const options& opts, int devs, int r, std::size_t n)
      : o(opts),
        devices(devs),
        round(r),
        values(n),
        follows(n, -1),
        created(new std::atomic<int>[static_cast<std::size_t>(devs)]),
        live(new std::atomic<int>[static_cast<std::size_t>(devs)]),
        most_live(new std::atomic<int>[static_cast<std::size_t>(devs)]) {
    for (int d = 0; d < devs; ++d) {
      created[d].store(0);
      live[d].store(0);
      most_live[d].store(0);
    }
  }

  void check(const unsigned char* p, unsigned char want, std::size_t n) {
    for (std::size_t b = 0; b < n; ++b)
      if (p[b] != want) {
        host_bad.fetch_add(1);
        return;
      }
    host_ok.fetch_add(1);
  }
  void stream_created(int d) {
    created[d].fetch_add(1);
    const int now = live[d].fetch_add(1) + 1;
    int most = most_live[d].load();
    while (now > most && !most_live[d].compare_exchange_weak(most, now)) {
    }
  }

  const options& o;
  const int devices;
  const int round;
  std::vector<unsigned char> values;  // per item
  std::vector<std::int64_t> follows;  // per item: the item whose buffer it copied too, or -1
  unsigned char* first = nullptr;     // pinned: per item, the copy of its own buffer
  unsigned char* second = nullptr;    // pinned: per item, the copy of the buffer it follows
  std::atomic<std::size_t> host_ok{0}, host_bad{0};
  std::unique_ptr<std::atomic<int>[]> created, live, most_live;  // per device
  std::atomic<bool> failed{false};
};

//! Thread t of `threads`: the items of blocks t, t + threads, ... of the round; block b holds items
//! b * devices + d, one per device d.
void churn_thread(churn_round& r, int t, int threads, activity& act) {
  const int devices = r.devices;
  const std::size_t slot = r.o.slot;
  const std::size_t total = static_cast<std::size_t>(r.o.streams) * devices;
  const std::size_t window =
      std::max<std::size_t>(1, (static_cast<std::size_t>(r.o.live) * devices + threads - 1) /
                                   static_cast<std::size_t>(threads));
  std::minstd_rand rng(static_cast<unsigned>(r.o.seed * 7919 + r.round * 131 + t + 1));
  std::deque<std::unique_ptr<churned>> mine;
  std::vector<churned*> last(static_cast<std::size_t>(devices), nullptr);  // latest per device
  const auto retire = [&] {
    std::unique_ptr<churned> x = std::move(mine.front());
    mine.pop_front();
    if (last[static_cast<std::size_t>(x->device)] == x.get())
      last[static_cast<std::size_t>(x->device)] = nullptr;
    const in_call c(act, call::retire, x->device);
    x->wrote->synchronize();                  // its stream wrote the flag
    if (x->passed) x->passed->synchronize();  // the next stream waited on the flag
    if (x->s) {
      x->s.reset();
      r.live[x->device].fetch_sub(1);
    }
    x.reset();  // events, flag and buffer (freed once the streams that use it pass)
  };
  const auto churn_one = [&](std::size_t j) {
    const std::size_t block = j / static_cast<std::size_t>(devices);
    const std::size_t turn = block / static_cast<std::size_t>(threads);  // of this thread
    auto x = std::make_unique<churned>();
    x->index = j;
    x->device = static_cast<int>(j % static_cast<std::size_t>(devices));
    x->value = r.values[j];
    const int d = x->device;
    const sluice::device dev{d};
    churned* prev = last[static_cast<std::size_t>(d)];
    {
      const in_call c(act, call::create_stream, d);
      sluice::stream_options so;
      so.priority = static_cast<sluice::priority>(turn % 3);
      x->s.emplace(dev, so);
    }
    r.stream_created(d);
    {
      const in_call c(act, call::create_event, d);
      x->filled.emplace(dev);
      x->wrote.emplace(dev);
      if (prev != nullptr) prev->passed.emplace(dev);
    }
    {
      const in_call c(act, call::create_flag, d);
      x->written = std::make_unique<sluice::flag>(0);
    }
    {
      const in_call c(act, call::allocate, d);
      if (block % 2 == 0)
        x->buffer.emplace(sluice::stream_ref(*x->s), slot);  // stream-ordered
      else
        x->buffer.emplace(dev, slot);
    }
    {
      const in_call c(act, call::enqueue, d);
      const sluice::stream& s = *x->s;
      unsigned char* own = r.first + j * slot;
      sluice::fill(s, x->buffer->data(), x->value, slot);
      x->filled->record(s);
      s.write_value(*x->written, 1);
      x->wrote->record(s);
      sluice::copy(s, own, x->buffer->data(), slot);
      s.host_func([&r, own, want = x->value, slot] { r.check(own, want, slot); });
      if (prev != nullptr) {
        // Ordered after the previous stream's fill by its event or by its flag, in turn.
        if (turn % 2 == 0)
          s.wait(*prev->filled);
        else
          s.wait_value(*prev->written, 1);
        prev->buffer->record_stream(s);
        unsigned char* theirs = r.second + j * slot;
        sluice::copy(s, theirs, prev->buffer->data(), slot);
        s.host_func([&r, theirs, want = prev->value, slot] { r.check(theirs, want, slot); });
        prev->passed->record(s);
        r.follows[j] = static_cast<std::int64_t>(prev->index);
      }
    }
    if (rng() % 4 == 0) {
      const in_call c(act, call::destroy_stream, d);
      x->s.reset();  // its work still runs (LIFE-1)
      r.live[d].fetch_sub(1);
    }
    last[static_cast<std::size_t>(d)] = x.get();
    mine.push_back(std::move(x));
    while (mine.size() > window) retire();
  };
  try {
    for (std::size_t j = 0; j < total && !r.failed.load(); ++j)
      if (j / static_cast<std::size_t>(devices) % static_cast<std::size_t>(threads) ==
          static_cast<std::size_t>(t))
        churn_one(j);
    while (!mine.empty()) retire();
  } catch (...) {
    // No flag may go while a stream still waits on it or writes it: retire in order.
    r.failed.store(true);
    try {
      while (!mine.empty()) retire();
    } catch (...) {
    }
    throw;
  }
}

int run_churn(options o) {
  const int available = sluice::device_count();
  if (available == 0) {
    std::printf("sluice-stress: no %s device: nothing run\n", sluice::backend_name());
    return 77;
  }
  const int devices = std::min(o.devices, available);
  if (devices < o.devices)
    std::printf("sluice-stress: %d devices asked for, the %s backend has %d: using %d\n", o.devices,
                sluice::backend_name(), available, devices);
  const std::size_t items = static_cast<std::size_t>(o.streams) * static_cast<std::size_t>(devices);
  const int threads = std::min(o.threads, o.streams);  // each takes one stream per device at once
  const std::size_t slot = o.slot;
  const auto limit = std::chrono::seconds(o.watchdog_s);
  std::printf(
      "sluice-stress --churn: %s backend, %d devices, %d threads, %d streams per device per round "
      "(the latest %d kept per device), %d held per device, %d rounds, seed %llu, watchdog %d s\n",
      sluice::backend_name(), devices, threads, o.streams, o.live, o.held, o.rounds,
      static_cast<unsigned long long>(o.seed), o.watchdog_s);

  // At once, per device and priority level: the kept streams of earlier rounds,
  // this round's, and the held ones, and as many again for streams that were
  // destroyed but whose state is still referenced (a flag or buffer they used,
  // a host function not yet run). The GPU backends keep SLUICE_STREAM_RESERVE
  // (64) ready per level; a code that creates more while streams are held
  // reserves them first, while the device is idle (IND-4, reserve_streams).
  // With the kept, round and held streams alone (114), the simulated runtime
  // ran out in round 32 of 40 (all 115 of the level's vendor streams in use).
  for (int d = 0; d < devices; ++d)
    for (const auto p : {sluice::priority::low, sluice::priority::normal, sluice::priority::high})
      sluice::reserve_streams(sluice::device{d}, 2 * (o.live + o.streams + o.held),
                              sluice::stream_options{p, std::nullopt});
  const std::size_t held_count =
      static_cast<std::size_t>(devices) * static_cast<std::size_t>(o.held);
  // Declared first, destroyed last: the streams that wait on them are gone by then.
  std::vector<std::unique_ptr<sluice::flag>> holds;
  for (std::size_t i = 0; i < held_count; ++i) holds.push_back(std::make_unique<sluice::flag>(0));
  const auto release = [&](int round) {
    for (auto& f : holds) f->store(static_cast<std::uint32_t>(round + 1));
  };
  sluice::pinned_buffer<unsigned char> first{items * slot}, second{items * slot},
      held_out{held_count * slot};
  std::vector<sluice::device_buffer<unsigned char>> held_memory;
  for (int d = 0; d < devices; ++d)
    held_memory.emplace_back(sluice::device{d}, static_cast<std::size_t>(o.held) * slot);
  std::vector<sluice::stream> held;  // held[i] on device i / o.held
  for (std::size_t i = 0; i < held_count; ++i)
    held.emplace_back(sluice::device{static_cast<int>(i / static_cast<std::size_t>(o.held))});
  // Whatever ends the run (an exception included) releases the held streams first, before the
  // memory they use is freed.
  struct release_all {
    std::vector<std::unique_ptr<sluice::flag>>& flags;
    ~release_all() {
      for (auto& f : flags) f->store(~std::uint32_t{0});
    }
  } const released_at_exit{holds};
  std::atomic<int> held_runs{0};
  const auto held_value = [](std::size_t i, int round) {
    return static_cast<unsigned char>(1 + (i * 7 + static_cast<std::size_t>(round) * 13) % 255);
  };

  bool ok = true;
  std::size_t streams_while_held = 0;
  const auto start = steady::now();
  for (int round = 0; round < o.rounds; ++round) {
    std::fill(first.begin(), first.end(), 0);
    std::fill(second.begin(), second.end(), 0);
    std::fill(held_out.begin(), held_out.end(), 0);
    churn_round r(o, devices, round, items);
    r.first = first.data();
    r.second = second.data();
    std::mt19937_64 rng(o.seed * 1000003 + static_cast<std::uint64_t>(round));
    for (auto& v : r.values) v = static_cast<unsigned char>(1 + rng() % 255);

    // Hold: behind each flag a fill, a copy to pinned memory and a host function.
    for (std::size_t i = 0; i < held_count; ++i) {
      const sluice::stream& h = held[i];
      unsigned char* mem = held_memory[i / static_cast<std::size_t>(o.held)].data() +
                           i % static_cast<std::size_t>(o.held) * slot;
      h.wait_value(*holds[i], static_cast<std::uint32_t>(round + 1));
      sluice::fill(h, mem, held_value(i, round), slot);
      sluice::copy(h, held_out.data() + i * slot, mem, slot);
      h.host_func([&held_runs] { held_runs.fetch_add(1); });
    }
    const std::int64_t held_since = now_ns();

    // Churn, watched.
    std::vector<activity> acts(static_cast<std::size_t>(threads));
    std::vector<std::string> failures(static_cast<std::size_t>(threads));
    std::mutex m;
    std::condition_variable cv;
    int finished = 0;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        try {
          churn_thread(r, t, threads, acts[static_cast<std::size_t>(t)]);
        } catch (const std::exception& e) {
          failures[static_cast<std::size_t>(t)] = e.what();
          r.failed.store(true);
        }
        std::lock_guard<std::mutex> lock(m);
        ++finished;
        cv.notify_all();
      });
    bool stalled = false;
    {
      std::unique_lock<std::mutex> lock(m);
      const auto all_done = [&] { return finished == threads; };
      while (!stalled && !cv.wait_for(lock, std::chrono::milliseconds(20), all_done)) {
        for (int t = 0; t < threads && !stalled; ++t) {
          activity& a = acts[static_cast<std::size_t>(t)];
          const auto what = static_cast<call>(a.what.load(std::memory_order_acquire));
          const std::int64_t since = a.since_ns.load(std::memory_order_relaxed);
          if (what == call::none || seconds_since(since) < static_cast<double>(o.watchdog_s))
            continue;
          stalled = true;
          const int d = a.device.load(std::memory_order_relaxed);
          if (what == call::create_stream)
            std::printf(
                "FAIL: stream creation waited for a held stream: churn thread %d has been inside "
                "sluice::stream's constructor on device %d for %.1f s (round %d; %d streams "
                "created on that device this round, %d of them live, while %d streams of the "
                "device were held by flags). Releasing the flags.\n",
                t, d, seconds_since(since), round, r.created[d].load(), r.live[d].load(), o.held);
          else
            std::printf(
                "FAIL: churn thread %d has been %s on device %d for %.1f s while %d streams of "
                "each device were held by flags (round %d). Releasing the flags.\n",
                t, describe(what), d, seconds_since(since), o.held, round);
          std::fflush(stdout);
          release(round);
          const std::int64_t released = now_ns();
          const auto back = steady::now() + limit;
          // Did it return once the held work could run? (the wait ended with the device's work)
          while (a.since_ns.load(std::memory_order_relaxed) == since &&
                 a.what.load(std::memory_order_acquire) == static_cast<int>(what) &&
                 steady::now() < back)
            cv.wait_for(lock, std::chrono::milliseconds(1));
          if (steady::now() >= back) {
            std::printf("FAIL: that call was still blocked %d s after the release: a deadlock\n",
                        o.watchdog_s);
            std::fflush(stdout);
            std::_Exit(1);
          }
          std::printf("      the call returned %.3f s after the flags were released\n",
                      seconds_since(released));
        }
      }
      if (stalled && !cv.wait_for(lock, limit, all_done)) {
        std::printf("FAIL: the churn threads did not finish within %d s of the release\n",
                    o.watchdog_s);
        std::fflush(stdout);
        std::_Exit(1);
      }
    }
    for (auto& w : workers) w.join();
    for (int t = 0; t < threads; ++t)
      if (!failures[static_cast<std::size_t>(t)].empty()) {
        std::printf("FAIL: churn thread %d, round %d: %s\n", t, round,
                    failures[static_cast<std::size_t>(t)].c_str());
        ok = false;
      }
    if (stalled) ok = false;

    // Nothing behind the flags may have run yet.
    if (!stalled) {
      const bool untouched =
          std::all_of(held_out.begin(), held_out.end(), [](unsigned char b) { return b == 0; });
      if (held_runs.load() != round * static_cast<int>(held_count) || !untouched) {
        std::printf("FAIL: a held stream ran before its flag was released (round %d)\n", round);
        ok = false;
      }
    }
    const double held_s = seconds_since(held_since);
    release(round);

    // The released work, and everything the churn enqueued, completes: watched too.
    {
      std::atomic<bool> drained{false};
      std::string drain_failure;
      std::thread drain([&] {
        try {
          for (int d = 0; d < devices; ++d) sluice::device{d}.synchronize();
        } catch (const std::exception& e) {
          drain_failure = e.what();
        }
        std::lock_guard<std::mutex> lock(m);
        drained.store(true);
        cv.notify_all();
      });
      std::unique_lock<std::mutex> lock(m);
      if (!cv.wait_for(lock, limit, [&] { return drained.load(); })) {
        std::printf("FAIL: the devices did not drain within %d s of the release (round %d)\n",
                    o.watchdog_s, round);
        std::fflush(stdout);
        std::_Exit(1);
      }
      lock.unlock();
      drain.join();
      if (!drain_failure.empty()) {
        std::printf("FAIL: synchronizing the devices: %s\n", drain_failure.c_str());
        ok = false;
      }
    }

    // The check: every copy, every host function, every held stream's work.
    std::size_t expected_hosts = 0, bad_slots = 0;
    for (std::size_t j = 0; j < items; ++j) {
      if (r.failed.load()) break;
      ++expected_hosts;
      const auto differs = [&](const unsigned char* p, unsigned char want) {
        for (std::size_t b = 0; b < slot; ++b)
          if (p[b] != want) return true;
        return false;
      };
      if (differs(first.data() + j * slot, r.values[j]) && bad_slots++ < 10)
        std::printf("FAIL: round %d, stream %zu: its copy differs from its fill %u\n", round, j,
                    static_cast<unsigned>(r.values[j]));
      if (r.follows[j] >= 0) {
        ++expected_hosts;
        const unsigned char want = r.values[static_cast<std::size_t>(r.follows[j])];
        if (differs(second.data() + j * slot, want) && bad_slots++ < 10)
          std::printf("FAIL: round %d, stream %zu: its copy of stream %lld's buffer differs (%u)\n",
                      round, j, static_cast<long long>(r.follows[j]), static_cast<unsigned>(want));
      }
    }
    for (std::size_t i = 0; i < held_count; ++i)
      for (std::size_t b = 0; b < slot; ++b)
        if (held_out[i * slot + b] != held_value(i, round)) {
          if (bad_slots++ < 10)
            std::printf("FAIL: round %d, held stream %zu: its work after the release is missing\n",
                        round, i);
          break;
        }
    if (held_runs.load() != (round + 1) * static_cast<int>(held_count)) {
      std::printf("FAIL: round %d: %d host functions of held streams ran, expected %d\n", round,
                  held_runs.load(), (round + 1) * static_cast<int>(held_count));
      ok = false;
    }
    if (!r.failed.load() && (r.host_ok.load() != expected_hosts || r.host_bad.load() != 0)) {
      std::printf("FAIL: round %d: %zu host functions saw their copy, %zu did not, %zu expected\n",
                  round, r.host_ok.load(), r.host_bad.load(), expected_hosts);
      ok = false;
    }
    if (bad_slots != 0) ok = false;
    int created = 0, most = 0;
    for (int d = 0; d < devices; ++d) {
      created += r.created[d].load();
      most = std::max(most, r.most_live[d].load());
    }
    streams_while_held += static_cast<std::size_t>(created);
    std::printf(
        "round %d: %d streams created and destroyed while %zu were held (%.2f s held; up to %d "
        "churned streams live on one device)%s\n",
        round, created, held_count, held_s, most,
        ok ? "; every copy and host function checked" : "");
    if (!ok) break;
  }
  for (int d = 0; d < devices; ++d) sluice::device{d}.synchronize();
  const double seconds = std::chrono::duration<double>(steady::now() - start).count();
  if (!ok) {
    std::printf("FAIL: churn (seed %llu)\n", static_cast<unsigned long long>(o.seed));
    return 1;
  }
  std::printf("OK: %zu streams created and destroyed while streams were held, in %.2f s\n",
              streams_while_held, seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) return 2;
  if (o.churn) {
    try {
      return run_churn(o);
    } catch (const std::exception& e) {
      std::printf("FAIL: %s\n", e.what());
      return 1;
    }
  }
  try {
    const int available = sluice::device_count();
    if (available == 0) {
      std::printf("sluice-stress: no %s device: nothing run\n", sluice::backend_name());
      return 77;
    }
    const int devices = std::min(o.devices, available);
    if (devices < o.devices)
      std::printf("sluice-stress: %d devices asked for, the %s backend has %d: using %d\n",
                  o.devices, sluice::backend_name(), available, devices);
    o.threads = std::min(o.threads, o.streams);

    const program p = make_program(o, devices);
    std::printf("sluice-stress: %s backend, %d devices, %d streams, %d threads, seed %llu\n",
                sluice::backend_name(), devices, o.streams, o.threads,
                static_cast<unsigned long long>(o.seed));
    std::printf("program: %zu items, %llu operations, %u events, %zu-byte slots\n", p.items.size(),
                static_cast<unsigned long long>(p.ops), p.events, o.slot);

    for (int a = 0; a < devices; ++a)
      for (int b = 0; b < devices; ++b)
        if (a != b) sluice::enable_peer_access(sluice::device{a}, sluice::device{b});

    std::vector<sluice::device_buffer<unsigned char>> memory;
    std::vector<sluice::stream> streams;
    for (int d = 0; d < devices; ++d) {
      const std::size_t bytes =
          std::size_t{p.slots_per_device[static_cast<std::size_t>(d)]} * o.slot;
      memory.emplace_back(sluice::device{d}, std::max<std::size_t>(bytes, 1));
      sluice::stream init{sluice::device{d}};
      sluice::fill(init, memory.back().data(), 0, memory.back().size());
      init.synchronize();
    }
    for (int s = 0; s < o.streams; ++s) streams.emplace_back(sluice::device{s % devices});
    std::vector<int> event_device(p.events);
    for (const item& it : p.items)
      if (it.exported) event_device[it.event] = it.stream % devices;
    std::vector<sluice::event> events;
    events.reserve(p.events);
    for (const int d : event_device) events.emplace_back(sluice::device{d});
    // Per item: enqueued (and its event recorded) by its thread.
    std::unique_ptr<std::atomic<bool>[]> enqueued(new std::atomic<bool>[p.items.size()]);
    std::unique_ptr<std::atomic<int>[]> host_runs(new std::atomic<int>[p.items.size()]);
    for (std::size_t i = 0; i < p.items.size(); ++i) {
      enqueued[i].store(false);
      host_runs[i].store(0);
    }

    const auto slot_of = [&](const item& it) {
      return memory[static_cast<std::size_t>(it.stream % devices)].data() +
             std::size_t{it.slot} * o.slot;
    };
    sluice::pinned_buffer<unsigned char> probes{
        std::max<std::size_t>(std::size_t{p.probes} * o.slot, 1)};
    std::atomic<std::size_t> bad_probes{0};
    std::atomic<bool> failed{false};
    std::vector<std::string> failures(static_cast<std::size_t>(o.threads));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < o.threads; ++t)
      workers.emplace_back([&, t] {
        try {
          for (std::size_t i = 0; i < p.items.size() && !failed.load(std::memory_order_relaxed);
               ++i) {
            const item& it = p.items[i];
            if (it.stream % o.threads != t) continue;
            sluice::stream& s = streams[static_cast<std::size_t>(it.stream)];
            if (it.what == kind::copy) {
              const item& src = p.items[it.source];
              if (it.dep != dependency::none) {
                // The source's thread must have enqueued it (and recorded its event).
                while (!enqueued[it.source].load(std::memory_order_acquire)) {
                  if (failed.load(std::memory_order_relaxed)) return;
                  std::this_thread::yield();
                }
                if (it.dep == dependency::event)
                  s.wait(events[src.event]);
                else
                  s.wait(streams[static_cast<std::size_t>(src.stream)]);
              }
              const int from = src.stream % devices;
              const int to = it.stream % devices;
              if (from == to)
                sluice::copy(s, slot_of(it), slot_of(src), o.slot);
              else
                (void)sluice::copy_peer(s, slot_of(it), sluice::device{to}, slot_of(src),
                                        sluice::device{from}, o.slot);
            } else if (it.what == kind::fill) {
              sluice::fill(s, slot_of(it), it.value, o.slot);
            } else {
              std::atomic<int>* runs = &host_runs[i];
              if (it.probe < 0) {
                s.host_func([runs] { runs->fetch_add(1, std::memory_order_relaxed); });
              } else {
                // HOST-1 under load: the function sees the copy enqueued before it.
                unsigned char* seen = probes.data() + std::size_t{it.probe_slot} * o.slot;
                sluice::copy(s, seen, slot_of(p.items[static_cast<std::size_t>(it.probe)]), o.slot);
                const std::size_t n = o.slot;
                const unsigned char want = it.value;
                s.host_func([runs, seen, n, want, &bad_probes] {
                  runs->fetch_add(1, std::memory_order_relaxed);
                  for (std::size_t b = 0; b < n; ++b)
                    if (seen[b] != want) {
                      bad_probes.fetch_add(1);
                      break;
                    }
                });
              }
            }
            if (it.exported) events[it.event].record(s);
            enqueued[i].store(true, std::memory_order_release);
          }
        } catch (const std::exception& e) {
          failures[static_cast<std::size_t>(t)] = e.what();
          failed.store(true);
        }
      });
    for (auto& w : workers) w.join();
    for (int d = 0; d < devices; ++d) sluice::device{d}.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int t = 0; t < o.threads; ++t)
      if (!failures[static_cast<std::size_t>(t)].empty())
        std::printf("FAIL: thread %d: %s\n", t, failures[static_cast<std::size_t>(t)].c_str());
    if (failed.load()) return 1;
    std::printf("enqueued and completed in %.2f s: %.2f M operations/s\n", seconds,
                static_cast<double>(p.ops) / seconds / 1e6);

    // The check: every slot against the sequential reference, every host function once.
    std::size_t bad_slots = 0, bad_hosts = 0;
    std::vector<sluice::pinned_buffer<unsigned char>> copies;
    for (int d = 0; d < devices; ++d) {
      copies.emplace_back(memory[static_cast<std::size_t>(d)].size());
      sluice::stream s{sluice::device{d}};
      sluice::copy(s, copies.back().data(), memory[static_cast<std::size_t>(d)].data(),
                   memory[static_cast<std::size_t>(d)].size());
      s.synchronize();
    }
    for (std::size_t i = 0; i < p.items.size(); ++i) {
      const item& it = p.items[i];
      if (it.what == kind::host) {
        if (host_runs[i].load() != 1 && bad_hosts++ < 10)
          std::printf("FAIL: host function of item %zu ran %d times\n", i, host_runs[i].load());
        continue;
      }
      const unsigned char* got = copies[static_cast<std::size_t>(it.stream % devices)].data() +
                                 std::size_t{it.slot} * o.slot;
      for (std::size_t b = 0; b < o.slot; ++b)
        if (got[b] != it.value) {
          if (bad_slots++ < 10)
            std::printf(
                "FAIL: item %zu (%s on stream %d, source item %u) byte %zu: %u, expected %u\n", i,
                it.what == kind::fill ? "fill" : "copy", it.stream, it.source, b,
                static_cast<unsigned>(got[b]), static_cast<unsigned>(it.value));
          break;
        }
    }
    if (bad_probes.load() != 0)
      std::printf("FAIL: %zu host functions did not see the copy enqueued before them\n",
                  bad_probes.load());
    if (bad_slots != 0 || bad_hosts != 0 || bad_probes.load() != 0) {
      std::printf("FAIL: %zu slots and %zu host functions differ from the reference (seed %llu)\n",
                  bad_slots, bad_hosts, static_cast<unsigned long long>(o.seed));
      return 1;
    }
    std::printf("OK: %zu slots and every host function match the sequential reference\n", [&] {
      std::size_t n = 0;
      for (const item& it : p.items) n += it.what != kind::host;
      return n;
    }());
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
