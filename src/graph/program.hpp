// The recorded program of a graph, the same on every backend: a DAG of typed
// vertices in recording order, each with the vertices it waits for (its
// edges, transitively reduced when the capture ends) and the backend's work
// for it. to_dot() and update()'s comparison are computed here, so that
// every backend shows the same shape for the same program.
#pragma once

#include <sluice/graph.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::detail {

enum class vertex_kind {
  copy,
  fill,
  copy_peer,
  copy_peer_batch,
  host_func,
  record,
  write_value,
  wait_value,
  native  //!< work on a native handle (GPU backends that capture it)
};

const char* to_string(vertex_kind k) noexcept;

//! What a backend runs for a vertex; the backend's own type.
struct vertex_work {
  virtual ~vertex_work() = default;
};

struct vertex {
  vertex_kind kind = vertex_kind::copy;
  int device = 0;                 //!< the device of the stream it was recorded on
  std::uint64_t stream = 0;       //!< that stream's id in traces (an attribute of to_dot)
  std::size_t bytes = 0;          //!< copies and fills
  std::string path;               //!< peer copies: the path reported at capture
  std::string signature;          //!< what update() needs equal beyond kind, device and path
                                  //!< (memory kinds, direction), as the backend can tell
  std::vector<std::size_t> deps;  //!< earlier vertices it waits for (ascending)
  std::shared_ptr<vertex_work> work;
};

}  // namespace sluice::detail

namespace sluice::detail {

struct graph_program {
  std::vector<vertex> vertices;
  int device = 0;  //!< the origin's device
};

//! Drops every edge implied by the others (u -> w when u -> ... -> w already).
void reduce_edges(graph_program& p);

std::string to_dot(const graph_program& p);

//! update(): whether `next` can replace `current` (ok) or how it differs.
update_status compare_programs(const graph_program& current, const graph_program& next);

//! The successors of each vertex (the reverse of deps).
std::vector<std::vector<std::size_t>> successors(const graph_program& p);

//! Opens the private constructors of graph and graph_exec for the backends.
struct graph_access {
  static graph make_graph(std::shared_ptr<const graph_program> p) { return graph(std::move(p)); }
  static const std::shared_ptr<const graph_program>& program(const graph& g) noexcept {
    return g.program_;
  }
  static graph_exec make_exec(std::shared_ptr<exec_state> s) { return graph_exec(std::move(s)); }
  static exec_state* state(const graph_exec& e) noexcept { return e.state_.get(); }
};

}  // namespace sluice::detail
