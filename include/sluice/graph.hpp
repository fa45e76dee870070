// sluice/graph.hpp: graphs: capture a stream's work once, replay it many times.
//
// Synopsis
//   class capture {                      // RAII; neither copyable nor movable
//     explicit capture(stream_ref origin);
//     ~capture();                        // not ended: the recording is discarded
//     graph end();
//   };
//   bool is_capturing(stream_ref) noexcept;
//   class graph {                        // immutable, move-only
//     std::size_t size(); std::string to_dot(); graph_exec instantiate();
//   };
//   enum class update_status { ok, topology_changed, kind_changed, not_updatable };
//   class graph_exec {                   // move-only
//     void launch(stream_ref); update_status update(const graph&);
//     std::string how();                 // (extension) "native", "replay: ..."
//   };
//
// While a stream captures, sluice operations enqueued on it are recorded, not
// run; a stream that waits on an event recorded (or on a stream) inside the
// capture joins it. docs/graphs.md says what is rejected during a capture
// (errc::capture_violation) and which backends have graphs.
#pragma once

#include <sluice/stream.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace sluice {

namespace detail {
struct capture_handle;  // defined by the backend
struct graph_program;   // the recorded program (src/graph)
struct exec_state;      // defined by the backend
struct graph_access;    // backend-side constructor of graphs
}  // namespace detail

class graph;

//! Records the sluice operations enqueued on `origin`, and on every stream that
//! joins it, from construction until end().
class capture {
 public:
  //! errc::capture_violation when origin is already capturing (its own capture
  //! or one it joined); errc::invalid_handle for an empty or destroyed stream.
  explicit capture(stream_ref origin);
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;
  capture(capture&&) = delete;
  capture& operator=(capture&&) = delete;
  //! Not ended: discards the recording (nothing recorded ever runs) and every
  //! member stream leaves the capture. Never throws; any thread.
  ~capture();
  //! Ends the capture; every member stream leaves it. errc::capture_violation:
  //! a joined stream that recorded something was not joined back to origin, a
  //! member stream was destroyed, or native work the backend could not
  //! capture; the capture is then over as if destroyed. A second call throws
  //! errc::invalid_handle. Any thread.
  graph end();

 private:
  std::shared_ptr<detail::capture_handle> state_;
};

//! Whether s is the origin of a capture or joined one, between the capture's
//! construction and its end(). False for empty or destroyed streams.
bool is_capturing(stream_ref s) noexcept;

class graph_exec;

//! A recorded program: immutable, move-only; owns nothing that runs.
class graph {
 public:
  graph(graph&&) noexcept = default;
  graph& operator=(graph&&) noexcept = default;
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  ~graph() = default;

  //! The vertices of to_dot(); 0 for a moved-from graph.
  std::size_t size() const noexcept;
  //! Graphviz: one vertex per copy, fill, copy_peer or copy_peer_batch call,
  //! host function, event record, write_value and wait_value; waits are edges,
  //! transitively reduced. errc::invalid_handle when moved from.
  std::string to_dot() const;
  //! An executable instance. errc::invalid_handle when moved from.
  graph_exec instantiate() const;

 private:
  friend struct detail::graph_access;
  explicit graph(std::shared_ptr<const detail::graph_program> p) noexcept
      : program_(std::move(p)) {}
  std::shared_ptr<const detail::graph_program> program_;
};

enum class update_status { ok, topology_changed, kind_changed, not_updatable };

//! An instantiated graph. Move-only; ~graph_exec() returns at once, its
//! launches still run to completion.
class graph_exec {
 public:
  graph_exec(graph_exec&&) noexcept = default;
  graph_exec& operator=(graph_exec&&) noexcept = default;
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;
  ~graph_exec() = default;

  //! One operation of s: it runs after s's earlier work, and s's later work
  //! waits for every recorded operation. s belongs to the graph's device or to
  //! a device of one of its streams (else errc::invalid_argument); a capturing
  //! s is errc::capture_violation. Thread-safe; launches of one exec run one
  //! after another in call order, whatever their streams (GRAPH-3).
  void launch(stream_ref s) const;
  //! Later launches use g's arguments when g has the same shape (ok); else
  //! topology_changed, kind_changed or not_updatable and nothing changes. Not
  //! concurrently with launch() or update() of this exec.
  update_status update(const graph& g);
  //! (extension) How launches run: "native" (one launch of the vendor's own
  //! graph, CUDA), "replay: <why>" (sluice's replay of the recorded operations
  //! on lanes it owns, and why not native), or "host executor" (the host
  //! backend). A launch while a trace is collected replays (docs/graphs.md).
  //! errc::invalid_handle when moved from.
  std::string how() const;

 private:
  friend struct detail::graph_access;
  explicit graph_exec(std::shared_ptr<detail::exec_state> s) noexcept : state_(std::move(s)) {}
  std::shared_ptr<detail::exec_state> state_;
};

const char* to_string(update_status s) noexcept;

}  // namespace sluice
