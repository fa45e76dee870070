#include "stream_names.hpp"

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace sluice::detail::stream_names {
namespace {

struct table {
  std::mutex m;
  std::unordered_map<std::uint64_t, std::string> live;  // named streams that exist
  std::atomic<std::size_t> named{0};                    // live.size(), read without m
  // Names of streams destroyed while a trace was collected, for that trace.
  std::map<std::uint64_t, std::string> retired;
  bool keep_retired = false;  // from trace_begin until the trace was written
};

table& the_table() {
  static auto* t = new table();  // never destroyed: streams may die at exit
  return *t;
}

}  // namespace

void set(std::uint64_t id, std::string name) {
  auto& t = the_table();
  std::lock_guard<std::mutex> lock(t.m);
  if (name.empty())
    t.live.erase(id);
  else
    t.live[id] = std::move(name);
  t.named.store(t.live.size(), std::memory_order_relaxed);
}

void adopt(std::uint64_t id, std::string&& name) noexcept {
  if (name.empty()) return;
  try {
    set(id, std::move(name));
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory: a stream's name is left out\n");
  }
}

std::string of(std::uint64_t id) {
  auto& t = the_table();
  if (t.named.load(std::memory_order_relaxed) == 0) return {};
  std::lock_guard<std::mutex> lock(t.m);
  const auto it = t.live.find(id);
  return it != t.live.end() ? it->second : std::string();
}

std::string forget(std::uint64_t id) noexcept {
  auto& t = the_table();
  if (t.named.load(std::memory_order_relaxed) == 0) return {};
  std::lock_guard<std::mutex> lock(t.m);
  const auto it = t.live.find(id);
  if (it == t.live.end()) return {};
  std::string name = std::move(it->second);
  t.live.erase(it);
  t.named.store(t.live.size(), std::memory_order_relaxed);
  if (t.keep_retired) {
    try {
      t.retired[id] = name;
    } catch (...) {
      std::fprintf(stderr, "sluice: out of memory: a stream's name is left out of the trace\n");
    }
  }
  return name;
}

std::string traced(std::uint64_t id) {
  auto& t = the_table();
  std::lock_guard<std::mutex> lock(t.m);
  if (const auto it = t.live.find(id); it != t.live.end()) return it->second;
  if (const auto it = t.retired.find(id); it != t.retired.end()) return it->second;
  return {};
}

void trace_begun() noexcept {
  auto& t = the_table();
  std::lock_guard<std::mutex> lock(t.m);
  t.retired.clear();
  t.keep_retired = true;
}

void trace_written() noexcept {
  auto& t = the_table();
  std::lock_guard<std::mutex> lock(t.m);
  t.retired.clear();
  t.keep_retired = false;
}

std::string phrase(const std::string& name, const std::string& owner) {
  return name.empty() ? "a stream of " + owner : "stream '" + name + "' of " + owner;
}

std::string phrase(std::uint64_t id, const std::string& owner) { return phrase(of(id), owner); }

std::string phrase(std::uint64_t id, int device) {
  return phrase(of(id), "device " + std::to_string(device));
}

}  // namespace sluice::detail::stream_names
