// ERR: errors (docs/semantics.md, ERR-1 .. ERR-4).
#include "fault.hpp"
#include "support.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sluice::conformance {
namespace {

constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();

static_assert(std::is_base_of_v<std::runtime_error, sluice::error>);

constexpr const char* fault_child_variable = "SLUICE_CONFORMANCE_FAULT_CHILD";

// Exit codes of the fault child (0: every check passed).
enum fault_child_code : int {
  fault_ok = 0,
  fault_not_supported = 10,
  fault_not_reported = 11,
  fault_wrong_error = 12,
  fault_not_sticky_later = 13,
  fault_unexpected_exception = 14,
  fault_not_launched = 15,
};

const char* fault_child_verdict(int code) {
  switch (code) {
    case fault_ok: return "passed";
    case fault_not_supported: return "the backend cannot make the device fault";
    case fault_not_reported: return "synchronize() after the fault returned normally";
    case fault_wrong_error: return "the fault surfaced with the wrong errc or not sticky";
    case fault_not_sticky_later:
      return "a later call on the device did not report the sticky fault";
    case fault_unexpected_exception: return "an unexpected exception";
    case fault_not_launched: return "the faulting kernel did not launch";
    default: return "crashed, aborted or timed out (see output)";
  }
}

//! Checks one sluice::error of the fault; prints it for the parent.
bool is_sticky_fault(const sluice::error& e, const char* where) {
  std::printf("%s: %s [%s] sticky=%d native=%d api=%s\n", where, e.what(),
              sluice::to_string(e.code()), e.sticky() ? 1 : 0, e.native_code(), e.api());
  return e.code() == errc::device_fault && e.sticky();
}

//! The child: fault the device, then expect errc::device_fault with sticky()
//! at the next synchronize, and again at later calls on that device.
int fault_child_checks() {
  try {
    const sluice::device dev{0};
    sluice::stream s{dev};
    sluice::event e{dev};
    s.synchronize();                               // the device works before the fault
    const int launched = enqueue_device_fault(s);  // 0: launched
    if (launched == no_device_code) return fault_not_supported;
    // Where launches are serialized (CUDA_LAUNCH_BLOCKING=1) the launch waits
    // for the kernel and returns its fault: sluice must still report it, sticky.
    if (launched != 0)
      std::printf("the faulting kernel's launch returned vendor error %d: the fault must still "
                  "be reported\n",
                  launched);
    try {
      s.synchronize();
      std::printf("synchronize after the fault returned normally\n");
      return fault_not_reported;
    } catch (const sluice::error& x) {
      if (!is_sticky_fault(x, "stream::synchronize")) return fault_wrong_error;
    }
    // Sticky: the next record / ready on the device report it too.
    int sticky_reports = 0;
    try {
      e.record(s);
      e.synchronize();
    } catch (const sluice::error& x) {
      sticky_reports += is_sticky_fault(x, "event::record/synchronize") ? 1 : 0;
    }
    try {
      (void)s.ready();
    } catch (const sluice::error& x) {
      sticky_reports += is_sticky_fault(x, "stream::ready") ? 1 : 0;
    }
    if (sticky_reports != 2) return fault_not_sticky_later;
    std::printf("the fault was reported as device_fault (sticky); exiting cleanly\n");
    std::fflush(stdout);
    return fault_ok;
  } catch (const std::exception& x) {
    std::printf("unexpected exception: %s\n", x.what());
    return fault_unexpected_exception;
  }
}

constexpr const char* lost_exception_marker = "sluice-conformance-lost-exception-7f3a";

//! The host-function child: a host function throws, nobody calls ready() or
//! synchronize() on its stream, the stream is destroyed. The failure must be
//! printed (to stderr, once), and the process must exit cleanly.
int host_function_child_checks() {
  try {
    const sluice::device dev{0};
    sluice::event done{dev};
    {
      sluice::stream s{dev};
      s.host_func([] { throw std::runtime_error(lost_exception_marker); });
      done.record(s);
      done.synchronize();  // the function has run; its failure is not reported yet
      std::printf("destroying the stream without asking it\n");
    }
    std::printf("the stream is destroyed; exiting cleanly\n");
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& x) {
    std::printf("unexpected exception: %s\n", x.what());
    return fault_unexpected_exception;
  }
}

struct child_result {
  int exit_code = -1;
  std::string output;
};

//! Starts this program again as the fault child; collects its output and exit
//! code; kills it after 120 s (a hang is a failure, not a wait forever).
child_result run_fault_child(const char* kind) {
  child_result r;
  int out[2];
  if (pipe(out) != 0) {
    r.output = "pipe() failed";
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(fault_child_variable) + "=" + kind);
  std::vector<char*> env;
  for (auto& v : env_strings) env.push_back(v.data());
  env.push_back(nullptr);
  std::string self = "/proc/self/exe";
  char* argv[] = {self.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    r.output = "posix_spawn failed";
    return r;
  }
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!finished.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(
          std::chrono::milliseconds(50));  // a watchdog, not synchronization
    if (!finished.load()) kill(pid, SIGKILL);
  });
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;)
    r.output.append(buffer, static_cast<std::size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  finished.store(true);
  watchdog.join();
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.output += "\n(killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  return r;
}

