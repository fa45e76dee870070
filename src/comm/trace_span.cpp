// sluice::comm's spans in a trace: one per stream of a batch, with what a
// reader of the trace asks of an operation (engine, peers, bytes, match
// numbers, whether it was staged or cut in pieces).
#include "comm/trace_span.hpp"

#include "comm/impl/communicator_state.hpp"
#include "trace.hpp"

#include <string>
#include <utility>
#include <vector>

namespace sluice::comm::detail {

namespace {

void append_message(std::string& a, const message& m) {
  switch (m.kind) {
    case op_kind::send:
    case op_kind::recv: a += "\"peer\": " + std::to_string(m.peer); break;
    case op_kind::broadcast: a += "\"root\": " + std::to_string(m.peer); break;
    default: a += "\"peer\": \"all\""; break;
  }
  a += ", \"bytes\": " + std::to_string(bytes_of(m));
  if (m.kind == op_kind::send || m.kind == op_kind::recv)
    a += ", \"match\": " + std::to_string(m.tag);
  if (m.kind == op_kind::all_reduce) a += std::string(", \"reduce\": \"") + to_string(m.op) + '"';
  if (m.stage_in.device != nullptr || m.stage_out.device != nullptr) a += ", \"staged\": true";
  if (m.piece != 0) a += ", \"pieces\": " + std::to_string(pieces_of(m, bytes_of(m)));
}

}  // namespace

span open_span(const batch& b, std::size_t index) {
  span sp;
  std::vector<const message*> mine;
  std::size_t bytes = 0;
  for (const message& m : b.messages)
    if (m.stream == index) {
      mine.push_back(&m);
      bytes += bytes_of(m);
    }
  const bool grouped = b.grouped || mine.size() != 1;
  sp.name = grouped ? "group" : to_string(mine.front()->kind);
  std::string a = std::string("\"engine\": \"") + to_string(b.comm->kind) +
                  "\", \"rank\": " + std::to_string(b.comm->rank) +
                  ", \"ranks\": " + std::to_string(b.comm->size) + ", ";
  if (grouped) {
    // The group's messages on this stream, each with its peer and match number.
    a += "\"peers\": [";
    for (std::size_t i = 0; i < mine.size(); ++i)
      a += (i ? ", " : "") + std::to_string(mine[i]->peer);
    a += "], \"bytes\": " + std::to_string(bytes) + ", \"messages\": [";
    for (std::size_t i = 0; i < mine.size(); ++i) {
      a += i ? ", {\"op\": \"" : "{\"op\": \"";
      a += to_string(mine[i]->kind);
      a += "\", ";
      append_message(a, *mine[i]);
      a += '}';
    }
    a += "], \"group_streams\": " + std::to_string(b.streams.size());
  } else {
    append_message(a, *mine.front());
    if (b.collective != 0) a += ", \"collective\": " + std::to_string(b.collective);
  }
  sp.id = sluice::detail::trace::new_range_id();
  sluice::detail::trace::note_span(sp.id, "comm", std::move(a));
  return sp;
}

}  // namespace sluice::comm::detail
