// A graph_exec's vendor graph, where the vendor's graphs can hold its program
// (api::native_graphs: CUDA). At instantiate the exec makes the same calls a
// replay makes, once, on its lanes while the vendor captures them (the first
// lane captures, the others join it through events and are joined back); a
// launch is then one vendor graph launch, plus what sluice keeps for each
// event the graph records. Programs with operations whose calls cannot be
// captured as they are (host functions, peer copies, flag operations,
// several devices) and an instantiate while a trace is collected stay with
// the replay; so does every launch while a trace is collected (each
// operation shows in the trace then). docs/graphs.md says which way a graph
// goes.
#pragma once

#include "graph.hpp"
#include "vendor.hpp"

#include <sluice/event.hpp>
#include <sluice/stream.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::detail {

struct native_graph {
  api::graph_exec_t exec{};
  std::vector<std::shared_ptr<event_link>> records;  // the events its record nodes record
  event_state* end = nullptr;  // the exec's end event, which its last node records
  native_graph() = default;
  native_graph(const native_graph&) = delete;
  native_graph& operator=(const native_graph&) = delete;
  ~native_graph();
};

//! The vendor graph of p laid out on `lanes` (lane_of, signals: the exec's
//! plan; points: its events per signalling vertex), ending with a record of
//! `end` (a later replay launch waits for it). Null, with `why` set,
//! where p cannot be one or the vendor's capture failed; nothing of the
//! attempt stays behind then (the lanes are out of the capture).
std::unique_ptr<native_graph> build_native(const graph_program& p,
                                           const std::vector<std::size_t>& lane_of,
                                           const std::vector<char>& signals,
                                           const std::vector<sluice::stream>& lanes,
                                           std::vector<std::optional<sluice::event>>& points,
                                           const sluice::event& end, std::string* why);

//! Launches g onto st (after its checks); false, with nothing enqueued,
//! where an event that g records was destroyed since (the replay handles it).
bool launch_native(const native_graph& g, stream_state& st, const char* api_name);

}  // namespace sluice::detail
