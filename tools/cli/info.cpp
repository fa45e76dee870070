#include "cli/info.hpp"

#include "cli/facts.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/sluice.hpp>

#include <algorithm>
#include <climits>
#include <iostream>
#include <string>
#include <vector>

namespace sluice::tool {

namespace {

//! Pads text on the right to `width` characters.
std::string cell(std::string text, std::size_t width) {
  text.resize(std::max(text.size(), width), ' ');
  return text;
}

std::string without_trailing_spaces(std::string text) {
  text.erase(text.find_last_not_of(' ') + 1);
  return text;
}

//! Short names in the manner of `nvidia-smi topo -m`.
const char* link_abbreviation(link_kind kind) {
  switch (kind) {
    case link_kind::same_device: return "X";
    case link_kind::nvlink: return "NV";
    case link_kind::xgmi: return "XGMI";
    case link_kind::pcie: return "PCIE";
    case link_kind::host_memory: return "HOST";
    case link_kind::unknown: return "?";
  }
  return "?";
}

int effective_native_priority(sluice::device d, sluice::priority level) {
  sluice::stream_options options;
  options.priority = level;
  const sluice::stream probe(d, options);
  return probe.native_priority();
}

void print_priorities(int count) {
  std::cout << "\nstream priorities (vendor values; 'greatest' is the highest priority):\n"
            << "  device  least  greatest  low  normal  high  independent streams\n";
  for (int id = 0; id < count; ++id) {
    const sluice::device d(id);
    const auto range = sluice::stream_priority_range(d);
    const int limit = sluice::independent_stream_limit(d);
    std::cout << "  " << cell(std::to_string(id), 8) << cell(std::to_string(range.least), 7)
              << cell(std::to_string(range.greatest), 10)
              << cell(std::to_string(effective_native_priority(d, sluice::priority::low)), 5)
              << cell(std::to_string(effective_native_priority(d, sluice::priority::normal)), 8)
              << cell(std::to_string(effective_native_priority(d, sluice::priority::high)), 6)
              << (limit == INT_MAX ? std::string("unlimited") : std::to_string(limit)) << '\n';
  }
}

void print_links(int count) {
  std::vector<std::vector<sluice::link_info>> links(count);
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      links[from].push_back(sluice::link(sluice::device(from), sluice::device(to)));
    }
  }
  // Like `nvidia-smi topo -m`: one row and one column per device.
  std::cout << "\nlinks (row: from, column: to):\n";
  std::string header = cell("", 8);
  for (int to = 0; to < count; ++to) header += cell("dev" + std::to_string(to), 7);
  std::cout << without_trailing_spaces(header) << '\n';
  for (int from = 0; from < count; ++from) {
    std::string row = "  " + cell("dev" + std::to_string(from), 6);
    for (int to = 0; to < count; ++to) row += cell(link_abbreviation(links[from][to].kind), 7);
    std::cout << without_trailing_spaces(row) << '\n';
  }
  std::cout << "  X = same device, NV = NVLink, XGMI = AMD Infinity Fabric, PCIE = PCIe,\n"
               "  HOST = through host memory, ? = unknown\n";
  if (count < 2) return;
  std::cout << "\n  from  to  kind         peer access    native atomics  rank\n";
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      const auto& info = links[from][to];
      std::cout << "  " << cell(std::to_string(from), 6) << cell(std::to_string(to), 4)
                << cell(sluice::to_string(info.kind), 13)
                << cell(info.peer_access_possible ? "possible" : "not possible", 15)
                << cell(info.native_atomics ? "yes" : "no", 16)
                << (info.performance_rank < 0 ? std::string("unknown")
                                              : std::to_string(info.performance_rank))
                << '\n';
    }
  }
}

}  // namespace

int run_info(const info_options& options) {
  if (options.device_count_only) {
    std::cout << sluice::device_count() << '\n';
    return 0;
  }
  const machine_facts facts = collect_facts();
  std::cout << "sluice info\n";
  print_facts(std::cout, facts);
  const auto host = sluice::detail::host_function_path();
  std::cout << "  host functions: " << host.path << ": " << host.evidence << '\n';
  const int count = static_cast<int>(facts.device_names.size());
  if (count == 0) {
    // Nothing per device to show; the 'devices:' line above says why.
    std::cout << "\nno stream priorities or links to show without a device\n";
    return 0;
  }
  print_priorities(count);
  print_links(count);
  return 0;
}

}  // namespace sluice::tool
