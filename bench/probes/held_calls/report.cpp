// sluice-probe-held-calls: the report, one line per case (or phase) on stdout
// and one row in the CSV (--csv), in the format probe.cpp's header describes.
#include "harness.hpp"

#include <algorithm>
#include <cstdlib>

namespace held_calls {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

const char* connections() {
  const char* c = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return c != nullptr ? c : "unset";
}

void report(const phase_result& r) {
  if (!r.skipped.empty()) {
    std::printf("case=%s skipped: %s\n", r.name.c_str(), r.skipped.c_str());
    if (csv_file != nullptr)
      std::fprintf(csv_file, "%s,%s,,,,,,,,,,,,,%s\n", csv_field(connections()).c_str(),
                   csv_field(r.name).c_str(), csv_field("skipped: " + r.skipped).c_str());
  } else {
    std::vector<double> us = r.unblocked_us;
    std::sort(us.begin(), us.end());
    const std::string max_us = us.empty() ? "-" : fmt("%.1f", us.back());
    const std::string median_us = us.empty() ? "-" : fmt("%.1f", us[us.size() / 2]);
    const auto at = [](const block_point& b) { return std::to_string(b.call); };
    const auto in = [](const block_point& b) { return b.in; };
    const auto held = [](const block_point& b) { return fmt("%.1f", b.blocked_for_ms); };
    const auto back = [](const block_point& b) { return fmt("%.2f", b.returned_after_release_ms); };
    const char* result = r.blocks.empty() ? "never blocked" : "BLOCKS";
    std::string errors = std::to_string(r.errors);
    if (r.errors > 0) errors += "(" + r.first_error + ")";
    std::printf(
        "case=%s calls=%s count=%d completed=%d blocked_at=%s blocked_in=%s blocked_for_ms=%s "
        "returned_after_release_ms=%s max_unblocked_us=%s median_unblocked_us=%s errors=%s%s "
        "result=%s\n",
        r.name.c_str(), r.calls.c_str(), r.count, r.completed, joined(r, ",", "none", at).c_str(),
        joined(r, ",", "-", in).c_str(), joined(r, ",", "-", held).c_str(),
        joined(r, ",", "-", back).c_str(), max_us.c_str(), median_us.c_str(), errors.c_str(),
        r.notes.c_str(), result);
    if (csv_file != nullptr) {
      const std::string notes = r.notes.empty() ? "" : r.notes.substr(1);
      std::fprintf(csv_file, "%s,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s\n",
                   csv_field(connections()).c_str(), csv_field(r.name).c_str(),
                   csv_field(r.calls).c_str(), r.count, r.completed,
                   joined(r, ";", "none", at).c_str(), csv_field(joined(r, ";", "", in)).c_str(),
                   joined(r, ";", "", held).c_str(), joined(r, ";", "", back).c_str(),
                   max_us.c_str(), median_us.c_str(), r.errors, csv_field(r.first_error).c_str(),
                   csv_field(notes).c_str(), result);
    }
  }
  std::fflush(stdout);
  if (csv_file != nullptr) std::fflush(csv_file);
}

}  // namespace held_calls
