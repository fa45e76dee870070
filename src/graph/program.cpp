// The recorded program's shape: edge reduction, Graphviz text and update()'s
// comparison (program.hpp).
#include "graph/program.hpp"

#include "checks.hpp"
#include "test_mutation.hpp"

#include <algorithm>
#include <sstream>

namespace sluice {

const char* to_string(update_status s) noexcept {
  switch (s) {
    case update_status::ok: return "ok";
    case update_status::topology_changed: return "topology_changed";
    case update_status::kind_changed: return "kind_changed";
    case update_status::not_updatable: return "not_updatable";
  }
  return "unknown";
}

namespace detail {

const char* to_string(vertex_kind k) noexcept {
  switch (k) {
    case vertex_kind::copy: return "copy";
    case vertex_kind::fill: return "fill";
    case vertex_kind::copy_peer: return "copy_peer";
    case vertex_kind::copy_peer_batch: return "copy_peer_batch";
    case vertex_kind::host_func: return "host_func";
    case vertex_kind::record: return "record";
    case vertex_kind::write_value: return "write_value";
    case vertex_kind::wait_value: return "wait_value";
    case vertex_kind::native: return "native";
  }
  return "unknown";
}

void reduce_edges(graph_program& p) {
  // Vertices are in recording order and every edge points backwards, so
  // ancestors of a vertex are known once its deps' ancestors are.
  const std::size_t n = p.vertices.size();
  std::vector<std::vector<bool>> ancestors(n, std::vector<bool>(n, false));
  for (std::size_t v = 0; v < n; ++v) {
    auto& deps = p.vertices[v].deps;
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    if (mutation::is(mutation::kind::graph_edges_unreduced)) continue;
    for (std::size_t d : deps) {
      ancestors[v][d] = true;
      for (std::size_t a = 0; a < d; ++a)
        if (ancestors[d][a]) ancestors[v][a] = true;
    }
    // d is redundant when another dep already has it as an ancestor.
    std::vector<std::size_t> kept;
    for (std::size_t d : deps) {
      bool implied = false;
      for (std::size_t other : deps)
        if (other != d && ancestors[other][d]) implied = true;
      if (!implied) kept.push_back(d);
    }
    deps = std::move(kept);
  }
}

std::string to_dot(const graph_program& p) {
  std::ostringstream out;
  out << "digraph sluice_graph {\n";
  for (std::size_t v = 0; v < p.vertices.size(); ++v) {
    const vertex& x = p.vertices[v];
    out << "  v" << v << " [label=\"" << to_string(x.kind) << "\", kind=\"" << to_string(x.kind)
        << "\", device=" << x.device << ", stream=" << x.stream;
    if (x.bytes != 0) out << ", bytes=" << x.bytes;
    if (!x.path.empty()) out << ", path=\"" << x.path << "\"";
    out << "];\n";
  }
  for (std::size_t v = 0; v < p.vertices.size(); ++v)
    for (std::size_t d : p.vertices[v].deps) out << "  v" << d << " -> v" << v << ";\n";
  out << "}\n";
  return out.str();
}

update_status compare_programs(const graph_program& current, const graph_program& next) {
  if (current.vertices.size() != next.vertices.size()) return update_status::topology_changed;
  for (std::size_t v = 0; v < current.vertices.size(); ++v)
    if (current.vertices[v].deps != next.vertices[v].deps) return update_status::topology_changed;
  for (std::size_t v = 0; v < current.vertices.size(); ++v)
    if (current.vertices[v].kind != next.vertices[v].kind) return update_status::kind_changed;
  for (std::size_t v = 0; v < current.vertices.size(); ++v) {
    const vertex& a = current.vertices[v];
    const vertex& b = next.vertices[v];
    if (a.device != b.device || a.path != b.path || a.signature != b.signature)
      return update_status::not_updatable;
  }
  return update_status::ok;
}

std::vector<std::vector<std::size_t>> successors(const graph_program& p) {
  std::vector<std::vector<std::size_t>> out(p.vertices.size());
  for (std::size_t v = 0; v < p.vertices.size(); ++v)
    for (std::size_t d : p.vertices[v].deps) out[d].push_back(v);
  return out;
}

}  // namespace detail

std::size_t graph::size() const noexcept { return program_ ? program_->vertices.size() : 0; }

std::string graph::to_dot() const {
  if (!program_)
    detail::fail(errc::invalid_handle, "sluice::graph::to_dot", "the graph is empty (moved from)");
  return detail::to_dot(*program_);
}

}  // namespace sluice