//! One round of ordinary work on s, checked: the stream (and its device) still work.
void expect_stream_works(sluice::stream_ref s) {
  constexpr std::size_t n = std::size_t{16} * 1024;
  sluice::device_buffer<byte> d{s.device(), n};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0);
  sluice::event e{s.device()};
  sluice::fill(s, d.data(), 0x6D, n);
  sluice::copy(s, p.data(), d.data(), n);
  e.record(s);
  e.synchronize();
  s.synchronize();
  EXPECT_EQ(first_byte_not(p.data(), n, 0x6D), n) << "the stream does not work after an error";
}

TEST(Errors, ERR_1__error_codes_have_names) {
  const std::pair<errc, const char*> names[] = {
      {errc::invalid_argument, "invalid_argument"},
      {errc::invalid_device, "invalid_device"},
      {errc::invalid_handle, "invalid_handle"},
      {errc::not_ready, "not_ready"},
      {errc::not_supported, "not_supported"},
      {errc::peer_access_unavailable, "peer_access_unavailable"},
      {errc::out_of_memory, "out_of_memory"},
      {errc::device_fault, "device_fault"},
      {errc::host_function_failed, "host_function_failed"},
      {errc::backend_failure, "backend_failure"}};
  for (const auto& [code, name] : names) {
    ASSERT_NE(sluice::to_string(code), nullptr);
    EXPECT_EQ(std::string(sluice::to_string(code)), name);
  }
  const sluice::error plain{errc::not_ready, "made by hand"};
  EXPECT_EQ(plain.code(), errc::not_ready);
  EXPECT_EQ(plain.native_code(), 0);
  ASSERT_NE(plain.api(), nullptr);
  EXPECT_FALSE(plain.sticky());
  EXPECT_EQ(std::string(plain.what()), "made by hand");
  const sluice::error full{errc::device_fault, "fault", 700, "vendorCall", true};
  EXPECT_EQ(full.native_code(), 700);
  EXPECT_EQ(std::string(full.api()), "vendorCall");
  EXPECT_TRUE(full.sticky());
}

