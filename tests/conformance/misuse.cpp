// ERR-1 and ERR-4 as a table: bad inputs, each with the error code and the
// words of the message it must produce, checked on every backend. After each
// rejected call nothing was enqueued: the row's stream is still idle, and the
// memory the call named is unchanged.
//
// The table is also the documentation: with SLUICE_MISUSE_TABLE=<file> the
// test writes it as Markdown, and ctest (docs.misuse_table) checks that
// docs/misuse.md is that output.
#include "support.hpp"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::conformance {
namespace {

constexpr std::size_t n = 4096;
constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();

//! What a row may use: an idle stream and objects around it, some of them broken.
struct bench {
  sluice::device dev{0};
  sluice::stream s{dev};
  sluice::stream moved_stream{dev};
  sluice::stream kept_stream{std::move(moved_stream)};
  sluice::event e{dev};
  sluice::event moved_event{dev};
  sluice::event kept_event{std::move(moved_event)};
  sluice::event timed_a{dev, timed()};
  sluice::event timed_b{dev, timed()};
  sluice::flag f{0};
  sluice::device_buffer<byte> d{dev, n};
  sluice::device_buffer<byte> moved_buffer{dev, 16};
  sluice::device_buffer<byte> kept_buffer{std::move(moved_buffer)};
  sluice::pinned_buffer<byte> p{n};
  std::vector<byte> pageable = std::vector<byte>(64, 0x12);
  sluice::stream_ref dead = make_dead();

