// In-flight time (stream_summary::in_flight_us): each operation from when it
// could start to its end, merged per stream.
#include "trace/analyzer_state.hpp"

namespace sluice::tool {

double trace_analyzer::state::in_flight(std::size_t i) {
  stream_state& st = *streams[i];
  spill_file& f = *file;
  // Calls emit(interval) for each operation, in seq order.
  const auto each = [&](const auto& emit) {
    bool has_ready = false;
    double ready = 0;  // the latest end of the stream's operations so far
    const auto ended = [&](double t) {
      ready = has_ready ? std::max(ready, t) : t;
      has_ready = true;
    };
    log_reader<op_record> r(f, st.ops);
    op_record o;
    while (r.next(o)) {
      if (o.wait != 0) {
        ended(o.end);
        std::size_t k = 0;
        const auto source = o.waits_for_stream != 0 ? index.find(o.waits_for_stream) : index.end();
        if (source != index.end() && find_seq(source->second, o.waits_for_seq, &k))
          ended(record(source->second, k).end);
        continue;
      }
      if (o.end > o.start) {
        double from = o.start;
        if (o.has_enqueue != 0 && o.on_host == 0)
          from = std::min(o.start, has_ready ? std::max(o.enqueued, ready) : o.enqueued);
        emit(interval{from, o.end});
      }
      ended(o.end);
    }
  };
  double total = 0;
  bool in_order = true, open = false;
  interval cur;
  each([&](const interval& x) {
    if (!in_order) return;
    if (open && x.first < cur.first) {
      in_order = false;
      return;
    }
    if (open && x.first <= cur.second) {
      cur.second = std::max(cur.second, x.second);
      return;
    }
    if (open) {
      st.in_flight.push(f, cur);
      total += cur.second - cur.first;
    }
    cur = x;
    open = true;
  });
  if (in_order) {
    if (open) {
      st.in_flight.push(f, cur);
      total += cur.second - cur.first;
    }
  } else {
    // Starts out of order: merged in memory.
    intervals all;
    each([&](const interval& x) { all.push_back(x); });
    st.in_flight = record_log<interval>();
    total = 0;
    for (const interval& x : merged(std::move(all))) {
      st.in_flight.push(f, x);
      total += x.second - x.first;
    }
  }
  st.in_flight.flush(f);
  return total;
}

}  // namespace sluice::tool
