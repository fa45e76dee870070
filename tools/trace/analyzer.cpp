#include "trace/analyzer.hpp"

#include "trace/analyzer_state.hpp"
#include "trace/intervals.hpp"
#include "trace/spill_file.hpp"
#include "trace/stream_ids.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

namespace sluice::tool {

namespace {

bool is_wait(const std::string& kind) { return kind == "wait" || kind == "wait_value"; }

}  // namespace

trace_analyzer::trace_analyzer(bool timeline) : s_(std::make_unique<state>()) {
  s_->timeline = timeline;
}
trace_analyzer::~trace_analyzer() = default;

void trace_analyzer::track(int device, std::uint64_t stream, const stream_track& t) {
  s_->tracks[{device, stream}] = t;
}

void trace_analyzer::clock_error(int device, double us) { s_->clock_errors[device] = us; }

void trace_analyzer::op(const traced_op& o) {
  state& s = *s_;
  if (s.finished) throw std::logic_error("trace_analyzer::op after finish()");
  std::size_t i = s.last_index;
  if (i == SIZE_MAX || s.last_id != o.stream) {
    const auto [it, fresh] = s.index.emplace(o.stream, s.streams.size());
    if (fresh) {
      s.streams.push_back(std::make_unique<stream_state>());
      s.streams.back()->device = o.device;
      s.streams.back()->id = o.stream;
    }
    i = it->second;
    s.last_index = i;
    s.last_id = o.stream;
  }
  stream_state& st = *s.streams[i];
  op_record r;
  r.start = o.start_us;
  r.end = o.end_us;
  r.seq = o.seq;
  r.waits_for_stream = o.waits_for_stream;
  r.waits_for_seq = o.waits_for_seq;
  auto kind = s.kind_ids.find(o.kind);
  if (kind == s.kind_ids.end()) {
    kind = s.kind_ids.emplace(o.kind, static_cast<std::uint32_t>(s.kinds.size())).first;
    s.kinds.push_back(o.kind);
  }
  r.kind = kind->second;
  r.wait = is_wait(o.kind) ? 1 : 0;
  r.has_enqueue = o.has_enqueue ? 1 : 0;
  r.enqueued = o.enqueued_us;
  r.on_host = o.on_host ? 1 : 0;
  if (o.kernel) {
    auto& k = s.kernels[{i, r.kind}];
    if (k.count == 0) k.first = s.kernel_order++;
    ++k.count;
    k.total_us += o.end_us - o.start_us;
  }
  if (o.kind == "graph_launch") ++s.graph_launches;
  if (st.ops.size() > 0 && o.seq < st.last_seq) st.seq_sorted = false;
  st.last_seq = o.seq;
  st.ops.push(s.spill(), r);
  ++s.operations;
  s.first = s.any ? std::min(s.first, o.start_us) : o.start_us;
  s.last = s.any ? std::max(s.last, o.end_us) : o.end_us;
  s.any = true;
}

void trace_analyzer::graph_op(const traced_graph_op& g) {
  state& s = *s_;
  if (s.finished) throw std::logic_error("trace_analyzer::graph_op after finish()");
  auto& acc = s.graph_ops[{{g.device, g.stream}, g.kind}];
  if (acc.count == 0) acc.first = s.graph_order++;
  ++acc.count;
  acc.total_us += g.end_us - g.start_us;
  ++s.graph_operations;
}

void trace_analyzer::source(const std::string& source_name, int rank) {
  s_->sources[rank] = source_name;
}

void trace_analyzer::note_alignment(const std::vector<rank_alignment>& alignment) {
  s_->a.alignment = alignment;
}

void trace_analyzer::range(const traced_range& r) {
  state& s = *s_;
  const std::uint64_t number = s.range_count++;
  if (s.timeline && s.drawn_ranges.size() < max_drawn_ranges) s.drawn_ranges.push_back(r);
  const double d = r.end_us - r.start_us;
  if (r.comm) {
    // A comm operation: its own table, not the trace_ranges'.
    const auto [it, fresh] = s.comm_index.emplace(std::make_pair(r.stream, r.name), s.comm.size());
    if (fresh) {
      comm_acc acc;
      acc.device = r.device;
      acc.stream = r.stream;
      acc.s.name = r.name;
      acc.s.engine = r.engine;
      acc.first_start = r.start_us;
      s.comm.push_back(std::move(acc));
    }
    comm_acc& acc = s.comm[it->second];
    acc.first_start = std::min(acc.first_start, r.start_us);
    ++acc.s.count;
    acc.s.bytes += r.bytes;
    acc.s.total_us += d;
    s.comm_spans[rank_of_stream(r.stream)].emplace_back(r.start_us, r.end_us);
    return;
  }
  const auto [it, fresh] = s.range_index.emplace(std::make_pair(r.stream, r.name), s.ranges.size());
  if (fresh) {
    range_acc acc;
    acc.s.device = r.device;
    acc.s.stream = r.stream;
    acc.s.name = r.name;
    acc.s.shortest_us = acc.s.longest_us = d;
    acc.first_start = r.start_us;
    acc.first_index = number;
    s.ranges.push_back(std::move(acc));
  }
  range_acc& acc = s.ranges[it->second];
  if (r.start_us < acc.first_start) {
    acc.first_start = r.start_us;
    acc.first_index = number;
    acc.s.device = r.device;
  }
  ++acc.s.count;
  acc.s.total_us += d;
  acc.s.shortest_us = std::min(acc.s.shortest_us, d);
  acc.s.longest_us = std::max(acc.s.longest_us, d);
}

const trace_analysis& trace_analyzer::finish() {
  state& s = *s_;
  if (s.finished) return s.a;
  s.finished = true;
  trace_analysis& a = s.a;
  a.operations = s.operations;
  a.span_us = s.any ? s.last - s.first : 0;
  a.clock_error_us = s.clock_errors;
  constexpr std::size_t block = record_log<op_record>::block;
  // Per stream, its operations in seq order (sorted here only where the
  // trace had them out of order), then one pass: busy intervals merged as
  // they come (their starts in order, as a stream runs them; otherwise
  // sorted), waits, span.
  double latest = -1;
  std::size_t si = 0, sk = 0;
  for (std::size_t i = 0; i < s.streams.size(); ++i) {
    stream_state& st = *s.streams[i];
    spill_file& f = *s.file;
    st.ops.flush(f);
    if (!st.seq_sorted) {
      std::vector<op_record> all;
      {
        log_reader<op_record> r(f, st.ops);
        op_record o;
        while (r.next(o)) all.push_back(o);
      }
      std::sort(all.begin(), all.end(),
                [](const op_record& x, const op_record& y) { return x.seq < y.seq; });
      st.ops = record_log<op_record>();
      for (const op_record& o : all) st.ops.push(f, o);
      st.ops.flush(f);
    }
    stream_summary sum;
    sum.device = st.device;
    sum.stream = st.id;
    const auto t = s.tracks.find({st.device, st.id});
    if (t != s.tracks.end()) {
      sum.name = t->second.name;
      sum.about = t->second.has_priority
                      ? "native priority " + std::to_string(t->second.native_priority)
                      : t->second.track;
    }
    sum.operations = st.ops.size();
    double lo = 0, hi = 0;
    bool in_order = true, open = false, started = false;
    double last_start = 0;
    interval cur;
    const auto close = [&] {
      if (!open) return;
      st.busy.push(f, cur);
      sum.busy_us += cur.second - cur.first;
    };
    log_reader<op_record> r(f, st.ops);
    op_record o;
    for (std::size_t k = 0; r.next(o); ++k) {
      if (k % block == 0) st.block_first_seq.push_back(o.seq);
      if (o.end > latest) {
        latest = o.end;
        si = i;
        sk = k;
      }
      lo = k == 0 ? o.start : std::min(lo, o.start);
      hi = k == 0 ? o.end : std::max(hi, o.end);
      if (o.wait != 0) {
        ++sum.waits;
        sum.waiting_us += o.end - o.start;
        continue;
      }
      if (!in_order || o.end <= o.start) continue;
      if (started && o.start < last_start) {
        in_order = false;
        continue;
      }
      started = true;
      last_start = o.start;
      if (open && o.start <= cur.second) {
        cur.second = std::max(cur.second, o.end);
      } else {
        if (open) {
          sum.largest_gap_us = std::max(sum.largest_gap_us, o.start - cur.second);
          close();
        }
        cur = {o.start, o.end};
        open = true;
      }
    }
    if (in_order) {
      close();
    } else {
      // Starts out of order: this stream's busy intervals sorted in memory.
      intervals mine;
      log_reader<op_record> again(f, st.ops);
      while (again.next(o))
        if (o.wait == 0) mine.emplace_back(o.start, o.end);
      const intervals busy = merged(std::move(mine));
      st.busy = record_log<interval>();
      sum.busy_us = 0;
      sum.largest_gap_us = 0;
      for (std::size_t k = 0; k < busy.size(); ++k) {
        st.busy.push(f, busy[k]);
        sum.busy_us += busy[k].second - busy[k].first;
        if (k > 0)
          sum.largest_gap_us = std::max(sum.largest_gap_us, busy[k].first - busy[k - 1].second);
      }
    }
    st.busy.flush(f);
    sum.span_us = hi - lo;
    sum.idle_us = std::max(0.0, sum.span_us - sum.busy_us);
    a.streams.push_back(sum);
  }
  for (std::size_t i = 0; i < s.streams.size(); ++i) a.streams[i].in_flight_us = s.in_flight(i);
  a.trace_sources = s.sources;
  for (std::size_t i = 0; i < a.streams.size(); ++i)
    for (std::size_t j = i + 1; j < a.streams.size(); ++j) {
      // Several ranks: overlap within each rank (their clocks are apart).
      if (rank_of_stream(a.streams[i].stream) != rank_of_stream(a.streams[j].stream)) continue;
      // In flight covers busy: a stream with no in-flight time has no busy time.
      const double shorter = std::min(a.streams[i].in_flight_us, a.streams[j].in_flight_us);
      if (shorter <= 0) continue;
      overlap_pair p;
      p.a = i;
      p.b = j;
      p.overlap_us = intersection(*s.file, s.streams[i]->in_flight, s.streams[j]->in_flight);
      p.percent_of_shorter = 100.0 * p.overlap_us / shorter;
      const double shorter_busy = std::min(a.streams[i].busy_us, a.streams[j].busy_us);
      p.busy_overlap_us = intersection(*s.file, s.streams[i]->busy, s.streams[j]->busy);
      p.busy_percent = shorter_busy > 0 ? 100.0 * p.busy_overlap_us / shorter_busy : 0.0;
      a.overlaps.push_back(p);
    }
  // The critical path, backwards from the operation that ended last: a wait
  // that ended when its source did continues at the source, anything else at
  // the previous operation of its stream.
  if (s.any) {
    std::map<std::size_t, std::size_t> counts;
    double start = latest;
    std::size_t k = sk;
    for (std::size_t guard = 0; guard <= s.operations; ++guard) {
      const op_record o = s.record(si, k);
      ++counts[si];
      ++a.path.operations;
      start = o.start;
      bool has_prev = k > 0;
      double prev_end = has_prev ? s.record(si, k - 1).end : 0;
      std::size_t source_stream = 0, source_k = 0;
      bool source = false;
      if (o.waits_for_stream != 0) {
        const auto it = s.index.find(o.waits_for_stream);
        if (it != s.index.end() && s.find_seq(it->second, o.waits_for_seq, &source_k)) {
          source = true;
          source_stream = it->second;
        }
      }
      if (source && (!has_prev || s.record(source_stream, source_k).end >= prev_end)) {
        si = source_stream;
        k = source_k;
      } else if (has_prev) {
        --k;
      } else {
        break;
      }
    }
    a.path.length_us = latest - start;
    for (const auto& c : counts) a.path.per_stream.emplace_back(c.first, c.second);
  }
  // Kernels per stream (the table's order) and name (first seen first).
  {
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, kernel_summary>> listed;
    for (const auto& [key, k] : s.kernels) {
      kernel_summary ks;
      ks.stream_label = label_of(a.streams[key.first]);
      ks.name = s.kinds[key.second];
      ks.count = k.count;
      ks.total_us = k.total_us;
      listed.push_back({{key.first, k.first}, std::move(ks)});
    }
    std::sort(listed.begin(), listed.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& l : listed) a.kernels.push_back(std::move(l.second));
  }
  // Graph launches' operations per stream (by id) and kind (first seen first).
  a.graph_launches = s.graph_launches;
  a.graph_operations = s.graph_operations;
  {
    std::vector<std::pair<std::pair<std::uint64_t, std::size_t>, graph_summary>> listed;
    for (const auto& [key, g] : s.graph_ops) {
      graph_summary gs;
      const auto t = s.tracks.find(key.first);
      gs.stream_label = stream_label(key.first.first, key.first.second,
                                     t != s.tracks.end() ? t->second.name : std::string());
      gs.kind = key.second;
      gs.count = g.count;
      gs.total_us = g.total_us;
      listed.push_back({{key.first.second, g.first}, std::move(gs)});
    }
    std::sort(listed.begin(), listed.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& l : listed) a.graph.push_back(std::move(l.second));
  }
  // trace_ranges per stream (in the table's order; streams with ranges only
  // after them) and name (by first start).
  const auto order = [&](std::uint64_t stream) {
    const auto it = s.index.find(stream);
    return it != s.index.end() ? it->second : a.streams.size();
  };
  std::vector<const range_acc*> sorted;
  for (const range_acc& r : s.ranges) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [&](const range_acc* x, const range_acc* y) {
    const std::size_t ox = order(x->s.stream), oy = order(y->s.stream);
    if (ox != oy) return ox < oy;
    if (x->s.stream != y->s.stream) return x->s.stream < y->s.stream;
    if (x->first_start != y->first_start) return x->first_start < y->first_start;
    return x->first_index < y->first_index;
  });
  for (const range_acc* r : sorted) {
    range_summary rs = r->s;
    const auto t = s.tracks.find({rs.device, rs.stream});
    rs.stream_label = stream_label(rs.device, rs.stream, t != s.tracks.end() ? t->second.name : "");
    a.ranges.push_back(std::move(rs));
  }
  // Comm operations per stream (the table's order) and name (by first start).
  {
    std::vector<const comm_acc*> listed;
    for (const comm_acc& c : s.comm) listed.push_back(&c);
    std::sort(listed.begin(), listed.end(), [&](const comm_acc* x, const comm_acc* y) {
      const std::size_t ox = order(x->stream), oy = order(y->stream);
      if (ox != oy) return ox < oy;
      if (x->stream != y->stream) return x->stream < y->stream;
      return x->first_start < y->first_start;
    });
    for (const comm_acc* c : listed) {
      trace_analysis::comm_summary cs = c->s;
      const auto t = s.tracks.find({c->device, c->stream});
      cs.stream_label =
          stream_label(c->device, c->stream, t != s.tracks.end() ? t->second.name : "");
      a.comm.push_back(std::move(cs));
    }
  }
  // Per rank: the time its comm operations were in flight, and how much of it
  // its streams were busy (subtracting each stream's busy intervals, in order,
  // from what is still uncovered).
  for (auto& [rank, spans] : s.comm_spans) {
    intervals uncovered = merged(std::move(spans));
    trace_analysis::rank_comm rc;
    rc.rank = rank;
    for (const interval& x : uncovered) rc.comm_us += x.second - x.first;
    for (std::size_t i = 0; i < s.streams.size(); ++i) {
      if (rank_of_stream(s.streams[i]->id) != rank) continue;
      log_reader<interval> busy(*s.file, s.streams[i]->busy);
      intervals left;
      std::size_t u = 0;
      interval b;
      bool more = busy.next(b);
      for (; u < uncovered.size(); ++u) {
        interval x = uncovered[u];
        while (more && b.second <= x.first) more = busy.next(b);
        while (more && b.first < x.second) {
          if (b.first > x.first) left.emplace_back(x.first, b.first);
          x.first = std::max(x.first, b.second);
          if (x.first >= x.second) break;
          if (b.second <= x.second)
            more = busy.next(b);
          else
            break;
        }
        if (x.first < x.second) left.push_back(x);
      }
      uncovered.swap(left);
    }
    double still = 0;
    for (const interval& x : uncovered) still += x.second - x.first;
    rc.covered_us = rc.comm_us - still;
    a.comm_overlap.push_back(rc);
  }
  return a;
}

trace_analysis analyze(const std::vector<traced_op>& ops, const stream_tracks& tracks,
                       const std::vector<traced_range>& ranges, const std::string& source_name) {
  trace_analyzer z;
  if (!source_name.empty()) z.source(source_name, -1);
  for (const auto& t : tracks) z.track(t.first.first, t.first.second, t.second);
  for (const traced_op& o : ops) z.op(o);
  for (const traced_range& r : ranges) z.range(r);
  return z.finish();
}

}  // namespace sluice::tool
