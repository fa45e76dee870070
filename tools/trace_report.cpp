#include "trace_report.hpp"

#include "commands.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace sluice::tool {
namespace {

// --- a small JSON reader (objects, arrays, strings, numbers, literals) -------

struct value {
  enum class type { null, boolean, number, string, array, object } t = type::null;
  double number = 0;
  std::string text;
  std::vector<value> items;
  std::vector<std::pair<std::string, value>> fields;

  const value* field(const std::string& name) const {
    for (const auto& f : fields)
      if (f.first == name) return &f.second;
    return nullptr;
  }
  double number_or(const std::string& name, double fallback) const {
    const value* v = field(name);
    return v != nullptr && v->t == type::number ? v->number : fallback;
  }
  std::string text_or(const std::string& name, const std::string& fallback) const {
    const value* v = field(name);
    return v != nullptr && v->t == type::string ? v->text : fallback;
  }
};

class parser {
 public:
  explicit parser(const std::string& s) : s_(s) {}
  value document() {
    value v = parse();
    skip();
    if (i_ != s_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("malformed trace JSON at byte " + std::to_string(i_) + ": " + what);
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  value parse() {
    const char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') {
      value v;
      v.t = value::type::string;
      v.text = string();
      return v;
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
    return literal();
  }
  value object() {
    value v;
    v.t = value::type::object;
    expect('{');
    if (peek() == '}') {
      ++i_;
      return v;
    }
    for (;;) {
      if (peek() != '"') fail("expected a field name");
      std::string name = string();
      expect(':');
      v.fields.emplace_back(std::move(name), parse());
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return v;
    }
  }
  value array() {
    value v;
    v.t = value::type::array;
    expect('[');
    if (peek() == ']') {
      ++i_;
      return v;
    }
    for (;;) {
      v.items.push_back(parse());
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return v;
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) fail("unterminated escape");
        const char e = s_[i_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': {
            if (i_ + 4 > s_.size()) fail("short \\u escape");
            const unsigned code = static_cast<unsigned>(std::stoul(s_.substr(i_, 4), nullptr, 16));
            i_ += 4;
            c = code < 0x80 ? static_cast<char>(code) : '?';
            break;
          }
          default: c = e;  // \" \\ \/
        }
      }
      out += c;
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  value number() {
    skip();
    const char* begin = s_.c_str() + i_;
    char* end = nullptr;
    const double d = std::strtod(begin, &end);
    if (end == begin) fail("bad number");
    i_ += static_cast<std::size_t>(end - begin);
    value v;
    v.t = value::type::number;
    v.number = d;
    return v;
  }
  value literal() {
    skip();
    value v;
    for (const char* word : {"true", "false", "null"}) {
      const std::string w = word;
      if (s_.compare(i_, w.size(), w) == 0) {
        i_ += w.size();
        v.t = w == "null" ? value::type::null : value::type::boolean;
        v.number = w == "true" ? 1 : 0;
        return v;
      }
    }
    fail("unexpected character");
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

// --- interval arithmetic ----------------------------------------------------------

using intervals = std::vector<std::pair<double, double>>;

intervals merged(intervals v) {
  std::sort(v.begin(), v.end());
  intervals out;
  for (const auto& x : v) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

double length(const intervals& v) {
  double n = 0;
  for (const auto& x : v) n += x.second - x.first;
  return n;
}

double intersection(const intervals& a, const intervals& b) {
  double n = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first);
    const double hi = std::min(a[i].second, b[j].second);
    if (hi > lo) n += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return n;
}

bool is_wait(const std::string& kind) { return kind == "wait" || kind == "wait_value"; }

std::string label_of(const stream_summary& s) { return stream_label(s.device, s.stream, s.name); }

std::string us(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", v);
  return text;
}

//! A name inside a gnuplot single-quoted string: quotes doubled, control
//! characters as spaces.
std::string gnuplot_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\'')
      out += "''";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string stream_label(int device, std::uint64_t stream, const std::string& name) {
  return "d" + std::to_string(device) + "/s" + std::to_string(stream) +
         (name.empty() ? "" : " " + name);
}

std::vector<traced_op> read_trace(const std::string& json, stream_tracks* tracks,
                                  std::map<int, double>* clock_errors,
                                  std::vector<traced_range>* ranges) {
  const value doc = parser(json).document();
  const value* events = doc.t == value::type::array ? &doc : doc.field("traceEvents");
  if (events == nullptr || events->t != value::type::array)
    throw std::runtime_error("not a Chrome trace: no traceEvents array");
  std::vector<traced_op> ops;
  for (const value& e : events->items) {
    if (e.t != value::type::object) continue;
    const std::string ph = e.text_or("ph", "");
    if (ph == "M" && e.text_or("name", "") == "thread_name" && tracks != nullptr) {
      const value* args = e.field("args");
      if (args != nullptr) {
        stream_track& t = (*tracks)[{static_cast<int>(e.number_or("pid", 0)),
                                     static_cast<std::uint64_t>(e.number_or("tid", 0))}];
        t.track = args->text_or("name", "");
        t.name = args->text_or("stream_name", "");
        const value* priority = args->field("native_priority");
        t.has_priority = priority != nullptr && priority->t == value::type::number;
        if (t.has_priority) t.native_priority = static_cast<int>(priority->number);
      }
      continue;
    }
    if (ph == "M" && e.text_or("name", "") == "process_name" && clock_errors != nullptr) {
      const value* args = e.field("args");
      if (args != nullptr && args->field("clock_error_us") != nullptr)
        (*clock_errors)[static_cast<int>(e.number_or("pid", 0))] =
            args->number_or("clock_error_us", 0);
      continue;
    }
    if (ph == "X" && e.text_or("cat", "") == "range") {
      if (ranges != nullptr) {
        traced_range r;
        r.device = static_cast<int>(e.number_or("pid", 0));
        r.stream = static_cast<std::uint64_t>(e.number_or("tid", 0));
        r.name = e.text_or("name", "");
        r.start_us = e.number_or("ts", 0);
        r.end_us = r.start_us + e.number_or("dur", 0);
        ranges->push_back(std::move(r));
      }
      continue;
    }
    if (ph != "X" || e.text_or("cat", "") != "op") continue;
    traced_op o;
    o.device = static_cast<int>(e.number_or("pid", 0));
    o.stream = static_cast<std::uint64_t>(e.number_or("tid", 0));
    o.kind = e.text_or("name", "op");
    o.start_us = e.number_or("ts", 0);
    o.end_us = o.start_us + e.number_or("dur", 0);
    if (const value* args = e.field("args"); args != nullptr) {
      o.seq = static_cast<std::uint64_t>(args->number_or("seq", 0));
      o.waits_for_stream = static_cast<std::uint64_t>(args->number_or("waits_for_stream", 0));
      o.waits_for_seq = static_cast<std::uint64_t>(args->number_or("waits_for_seq", 0));
    }
    ops.push_back(std::move(o));
  }
  return ops;
}

trace_analysis analyze(const std::vector<traced_op>& ops, const stream_tracks& tracks,
                       const std::vector<traced_range>& ranges) {
  trace_analysis a;
  a.operations = ops.size();
  std::map<std::uint64_t, std::size_t> index;  // stream id -> index in a.streams
  std::vector<std::vector<const traced_op*>> per_stream;
  std::vector<intervals> busy;
  double first = 0, last = 0;
  bool any = false;
  for (const traced_op& o : ops) {
    auto [it, fresh] = index.emplace(o.stream, a.streams.size());
    if (fresh) {
      stream_summary s;
      s.device = o.device;
      s.stream = o.stream;
      const auto t = tracks.find({o.device, o.stream});
      if (t != tracks.end()) {
        s.name = t->second.name;
        s.about = t->second.has_priority
                      ? "native priority " + std::to_string(t->second.native_priority)
                      : t->second.track;
      }
      a.streams.push_back(s);
      per_stream.emplace_back();
      busy.emplace_back();
    }
    per_stream[it->second].push_back(&o);
    first = any ? std::min(first, o.start_us) : o.start_us;
    last = any ? std::max(last, o.end_us) : o.end_us;
    any = true;
  }
  a.span_us = any ? last - first : 0;
  for (std::size_t i = 0; i < a.streams.size(); ++i) {
    auto& list = per_stream[i];
    std::sort(list.begin(), list.end(),
              [](const traced_op* x, const traced_op* y) { return x->seq < y->seq; });
    stream_summary& s = a.streams[i];
    s.operations = list.size();
    intervals mine;
    double lo = list.front()->start_us, hi = list.front()->end_us;
    for (const traced_op* o : list) {
      lo = std::min(lo, o->start_us);
      hi = std::max(hi, o->end_us);
      if (is_wait(o->kind)) {
        ++s.waits;
        s.waiting_us += o->end_us - o->start_us;
      } else {
        mine.emplace_back(o->start_us, o->end_us);
      }
    }
    busy[i] = merged(mine);
    s.busy_us = length(busy[i]);
    s.span_us = hi - lo;
    s.idle_us = std::max(0.0, s.span_us - s.busy_us);
    for (std::size_t k = 1; k < busy[i].size(); ++k)
      s.largest_gap_us = std::max(s.largest_gap_us, busy[i][k].first - busy[i][k - 1].second);
  }
  for (std::size_t i = 0; i < a.streams.size(); ++i)
    for (std::size_t j = i + 1; j < a.streams.size(); ++j) {
      const double shorter = std::min(a.streams[i].busy_us, a.streams[j].busy_us);
      if (shorter <= 0) continue;
      overlap_pair p;
      p.a = i;
      p.b = j;
      p.overlap_us = intersection(busy[i], busy[j]);
      p.percent_of_shorter = 100.0 * p.overlap_us / shorter;
      a.overlaps.push_back(p);
    }
  // The critical path, backwards from the operation that ended last: a wait
  // that ended when its source did continues at the source, anything else at
  // the previous operation of its stream.
  if (any) {
    std::size_t si = 0, k = 0;
    double latest = -1;
    for (std::size_t i = 0; i < per_stream.size(); ++i)
      for (std::size_t j = 0; j < per_stream[i].size(); ++j)
        if (per_stream[i][j]->end_us > latest) {
          latest = per_stream[i][j]->end_us;
          si = i;
          k = j;
        }
    std::map<std::size_t, std::size_t> counts;
    double start = latest;
    for (std::size_t guard = 0; guard <= ops.size(); ++guard) {
      const traced_op* o = per_stream[si][k];
      ++counts[si];
      ++a.path.operations;
      start = o->start_us;
      const traced_op* prev = k > 0 ? per_stream[si][k - 1] : nullptr;
      const traced_op* source = nullptr;
      std::size_t source_stream = 0, source_k = 0;
      if (o->waits_for_stream != 0) {
        const auto it = index.find(o->waits_for_stream);
        if (it != index.end())
          for (std::size_t j = 0; j < per_stream[it->second].size(); ++j)
            if (per_stream[it->second][j]->seq == o->waits_for_seq) {
              source = per_stream[it->second][j];
              source_stream = it->second;
              source_k = j;
            }
      }
      if (source != nullptr && (prev == nullptr || source->end_us >= prev->end_us)) {
        si = source_stream;
        k = source_k;
      } else if (prev != nullptr) {
        --k;
      } else {
        break;
      }
    }
    a.path.length_us = latest - start;
    for (const auto& c : counts) a.path.per_stream.emplace_back(c.first, c.second);
  }
  // trace_ranges per stream (in the table's order; streams with ranges only
  // after them) and name (by first start).
  std::vector<const traced_range*> sorted;
  for (const traced_range& r : ranges) sorted.push_back(&r);
  const auto order = [&](const traced_range* r) {
    const auto it = index.find(r->stream);
    return it != index.end() ? it->second : a.streams.size();
  };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const traced_range* x, const traced_range* y) {
    const std::size_t ox = order(x), oy = order(y);
    if (ox != oy) return ox < oy;
    if (x->stream != y->stream) return x->stream < y->stream;
    return x->start_us < y->start_us;
  });
  std::map<std::pair<std::uint64_t, std::string>, std::size_t> range_index;
  for (const traced_range* r : sorted) {
    const double d = r->end_us - r->start_us;
    auto [it, fresh] = range_index.emplace(std::make_pair(r->stream, r->name), a.ranges.size());
    if (fresh) {
      range_summary rs;
      rs.device = r->device;
      rs.stream = r->stream;
      const auto t = tracks.find({r->device, r->stream});
      rs.stream_label = stream_label(r->device, r->stream, t != tracks.end() ? t->second.name : "");
      rs.name = r->name;
      rs.shortest_us = rs.longest_us = d;
      a.ranges.push_back(rs);
    }
    range_summary& rs = a.ranges[it->second];
    ++rs.count;
    rs.total_us += d;
    rs.shortest_us = std::min(rs.shortest_us, d);
    rs.longest_us = std::max(rs.longest_us, d);
  }
  return a;
}

std::string format_report(const trace_analysis& a, const std::string& file) {
  std::ostringstream out;
  out << "trace: " << file << ": " << a.operations << " operations on " << a.streams.size()
      << " streams, " << us(a.span_us) << " from the first start to the last end\n";
  if (!a.clock_error_us.empty()) {
    // Device times were mapped onto the host clock: against host functions'
    // times (host clock) they may be off by this much.
    out << "device clocks (device times on the host clock within +-):";
    for (const auto& e : a.clock_error_us) out << " device " << e.first << " " << us(e.second);
    out << "\n";
  }
  out << "streams (busy: operations other than waits; idle: the rest of the stream's span):\n";
  for (const stream_summary& s : a.streams) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", s.span_us > 0 ? 100.0 * s.busy_us / s.span_us : 0.0);
    out << "  " << label_of(s) << (s.about.empty() ? "" : " (" + s.about + ")") << ": "
        << s.operations << " operations, busy " << us(s.busy_us) << " of " << us(s.span_us) << " ("
        << pct << "), idle " << us(s.idle_us) << " (largest gap " << us(s.largest_gap_us) << "), "
        << s.waits << " waits (" << us(s.waiting_us) << ")\n";
  }
  out << "overlap (busy time of both streams at once, % of the shorter stream's busy time):\n";
  if (a.overlaps.empty()) out << "  (fewer than two busy streams)\n";
  // The pairs that overlap most first; at most 20 of them.
  std::vector<overlap_pair> pairs = a.overlaps;
  std::stable_sort(pairs.begin(), pairs.end(), [](const overlap_pair& x, const overlap_pair& y) {
    return x.overlap_us > y.overlap_us;
  });
  constexpr std::size_t shown = 20;
  if (pairs.size() > shown) {
    out << "  (the " << shown << " pairs with the most overlap of " << pairs.size() << ")\n";
    pairs.resize(shown);
  }
  for (const overlap_pair& p : pairs) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f%%", p.percent_of_shorter);
    out << "  " << label_of(a.streams[p.a]) << " x " << label_of(a.streams[p.b]) << ": "
        << us(p.overlap_us) << " (" << pct << ")\n";
  }
  out << "critical path: " << us(a.path.length_us) << ", " << a.path.operations << " operations";
  for (std::size_t i = 0; i < a.path.per_stream.size(); ++i)
    out << (i == 0 ? ": " : ", ") << label_of(a.streams[a.path.per_stream[i].first]) << " "
        << a.path.per_stream[i].second;
  out << "\n";
  if (!a.ranges.empty()) {
    out << "ranges (trace_range: begin to end marker; per stream and name, in the order of their "
           "first start):\n";
    constexpr std::size_t listed = 40;  // a range name per loop iteration would list thousands
    if (a.ranges.size() > listed)
      out << "  (the first " << listed << " of " << a.ranges.size() << " stream and name pairs)\n";
    for (std::size_t i = 0; i < std::min(listed, a.ranges.size()); ++i) {
      const range_summary& r = a.ranges[i];
      out << "  " << r.stream_label << ": \"" << r.name << "\" ";
      if (r.count == 1)
        out << us(r.total_us) << "\n";
      else
        out << r.count << " ranges, " << us(r.total_us) << " in all (" << us(r.shortest_us)
            << " to " << us(r.longest_us) << " each)\n";
    }
  }
  return out.str();
}

