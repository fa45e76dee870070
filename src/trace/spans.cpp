#include "spans.hpp"

#include "trace.hpp"

#include <cstdio>

namespace sluice::detail::trace {

span_table& the_spans() {
  static auto* t = new span_table();  // never destroyed: used at exit
  return *t;
}

void note_span(std::uint64_t range, const char* cat, std::string args) noexcept {
  try {
    auto& t = the_spans();
    std::lock_guard<std::mutex> lock(t.m);
    t.spans[range] = {cat, std::move(args)};
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: a span's arguments are left out\n");
  }
}

}  // namespace sluice::detail::trace