// Failures of several kinds: each carries its code, an api name and a message
// that names the operation or the device involved.
TEST(Errors, ERR_1__failures_carry_code_api_and_a_message) {
  const sluice::device dev{0};
  const int count = sluice::device_count();
  sluice::stream s{dev};
  sluice::stream moved{dev};
  sluice::stream keep{std::move(moved)};
  sluice::event plain{dev};
  plain.record(s);
  s.synchronize();

  struct failing_call {
    const char* what;
    std::function<void()> call;
    errc expected;
    std::string must_mention;  // in what() or api()
  };
  const failing_call calls[] = {
      {"device(-1)", [] { (void)sluice::device{-1}; }, errc::invalid_device, "-1"},
      {"device(count)", [count] { (void)sluice::device{count}; }, errc::invalid_device,
       std::to_string(count)},
      {"fill(nullptr)", [&] { sluice::fill(s, nullptr, 0, 8); }, errc::invalid_argument, "fill"},
      {"copy(nullptr)", [&] { sluice::copy(s, nullptr, nullptr, 8); }, errc::invalid_argument,
       "copy"},
      {"elapsed(non-timing)", [&] { (void)sluice::elapsed(plain, plain); }, errc::invalid_argument,
       "elapsed"},
      {"ready() of a moved-from stream",
       [&] { (void)moved.ready(); },  // NOLINT(bugprone-use-after-move)
       errc::invalid_handle, ""},
      {"enable_peer_access(d, d)", [&] { sluice::enable_peer_access(dev, dev); },
       errc::invalid_argument, "peer"},
  };
  for (const failing_call& c : calls) {
    const auto e = error_of(c.call);
    ASSERT_TRUE(e.has_value()) << c.what << " did not throw";
    EXPECT_EQ(e->code(), c.expected) << c.what << ": " << e->what();
    const std::string message = e->what();
    ASSERT_NE(e->api(), nullptr) << c.what;
    const std::string api = e->api();
    EXPECT_FALSE(message.empty()) << c.what;
    EXPECT_FALSE(api.empty()) << c.what << ": no api name";
    EXPECT_TRUE(contains(message, c.must_mention) || contains(api, c.must_mention))
        << c.what << ": \"" << message << "\" (api " << api << ") does not mention \""
        << c.must_mention << "\"";
    EXPECT_FALSE(e->sticky()) << c.what;
    // sluice rejected these calls itself: no vendor error code, api names sluice.
    EXPECT_EQ(e->native_code(), 0) << c.what;
    EXPECT_TRUE(contains(api, "sluice")) << c.what << ": api " << api;
  }
  // A sluice::error is a std::runtime_error.
  try {
    sluice::fill(s, nullptr, 0, 8);
    FAIL() << "fill(nullptr, 8) did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

// ERR-2: a device fault, in a child process (the fault ends the device
// context for good). The child is this same program, started again with
// SLUICE_CONFORMANCE_FAULT_CHILD=1: a static initializer runs the child's
// checks before main() and exits with their verdict, so it works in every
// program that links the suite (sluice-conformance-<backend>, sluice-<backend>).
TEST(Errors, ERR_2__a_device_fault_is_sticky) {
  if (sluice::backend() == sluice::backend_kind::host)
    GTEST_SKIP() << "host backend has no asynchronous device faults";
  const child_result child = run_fault_child("device");
  // HIP 5.2's runtime aborts the process on a device fault and sluice cannot
  // stop it (docs/vendor-differences.md, 18): reported as a skip that says
  // what happened, never as a pass. A HIP that keeps the process alive is
  // checked like CUDA.
  if (sluice::backend() == sluice::backend_kind::hip && child.exit_code != 0 &&
      contains(child.output, "killed by signal " + std::to_string(SIGABRT)))
    GTEST_SKIP() << "HIP aborted the process on the device fault (HIP 5.2 does; sluice cannot "
                    "keep it alive there): the fault is not reported as device_fault";
  EXPECT_EQ(child.exit_code, 0) << "the child's verdict: " << fault_child_verdict(child.exit_code)
                                << "\nits output:\n"
                                << child.output;
  // The child reported the fault and then exited cleanly (exit code 0 is only
  // returned after every check passed, not after a crash or an abort).
  EXPECT_TRUE(contains(child.output, "device_fault")) << child.output;
}

// HOST-4, nothing lost: an exception that no ready()/synchronize() reported
// before its stream was destroyed is printed once, and the process exits
// cleanly. In a child process, to see its whole output and exit status.
TEST(HostFunctions, HOST_4__an_unreported_exception_is_printed_once_when_its_stream_dies) {
  const child_result child = run_fault_child("host_function");
  EXPECT_EQ(child.exit_code, 0) << "its output:\n" << child.output;
  std::size_t count = 0;
  for (std::size_t at = child.output.find(lost_exception_marker); at != std::string::npos;
       at = child.output.find(lost_exception_marker, at + 1))
    ++count;
  EXPECT_EQ(count, 1U) << "the failure was printed " << count << " times:\n" << child.output;
  EXPECT_TRUE(contains(child.output, "failed on a destroyed stream")) << child.output;
}

// After each kind of recoverable error, the next valid calls on the same
// stream and device succeed.
TEST(Errors, ERR_3__recoverable_errors_are_not_sticky) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::stream moved{dev};
  sluice::stream other{std::move(moved)};
  sluice::event start{dev, sluice::event_options{true, false}};
  sluice::event stop{dev, sluice::event_options{true, false}};

  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::fill(s, nullptr, 0, 8); }));
  expect_stream_works(s);
  EXPECT_TRUE(
      throws_code(errc::invalid_device, [&] { (void)sluice::device{sluice::device_count()}; }));
  expect_stream_works(s);
  EXPECT_TRUE(throws_code(errc::invalid_handle,
                          [&] { moved.synchronize(); }));  // NOLINT(bugprone-use-after-move)
  expect_stream_works(s);
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::enable_peer_access(dev, dev); }));
  expect_stream_works(s);

  {
    gate g;
    start.record(s);
    g.hold(s);
    stop.record(s);
    EXPECT_TRUE(throws_code(errc::not_ready, [&] { (void)sluice::elapsed(start, stop); }));
    g.release();
    stop.synchronize();
  }
  EXPECT_GE(sluice::elapsed(start, stop).count(), 0.0);
  expect_stream_works(s);

  s.host_func([] { throw std::runtime_error("recoverable"); });
  EXPECT_TRUE(throws_code(errc::host_function_failed, [&] { s.synchronize(); }));
  expect_stream_works(s);
  expect_stream_works(other);
}