void write_timeline_png(const std::vector<traced_op>& ops, const trace_analysis& a,
                        const std::string& png, const std::vector<traced_range>& ranges) {
  const std::string data = png + ".dat";
  const std::string script = png + ".gnuplot";
  // Rows from the bottom: each stream, then its trace_ranges, a row per
  // nesting level (at most 4; deeper ones share the fourth); streams with
  // ranges only (no operation of their own) last.
  constexpr std::size_t max_levels = 4;
  std::map<std::uint64_t, std::vector<const traced_range*>> ranges_of;
  for (const traced_range& r : ranges) ranges_of[r.stream].push_back(&r);
  std::map<const traced_range*, std::size_t> level;
  std::map<std::uint64_t, std::size_t> levels;  // per stream with ranges
  for (auto& [stream, list] : ranges_of) {
    // By start, an enclosing range before those it encloses.
    std::stable_sort(list.begin(), list.end(), [](const traced_range* x, const traced_range* y) {
      return x->start_us != y->start_us ? x->start_us < y->start_us : x->end_us > y->end_us;
    });
    std::vector<double> open;  // end times of the enclosing ranges
    for (const traced_range* r : list) {
      while (!open.empty() && open.back() <= r->start_us) open.pop_back();
      level[r] = std::min(open.size(), max_levels - 1);
      levels[stream] = std::max(levels[stream], level[r] + 1);
      open.push_back(r->end_us);
    }
  }
  std::vector<std::string> row_labels;
  std::map<std::uint64_t, std::size_t> row, range_row;  // a stream's row, its first range row
  const auto add_range_rows = [&](std::uint64_t stream, const std::string& label) {
    const auto l = levels.find(stream);
    if (l == levels.end()) return;
    range_row[stream] = row_labels.size();
    for (std::size_t k = 0; k < l->second; ++k)
      row_labels.push_back(label + " ranges" + (k == 0 ? "" : " " + std::to_string(k + 1)));
  };
  for (const stream_summary& s : a.streams) {
    row[s.stream] = row_labels.size();
    row_labels.push_back(label_of(s));
    add_range_rows(s.stream, label_of(s));
  }
  for (const auto& [stream, list] : ranges_of)
    if (row.find(stream) == row.end()) {
      std::string label = stream_label(list.front()->device, stream, "");
      for (const range_summary& r : a.ranges)
        if (r.stream == stream) label = r.stream_label;
      add_range_rows(stream, label);
    }
  std::map<std::string, int> colors;  // kind -> gnuplot line type
  double origin = 0, last = 0;
  bool any = false;
  const auto extend = [&](double start, double end) {
    origin = any ? std::min(origin, start) : start;
    last = any ? std::max(last, end) : end;
    any = true;
  };
  for (const traced_op& o : ops) {
    extend(o.start_us, o.end_us);
    colors.emplace(o.kind, 0);
  }
  for (const traced_range& r : ranges) extend(r.start_us, r.end_us);
  int next = 1;
  for (auto& c : colors) c.second = next++;
  {
    std::ofstream d(data);
    d << "# row start_us end_us color kind\n";
    for (const traced_op& o : ops)
      d << row[o.stream] << ' ' << (o.start_us - origin) << ' ' << (o.end_us - origin) << ' '
        << colors[o.kind] << ' ' << o.kind << '\n';
    if (!ranges.empty()) {
      d << "\n\n# trace_range (index 1): row start_us end_us name\n";
      for (const traced_range& r : ranges)
        d << range_row[r.stream] + level[&r] << ' ' << (r.start_us - origin) << ' '
          << (r.end_us - origin) << ' ' << gnuplot_text(r.name) << '\n';
    }
    if (!d) throw std::runtime_error("cannot write " + data);
  }
  {
    std::ofstream g(script);
    const std::size_t rows = std::max<std::size_t>(row_labels.size(), 1);
    g << "set terminal pngcairo noenhanced size 1400," << 120 + 28 * rows << "\n"
      << "set output '" << gnuplot_text(png) << "'\n"
      << "set title 'sluice trace: " << ops.size() << " operations on " << a.streams.size()
      << " streams'\n"
      << "set xlabel 'time (us)'\nset yrange [-0.7:" << static_cast<double>(rows) - 0.3
      << "]\nset grid x\n"
      << "set key outside right top\nset style fill solid 0.9 noborder\nset ytics (";
    std::size_t widest = 0;
    for (std::size_t i = 0; i < row_labels.size(); ++i) {
      g << (i ? ", " : "") << "'" << gnuplot_text(row_labels[i]) << "' " << i;
      widest = std::max(widest, row_labels[i].size());
    }
    g << ")\n";
    // A range's name at its start, where the bar is wide enough for it: the
    // plot is about 1400 px less the key and the row labels wide, at most 7 px
    // a character of the labels' font.
    const double plot_px = std::max(200.0, 1400.0 - 200.0 - 7.0 * static_cast<double>(widest));
    const double span = std::max(last - origin, 1e-9);
    for (const traced_range& r : ranges) {
      const double px = (r.end_us - r.start_us) / span * plot_px;
      if (r.name.empty() || px < 7.0 * static_cast<double>(r.name.size()) + 8.0) continue;
      g << "set label '" << gnuplot_text(r.name) << "' at " << (r.start_us - origin) << ", "
        << range_row[r.stream] + level[&r] << " left offset character 0.5, 0 front font ',9'\n";
    }
    g << "plot '" << gnuplot_text(data)
      << "' index 0 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35):4 with boxxyerror lc variable "
         "notitle";
    if (!ranges.empty())
      g << ", '' index 1 using (($2+$3)/2):1:2:3:($1-0.3):($1+0.3) with boxxyerror "
           "fs solid 0.9 border lc rgb 'white' lc rgb '#b8c8e0' title 'trace_range'";
    for (const auto& c : colors)
      g << ", NaN with boxes lc " << c.second << " title '" << c.first << "'";
    g << "\n";
    if (!g) throw std::runtime_error("cannot write " + script);
  }
  std::string gnuplot = "gnuplot";
  char* args[] = {gnuplot.data(), const_cast<char*>(script.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "gnuplot", nullptr, nullptr, args, environ) != 0)
    throw std::runtime_error(
        "gnuplot not found (Debian: gnuplot-nox, which scripts/setup installs)");
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("gnuplot failed on " + script);
}

