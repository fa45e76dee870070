#include "chrome_json.hpp"

#include <cstdio>

namespace sluice::detail::trace {

void append_escaped(std::string& out, const std::string& text) {
  for (const char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(ch));
          out += code;
        } else {
          out += ch;
        }
    }
  }
}

void append_enqueue_event(std::string& out, const record& r, std::int64_t origin) {
  out += "{\"name\": \"";
  out += r.kind;
  out += "\", \"cat\": \"enqueue\", \"ph\": \"i\", \"s\": \"t\", \"pid\": ";
  append_int(out, host_pid);
  out += ", \"tid\": ";
  append_int(out, r.host_thread);
  out += ", \"ts\": ";
  append_us(out, r.enqueue_ns, origin);
  out += ", \"args\": {\"stream\": ";
  append_int(out, r.stream);
  out += ", \"device\": ";
  append_int(out, r.device);
  out += "}}";
}

void append_op_event(std::string& out, const record& r, std::int64_t origin) {
  out += "{\"name\": \"";
  // A labelled operation (a Kokkos kernel, sluice::kokkos) shows its label;
  // its kind goes to the args.
  if (r.label.empty())
    out += r.kind;
  else
    append_escaped(out, r.label);
  // An operation run by a graph launch: on the track of the stream it was
  // captured from, in a category of its own (it is not a position of that
  // stream: no seq, no waits drawn to it).
  const bool in_graph = r.graph_stream != 0;
  out +=
      in_graph ? "\", \"cat\": \"graph\", \"ph\": \"X\", " : "\", \"cat\": \"op\", \"ph\": \"X\", ";
  append_where(out, r.device, in_graph ? r.graph_stream : r.stream);
  out += ", \"ts\": ";
  append_us(out, r.start_ns, origin);
  out += ", \"dur\": ";
  append_us(out, r.end_ns, r.start_ns);
  if (in_graph) {
    out += ", \"args\": {\"launch\": ";
    append_int(out, r.launch);
    out += ", \"vertex\": ";
    append_int(out, r.vertex);
    out += ", \"kind\": \"";
    out += r.kind;
    out += "\", \"lane\": ";
    append_int(out, r.stream);
  } else {
    out += ", \"args\": {\"seq\": ";
    append_int(out, r.seq);
    if (r.launch != 0) {
      out += ", \"launch\": ";
      append_int(out, r.launch);
    }
  }
  // (An operation run by a launch was enqueued by it: the launch's record
  // has the host side.)
  if (!in_graph && r.host_thread == 0) {
    // Work the user enqueued on the stream directly (a trace source that
    // sees it: CUPTI): no sluice call, no host track.
    out += ", \"through_sluice\": false";
  } else if (!in_graph) {
    out += ", \"enqueued_us\": ";
    append_us(out, r.enqueue_ns, origin);
    out += ", \"host_thread\": ";
    append_int(out, r.host_thread);
  }
  if (r.bytes != 0) {
    out += ", \"bytes\": ";
    append_int(out, r.bytes);
  }
  if (r.path != nullptr) {
    out += ", \"path\": \"";
    out += r.path;
    out += '"';
  }
  if (r.from_stream != 0 && !in_graph) {
    out += ", \"waits_for_stream\": ";
    append_int(out, r.from_stream);
    out += ", \"waits_for_seq\": ";
    append_int(out, r.from_seq);
  }
  if (!r.label.empty() && !in_graph) {
    out += ", \"kind\": \"";
    out += r.kind;
    out += '"';
  }
  out += "}}";
}

void append_record_events(std::string& out, const record& r, std::int64_t origin_ns) {
  append_enqueue_event(out, r, origin_ns);
  if (is_marker(r)) return;
  out += ",\n";
  append_op_event(out, r, origin_ns);
}

}  // namespace sluice::detail::trace