  bench() {
    std::fill(p.begin(), p.end(), byte{0x5A});
    sluice::fill(s, d.data(), 0x3C, n);
    s.synchronize();
  }
  static sluice::event_options timed() {
    sluice::event_options o;
    o.timing = true;
    return o;
  }
  sluice::stream_ref make_dead() const {
    sluice::stream gone{dev};
    return gone;  // the stream dies here; the ref lives on
  }
  //! Runs f from a host function of s and returns (throws) what f threw there.
  void from_host_function(const std::function<void()>& inner_call) {
    std::optional<sluice::error> inside;
    s.host_func([&] { inside = error_of(inner_call); });
    s.synchronize();
    s.synchronize();  // and what the function itself enqueued on s
    if (inside) throw *inside;
  }
};

struct row {
  const char* id;
  const char* bad_input;
  errc code;
  const char* message;  // words the message must contain
  std::function<void(bench&)> call;
};

// NOLINTBEGIN(bugprone-use-after-move)
const std::vector<row>& single_device_rows() {
  static const std::vector<row> rows = {
      {"device-negative", "`device{-1}`", errc::invalid_device, "out of range",
       [](bench&) { (void)sluice::device{-1}; }},
      {"device-count", "`device{device_count()}`", errc::invalid_device, "out of range",
       [](bench&) { (void)sluice::device{sluice::device_count()}; }},
      {"device-int-max", "`device{INT_MAX}`", errc::invalid_device, "out of range",
       [](bench&) { (void)sluice::device{INT_MAX}; }},
      {"moved-stream-ready", "`ready()` of a moved-from stream", errc::invalid_handle, "moved from",
       [](bench& b) { (void)b.moved_stream.ready(); }},
      {"moved-stream-synchronize", "`synchronize()` of a moved-from stream", errc::invalid_handle,
       "moved from", [](bench& b) { b.moved_stream.synchronize(); }},
      {"moved-stream-host_func", "`host_func` on a moved-from stream", errc::invalid_handle,
       "moved from", [](bench& b) { b.moved_stream.host_func([] {}); }},
      {"moved-stream-wait-argument", "`s.wait(moved_from_stream)`", errc::invalid_handle,
       "moved from", [](bench& b) { b.s.wait(b.moved_stream); }},
      {"moved-stream-write_value", "`write_value` on a moved-from stream", errc::invalid_handle,
       "moved from", [](bench& b) { b.moved_stream.write_value(b.f, 1); }},
      {"moved-stream-wait_value", "`wait_value` on a moved-from stream", errc::invalid_handle,
       "moved from", [](bench& b) { b.moved_stream.wait_value(b.f, 1); }},
      {"moved-stream-buffer", "stream-ordered `device_buffer` on a moved-from stream",
       errc::invalid_handle, "moved from",
       [](bench& b) {
         sluice::device_buffer<byte> x{b.moved_stream, 16};
       }},
      {"moved-event-record", "`record` of a moved-from event", errc::invalid_handle, "moved from",
       [](bench& b) { b.moved_event.record(b.s); }},
      {"moved-event-wait-argument", "`s.wait(moved_from_event)`", errc::invalid_handle,
       "moved from", [](bench& b) { b.s.wait(b.moved_event); }},
      {"moved-event-ready", "`ready()` of a moved-from event", errc::invalid_handle, "moved from",
       [](bench& b) { (void)b.moved_event.ready(); }},
      {"moved-event-elapsed", "`elapsed` with a moved-from event", errc::invalid_handle,
       "moved from", [](bench& b) { (void)sluice::elapsed(b.moved_event, b.timed_b); }},
      {"moved-buffer-record_stream", "`record_stream` of a moved-from buffer", errc::invalid_handle,
       "moved from", [](bench& b) { b.moved_buffer.record_stream(b.s); }},
      {"destroyed-stream-ready", "`ready()` through a `stream_ref` whose stream was destroyed",
       errc::invalid_handle, "destroyed", [](bench& b) { (void)b.dead.ready(); }},
      {"destroyed-stream-copy", "`copy` on a destroyed stream", errc::invalid_handle, "destroyed",
       [](bench& b) { sluice::copy(b.dead, b.p.data(), b.d.data(), 64); }},
      {"destroyed-stream-record", "`record` on a destroyed stream", errc::invalid_handle,
       "destroyed", [](bench& b) { b.e.record(b.dead); }},
      {"copy-null-dst", "`copy` to a null pointer", errc::invalid_argument, "dst is null",
       [](bench& b) { sluice::copy(b.s, nullptr, b.d.data(), 64); }},
      {"copy-null-src", "`copy` from a null pointer", errc::invalid_argument, "src is null",
       [](bench& b) { sluice::copy(b.s, b.d.data(), nullptr, 64); }},
      {"fill-null", "`fill` of a null pointer", errc::invalid_argument, "dst is null",
       [](bench& b) { sluice::fill(b.s, nullptr, 0, 64); }},
      {"copy-overlap", "`copy` between overlapping ranges", errc::invalid_argument, "overlap",
       [](bench& b) { sluice::copy(b.s, b.p.data() + 8, b.p.data(), 64); }},
      {"copy-address-space", "`copy` whose size runs past the end of the address space",
       errc::invalid_argument, "overflows the address space",
       [](bench& b) { sluice::copy(b.s, b.pageable.data(), b.p.data(), huge - 16); }},
      {"fill-past-device-allocation", "`fill` past the end of a `device_buffer`",
       errc::invalid_argument, "runs past the end",
       [](bench& b) { sluice::fill(b.s, b.d.data() + n - 8, 0, 16); }},
      {"copy-past-pinned-allocation", "`copy` from past the end of a `pinned_buffer`",
       errc::invalid_argument, "runs past the end",
       [](bench& b) { sluice::copy(b.s, b.d.data(), b.p.data() + 1, n); }},
      {"device-buffer-overflow", "`device_buffer<uint64_t>` of SIZE_MAX/4 elements",
       errc::invalid_argument, "overflow",
       [](bench& b) {
         sluice::device_buffer<std::uint64_t> x{b.dev, huge / 4};
       }},
      {"pinned-buffer-overflow", "`pinned_buffer<uint64_t>` of SIZE_MAX/2 elements",
       errc::invalid_argument, "overflow",
       [](bench&) { sluice::pinned_buffer<std::uint64_t> x{huge / 2}; }},
      {"elapsed-without-timing", "`elapsed` of events without `event_options::timing`",
       errc::invalid_argument, "event_options::timing",
       [](bench& b) {
         b.e.record(b.s);
         b.kept_event.record(b.s);
         b.s.synchronize();
         (void)sluice::elapsed(b.e, b.kept_event);
       }},
      {"elapsed-never-recorded", "`elapsed` of a never-recorded event", errc::invalid_argument,
       "never recorded", [](bench& b) { (void)sluice::elapsed(b.timed_a, b.timed_b); }},
      {"elapsed-before-completion", "`elapsed` before the stop event completed", errc::not_ready,
       "has not completed",
       [](bench& b) {
         gate g;
         sluice::stream held{b.dev};
         b.timed_a.record(held);
         g.hold(held);
         b.timed_b.record(held);
         const std::optional<sluice::error> e =
             error_of([&] { (void)sluice::elapsed(b.timed_a, b.timed_b); });
         g.release();
         held.synchronize();
         if (e) throw *e;
       }},
      {"synchronize-own-stream-in-host-function", "`s.synchronize()` inside a host function of `s`",
       errc::invalid_argument, "would wait for itself",
       [](bench& b) { b.from_host_function([&] { b.s.synchronize(); }); }},
      {"event-synchronize-in-own-host-function",
       "`e.synchronize()` inside a host function of the stream `e` was recorded on, after the "
       "record",
       errc::invalid_argument, "would wait for itself",
       [](bench& b) {
         b.from_host_function([&] {
           sluice::event inner{b.dev};
           inner.record(b.s);
           inner.synchronize();
         });
       }},
      {"device-synchronize-in-host-function",
       "`device::synchronize()` inside a host function of a stream on that device",
       errc::invalid_argument, "would wait for itself",
       [](bench& b) { b.from_host_function([&] { b.dev.synchronize(); }); }},
      {"peer-access-to-itself", "`enable_peer_access(d, d)`", errc::invalid_argument,
       "cannot be its own peer", [](bench& b) { sluice::enable_peer_access(b.dev, b.dev); }},
      {"copy_peer-pinned-dst", "`copy_peer` to pinned memory declared as device memory",
       errc::invalid_argument, "pinned host memory",
       [](bench& b) { (void)sluice::copy_peer(b.s, b.p.data(), b.dev, b.d.data(), b.dev, 64); }},
      {"copy_peer-past-end", "`copy_peer` past the end of a `device_buffer`",
       errc::invalid_argument, "runs past the end",
       [](bench& b) {
         (void)sluice::copy_peer(b.s, b.d.data(), b.dev, b.d.data() + n - 8, b.dev, 64);
       }},
  };
  return rows;
}

//! Rows with two devices; the bench is on device 0, `other` on device 1.
struct pair_bench : bench {
  sluice::device other{1};
  sluice::stream s1{other};
  sluice::event e1{other, timed()};
  sluice::device_buffer<byte> d1{other, n};
};
struct pair_row {
  const char* id;
  const char* bad_input;
  errc code;
  const char* message;
  std::function<void(pair_bench&)> call;
};

const std::vector<pair_row>& two_device_rows() {
  static const std::vector<pair_row> rows = {
      {"record-on-foreign-stream", "`e.record(s)` with `s` on another device than `e`",
       errc::invalid_argument, "belongs to device", [](pair_bench& b) { b.e.record(b.s1); }},
      {"elapsed-two-devices", "`elapsed` of events of two devices", errc::invalid_argument,
       "different devices",
       [](pair_bench& b) {
         b.timed_a.record(b.s);
         b.e1.record(b.s1);
         b.s.synchronize();
         b.s1.synchronize();
         (void)sluice::elapsed(b.timed_a, b.e1);
       }},
      {"copy_peer-wrong-device-memory",
       "`copy_peer` whose destination is memory of another device than stated",
       errc::invalid_argument, "not of device",
       [](pair_bench& b) {
         (void)sluice::copy_peer(b.s, b.d1.data(), b.dev, b.d.data(), b.dev, 64);
       }},
  };
  return rows;
}
// NOLINTEND(bugprone-use-after-move)

template <class Bench, class Row>
void check_row(const Row& r) {
  SCOPED_TRACE(r.id);
  Bench b;
  const std::optional<sluice::error> e = error_of([&] { r.call(b); });
  ASSERT_TRUE(e.has_value()) << r.id << ": no sluice::error was thrown";
  EXPECT_EQ(e->code(), r.code) << r.id << ": threw " << sluice::to_string(e->code()) << " (\""
                               << e->what() << "\"), expected " << sluice::to_string(r.code);
  EXPECT_TRUE(contains(e->what(), r.message))
      << r.id << ": the message \"" << e->what() << "\" lacks \"" << r.message << "\"";
  EXPECT_TRUE(e->api() != nullptr && *e->api() != '\0') << r.id << ": the error names no api";
  // Nothing was enqueued, nothing written.
  EXPECT_TRUE(b.s.ready()) << r.id << ": work was left on the stream";
  EXPECT_EQ(first_byte_not(b.p.data(), n, 0x5A), n) << r.id << ": pinned memory was written";
  sluice::pinned_buffer<byte> back{n};
  sluice::copy(b.s, back.data(), b.d.data(), n);
  b.s.synchronize();
  EXPECT_EQ(first_byte_not(back.data(), n, 0x3C), n) << r.id << ": device memory was written";
}

std::string markdown_escape(const char* text) {
  std::string out;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == '|') out += '\\';
    out += *c;
  }
  return out;
}

