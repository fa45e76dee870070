#include "collection.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

namespace sluice::detail::trace {

std::atomic<bool> on{false};

collection& the_collection() {
  static auto* c = new collection();  // never destroyed: worker threads may submit at exit
  return *c;
}

namespace {

thread_local std::shared_ptr<buffer> this_thread_buffer;

}  // namespace

void drain_buffers(const std::shared_ptr<writer>& w) {
  auto& c = the_collection();
  std::vector<std::vector<record>> chunks;
  {
    std::lock_guard<std::mutex> lock(c.m);
    for (auto& b : c.buffers) {
      std::lock_guard<std::mutex> inner(b->m);
      if (b->chunk.empty()) continue;
      // Moved out, not swapped: the thread keeps its chunk's memory for the
      // next trace (a fresh chunk costs page faults on the thread that fills it).
      chunks.emplace_back(std::make_move_iterator(b->chunk.begin()),
                          std::make_move_iterator(b->chunk.end()));
      b->chunk.clear();
    }
  }
  if (w != nullptr)
    for (auto& chunk : chunks) (void)w->push(std::move(chunk));
}

void submit(record&& r) noexcept {
  try {
    if (!this_thread_buffer) {
      auto b = std::make_shared<buffer>();
      auto& c = the_collection();
      std::lock_guard<std::mutex> lock(c.m);
      c.buffers.push_back(b);
      this_thread_buffer = std::move(b);
    }
    buffer& b = *this_thread_buffer;
    std::vector<record> full;
    {
      std::lock_guard<std::mutex> lock(b.m);
      if (b.chunk.capacity() == 0) b.chunk.reserve(chunk_records);
      b.chunk.push_back(std::move(r));
      if (b.chunk.size() < chunk_records) return;
      full.swap(b.chunk);
    }
    std::shared_ptr<writer> w;
    {
      auto& c = the_collection();
      std::lock_guard<std::mutex> lock(c.m);
      w = c.w;
    }
    if (w == nullptr) return;  // no trace: dropped
    std::vector<record> spare = w->push(std::move(full));
    if (spare.capacity() != 0) {
      std::lock_guard<std::mutex> lock(b.m);
      if (b.chunk.capacity() == 0) b.chunk.swap(spare);
    }
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: an operation is left out\n");
  }
}

void note_clock_error(int device, std::int64_t ns) noexcept {
  auto& c = the_collection();
  try {
    std::lock_guard<std::mutex> lock(c.m);
    std::int64_t& kept = c.clock_error_ns[device];
    kept = std::max(kept, ns);  // a device calibrated twice in one trace: the wider
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: a clock error is left out\n");
  }
}

void note_source(const std::string& args) noexcept {
  auto& c = the_collection();
  try {
    std::lock_guard<std::mutex> lock(c.m);
    c.source = args;
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: the trace source is left out\n");
  }
}

}  // namespace sluice::detail::trace
