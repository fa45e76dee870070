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
#include <sluice/sluice.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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
    if (auto v = value("ops"))
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

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) return 2;
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
