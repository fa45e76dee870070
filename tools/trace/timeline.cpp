// trace_analyzer::write_timeline_png: the timeline of `sluice trace report
// --png`, drawn by gnuplot.
#include "trace/analyzer.hpp"
#include "trace/analyzer_state.hpp"
#include "trace/stream_ids.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>

namespace sluice::tool {

namespace {

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

void trace_analyzer::write_timeline_png(const std::string& png, std::size_t every_op_up_to) {
  state& s = *s_;
  const trace_analysis& a = finish();
  const std::vector<traced_range>& ranges = s.drawn_ranges;
  if (a.operations == 0 && ranges.empty())
    throw std::runtime_error("no operations and no trace_ranges: no timeline to draw");
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
  for (const stream_summary& st : a.streams) {
    row[st.stream] = row_labels.size();
    row_labels.push_back(label_of(st));
    add_range_rows(st.stream, label_of(st));
  }
  for (const auto& [stream, list] : ranges_of)
    if (row.find(stream) == row.end()) {
      std::string label = stream_label(list.front()->device, stream, "");
      for (const range_summary& r : a.ranges)
        if (r.stream == stream) label = r.stream_label;
      add_range_rows(stream, label);
    }
  std::map<std::string, int> colors;  // kind -> gnuplot line type
  for (const std::string& k : s.kinds) colors.emplace(k, 0);
  int next = 1;
  for (auto& c : colors) c.second = next++;
  std::vector<int> color_of(s.kinds.size());  // kind id -> line type
  for (std::size_t k = 0; k < s.kinds.size(); ++k) color_of[k] = colors[s.kinds[k]];
  double origin = 0, last = 0;
  bool any = false;
  const auto extend = [&](double start, double end) {
    origin = any ? std::min(origin, start) : start;
    last = any ? std::max(last, end) : end;
    any = true;
  };
  if (s.any) extend(s.first, s.last);
  for (const traced_range& r : ranges) extend(r.start_us, r.end_us);
  // Above every_op_up_to operations: time buckets of about a pixel.
  const bool bucketed = a.operations > every_op_up_to;
  constexpr std::size_t buckets = 1400;
  const double width = std::max(last - origin, 1e-9) / static_cast<double>(buckets);
  {
    std::ofstream d(data);
    d << "# row start_us end_us color kind\n";
    std::vector<double> busy;  // per bucket and kind, of one stream
    for (std::size_t i = 0; i < s.streams.size(); ++i) {
      const stream_state& st = *s.streams[i];
      const std::size_t r = row[st.id];
      log_reader<op_record> reader(*s.file, st.ops);
      op_record o;
      if (!bucketed) {
        while (reader.next(o))
          d << r << ' ' << (o.start - origin) << ' ' << (o.end - origin) << ' ' << color_of[o.kind]
            << ' ' << s.kinds[o.kind] << '\n';
        continue;
      }
      const std::size_t nk = s.kinds.size();
      busy.assign(buckets * nk, 0.0);
      while (reader.next(o)) {
        const double from = o.start - origin, to = o.end - origin;
        auto b = static_cast<std::size_t>(std::max(0.0, from / width));
        for (; b < buckets; ++b) {
          const double lo = std::max(from, static_cast<double>(b) * width);
          const double hi = std::min(to, static_cast<double>(b + 1) * width);
          if (hi <= lo) break;
          busy[b * nk + o.kind] += hi - lo;
        }
      }
      for (std::size_t b = 0; b < buckets; ++b) {
        double total = 0, most = 0;
        std::size_t kind = 0;
        for (std::size_t k = 0; k < nk; ++k) {
          total += busy[b * nk + k];
          if (busy[b * nk + k] > most) {
            most = busy[b * nk + k];
            kind = k;
          }
        }
        if (total <= 0) continue;
        const double start = static_cast<double>(b) * width;
        d << r << ' ' << start << ' ' << start + std::min(width, total) << ' ' << color_of[kind]
          << ' ' << s.kinds[kind] << '\n';
      }
    }
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
      << "set title 'sluice trace: " << a.operations << " operations on " << a.streams.size()
      << " streams";
    if (bucketed)
      g << " (each row in " << buckets << " time buckets: busy time, the kind busy longest)";
    if (s.range_count > ranges.size())
      g << " (the first " << ranges.size() << " of " << s.range_count << " trace_ranges)";
    g << "'\n"
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
           "fs solid 0.9 border lc rgb 'white' lc rgb '#b8c8e0' title '"
        << (s.comm.empty() ? "trace_range" : "trace_range, comm op") << "'";
    for (const auto& c : colors)
      g << ", NaN with boxes lc " << c.second << " title '" << gnuplot_text(c.first) << "'";
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

}  // namespace sluice::tool