TEST(Errors, ERR_4__device_ids_out_of_range_are_rejected) {
  const int count = sluice::device_count();
  ASSERT_GE(count, 1);
  for (const int id : {-1, count, count + 1, INT_MAX, INT_MIN})
    EXPECT_TRUE(throws_code(errc::invalid_device, [&] { (void)sluice::device{id}; }))
        << "id " << id;
  for (int id = 0; id < count; ++id) EXPECT_EQ(sluice::device{id}.id(), id);
}

// Sizes whose byte count overflows, or whose range does not fit in memory, are
// rejected before anything is allocated or enqueued.
TEST(Errors, ERR_4__overflowing_sizes_are_rejected_before_anything_is_enqueued) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    sluice::device_buffer<std::uint64_t> b{dev, huge / 4};
  }));
  EXPECT_TRUE(throws_code(errc::invalid_argument,
                          [&] { sluice::pinned_buffer<std::uint64_t> b{huge / 2}; }));

  constexpr std::size_t n = std::size_t{4} * 1024;
  sluice::device_buffer<byte> d = patterned_device_bytes(dev, n, 31);
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0x47);
  gate g{s};
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    sluice::device_buffer<std::uint64_t> b{s, huge / 4};
  }));
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::fill(s, d.data(), 0, huge); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, d.data(), p.data(), huge); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, p.data(), d.data(), huge); }));
  g.release();
  s.synchronize();
  EXPECT_EQ(first_byte_not(p.data(), n, 0x47), n) << "a rejected copy wrote pinned memory";
  const std::vector<byte> after = read_back(d);
  EXPECT_EQ(first_pattern_mismatch(after.data(), n, 31), n)
      << "a rejected call wrote device memory";

  // Pageable memory: sluice cannot know its size, but a range past the end of
  // the address space is still rejected.
  std::vector<byte> pageable(64, 0x12);
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::fill(s, pageable.data(), 0, huge - 16); }));
  EXPECT_TRUE(throws_code(errc::invalid_argument,
                          [&] { sluice::copy(s, pageable.data(), p.data(), huge - 16); }));
  EXPECT_TRUE(s.ready());
  EXPECT_EQ(first_byte_not(pageable.data(), pageable.size(), 0x12), pageable.size());
}

// Moved-from handles as arguments: rejected, and the valid objects of the same
// call are left as they were.
TEST(Errors, ERR_4__moved_from_handles_are_rejected_before_anything_is_enqueued) {
  const sluice::device dev{0};
  sluice::stream s{dev}, moved_stream{dev};
  sluice::stream kept_stream{std::move(moved_stream)};
  sluice::event moved_event{dev};
  sluice::event kept_event{std::move(moved_event)};
  sluice::flag f{0};

  gate g{s};
  kept_event.record(s);
  // NOLINTBEGIN(bugprone-use-after-move)
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { kept_event.record(moved_stream); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { kept_stream.wait(moved_stream); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { kept_stream.wait(moved_event); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { moved_stream.write_value(f, 1); }));
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_TRUE(stays_false([&] { return kept_event.ready(); }))
      << "the rejected record replaced the pending capture";
  EXPECT_TRUE(kept_stream.ready()) << "a rejected wait left work on the stream";
  EXPECT_EQ(f.load(), 0u);
  g.release();
  kept_event.synchronize();
  s.synchronize();
}

TEST(ErrorsMultiDevice, ERR_4__objects_of_another_device_are_rejected_before_anything_is_enqueued) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  sluice::stream s0{d0}, s1{d1};
  sluice::event e1{d1};
  gate g{s1};
  e1.record(s1);
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { e1.record(s0); }));
  EXPECT_TRUE(s0.ready()) << "the rejected record left work on the stream";
  EXPECT_TRUE(stays_false([&] { return e1.ready(); }))
      << "the rejected record replaced the pending capture";
  g.release();
  e1.synchronize();
}

}  // namespace

// The fault child's entry points (fault.hpp): called by main() before gtest starts.

bool fault_child_requested() { return std::getenv(fault_child_variable) != nullptr; }

int fault_child_main() {
  const std::string kind = std::getenv(fault_child_variable);
  const int code = kind == "host_function" ? host_function_child_checks() : fault_child_checks();
  std::fflush(stdout);
  return code;
}

}  // namespace sluice::conformance
