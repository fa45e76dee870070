// The trace clock, the ids of host threads, streams, trace_ranges and graph
// launches, and the graph launch a thread makes operations for.
#include "trace.hpp"

#include <atomic>
#include <chrono>

namespace sluice::detail::trace {

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t thread_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  thread_local const std::uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

std::uint64_t new_stream_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t new_range_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t new_launch_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {
struct graph_context {
  std::uint64_t launch = 0;
  std::uint32_t vertex = 0;
  std::uint64_t stream = 0;
};
thread_local graph_context current_graph;
}  // namespace

graph_scope::graph_scope(std::uint64_t launch, std::uint32_t vertex, std::uint64_t stream) noexcept
    : launch_(current_graph.launch), stream_(current_graph.stream), vertex_(current_graph.vertex) {
  current_graph = {launch, vertex, stream};
}

graph_scope::~graph_scope() { current_graph = {launch_, vertex_, stream_}; }

void fill_graph(record& r) noexcept {
  const graph_context& g = current_graph;
  if (g.launch == 0) return;
  r.launch = g.launch;
  if (g.vertex != 0) {
    r.vertex = g.vertex;
    r.graph_stream = g.stream;
  }
}

}  // namespace sluice::detail::trace