int trace_command(const std::vector<std::string>& args) {
  // args: report <file> [--png <out.png>]; --help was handled by the dispatcher.
  if (args.empty()) throw usage_error("no trace command given (the only one is 'report')");
  if (args[0] != "report") {
    std::string message = "unknown trace command '" + args[0] + "' (the only one is 'report')";
    // `sluice trace foo.json`: a file where the command belongs.
    const bool looks_like_a_file =
        access(args[0].c_str(), F_OK) == 0 ||
        (args[0].size() > 5 && args[0].compare(args[0].size() - 5, 5, ".json") == 0);
    if (looks_like_a_file) message += "; for a report on the file: sluice trace report " + args[0];
    throw usage_error(message);
  }
  std::string file, png;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--png") {
      if (i + 1 >= args.size()) throw usage_error("--png needs a file");
      png = args[++i];
    } else if (arg.rfind("--png=", 0) == 0 && arg.size() > 6) {
      png = arg.substr(6);
    } else if (arg.rfind('-', 0) == 0 || !file.empty()) {
      throw usage_error("unknown argument '" + arg + "' for 'trace report'");
    } else {
      file = arg;
    }
  }
  if (file.empty()) throw usage_error("'trace report' needs the trace file to read");
  std::ifstream in(file);
  if (!in) {
    const int error = errno;
    std::cerr << "sluice trace report: cannot read " << file << ": " << std::strerror(error)
              << "\n";
    return 1;
  }
  std::stringstream all;
  all << in.rdbuf();
  try {
    stream_tracks tracks;
    std::map<int, double> clock_errors;
    std::vector<traced_range> ranges;
    const auto ops = read_trace(all.str(), &tracks, &clock_errors, &ranges);
    trace_analysis a = analyze(ops, tracks, ranges);
    a.clock_error_us = std::move(clock_errors);
    std::cout << format_report(a, file);
    if (!png.empty()) {
      write_timeline_png(ops, a, png, ranges);
      std::cout << "timeline: " << png << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "sluice trace report: " << file << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace sluice::tool