template <class Row>
void write_rows(std::FILE* f, const std::vector<Row>& rows, int& number, const char* devices) {
  for (const Row& r : rows)
    std::fprintf(f, "| %d | `%s` | %s | `%s` | \"%s\" | %s |\n", ++number, r.id,
                 markdown_escape(r.bad_input).c_str(), sluice::to_string(r.code), r.message,
                 devices);
}

//! The table as Markdown, when SLUICE_MISUSE_TABLE names a file.
void write_table_if_asked() {
  const char* path = std::getenv("SLUICE_MISUSE_TABLE");
  if (path == nullptr || *path == '\0') return;
  std::FILE* f = std::fopen(path, "w");
  ASSERT_NE(f, nullptr) << "cannot write " << path;
  std::fprintf(f, "| # | id | bad input | errc | message contains | devices |\n");
  std::fprintf(f, "|---:|---|---|---|---|---|\n");
  int number = 0;
  write_rows(f, single_device_rows(), number, "1");
  write_rows(f, two_device_rows(), number, "2");
  std::fclose(f);
}

TEST(Errors, ERR_4__misuse_table_each_bad_input_gives_its_error_and_enqueues_nothing) {
  write_table_if_asked();
  for (const row& r : single_device_rows()) check_row<bench>(r);
}

TEST(ErrorsMultiDevice, ERR_4__misuse_table_with_two_devices) {
  SLUICE_REQUIRE_DEVICES(2);
  for (const pair_row& r : two_device_rows()) check_row<pair_bench>(r);
}

}  // namespace
}  // namespace sluice::conformance
