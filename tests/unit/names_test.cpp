// Stream names (stream_options::name, stream_ref::name / set_name): what a
// stream is given is what it answers, on every backend. Built into the host
// unit tests and, per GPU backend, into sluice-names-tests-<backend>
// (gpu_unit_main.cpp; ctest sim.names.cuda against the simulated runtime).
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

sluice::stream_options named(std::string name) {
  sluice::stream_options o;
  o.name = std::move(name);
  return o;
}

TEST(StreamName, IsWhatTheStreamWasGiven) {
  const sluice::device d0{0};
  const sluice::stream upload{d0, named("upload")};
  const sluice::stream plain{d0};
  EXPECT_EQ(upload.name(), "upload");
  EXPECT_EQ(plain.name(), "");
  // Through a reference, and with a priority beside it.
  const sluice::stream_ref ref = upload;
  EXPECT_EQ(ref.name(), "upload");
  sluice::stream_options high = named("high 1");
  high.priority = sluice::priority::high;
  const sluice::stream urgent{d0, high};
  EXPECT_EQ(urgent.name(), "high 1");
  EXPECT_EQ(urgent.priority(), sluice::priority::high);
  // The aggregate form the tests and examples use still compiles (-Werror,
  // -Wmissing-field-initializers) and names nothing.
  const sluice::stream aggregate{d0, sluice::stream_options{sluice::priority::high, std::nullopt}};
  EXPECT_EQ(aggregate.name(), "");
}

TEST(StreamName, SetNameRenamesAndEmptyUnnames) {
  const sluice::stream s{sluice::device{0}, named("first")};
  s.set_name("second");
  EXPECT_EQ(s.name(), "second");
  const sluice::stream_ref ref = s;
  ref.set_name("third");
  EXPECT_EQ(s.name(), "third");
  s.set_name("");
  EXPECT_EQ(s.name(), "");
  const sluice::stream later{sluice::device{0}};
  later.set_name("named later");
  EXPECT_EQ(later.name(), "named later");
}

TEST(StreamName, EachStreamHasItsOwnAndANewStreamStartsUnnamed) {
  const sluice::device d0{0};
  std::vector<sluice::stream> streams;
  for (int i = 0; i < 8; ++i) streams.emplace_back(d0, named("s" + std::to_string(i)));
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(streams[static_cast<std::size_t>(i)].name(), "s" + std::to_string(i));
  // Destroyed streams' states are pooled and handed out again: the new
  // streams that get them have no name (nor do streams named the same share one).
  streams.clear();
  for (int i = 0; i < 8; ++i) streams.emplace_back(d0);
  for (const sluice::stream& s : streams) EXPECT_EQ(s.name(), "");
  const sluice::stream a{d0, named("twin")}, b{d0, named("twin")};
  a.set_name("not twin");
  EXPECT_EQ(b.name(), "twin");
}

TEST(StreamName, AStaleOrEmptyHandleThrowsInvalidHandle) {
  sluice::stream s{sluice::device{0}, named("gone")};
  const sluice::stream_ref ref = s;
  sluice::stream moved = std::move(s);
  EXPECT_EQ(moved.name(), "gone");
  try {
    (void)s.name();  // NOLINT(bugprone-use-after-move): moved-from is empty (LIFE-2)
    ADD_FAILURE() << "a moved-from stream answered name()";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), sluice::errc::invalid_handle);
  }
  { sluice::stream dying = std::move(moved); }
  try {
    ref.set_name("again");
    ADD_FAILURE() << "a reference to a destroyed stream accepted set_name()";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), sluice::errc::invalid_handle);
  }
  EXPECT_THROW((void)ref.name(), sluice::error);
}

// name() and set_name() from several threads while the stream is used
// (ThreadSanitizer's CI runs check that they need no other synchronization).
TEST(StreamName, MayBeReadAndSetWhileOthersUseTheStream) {
  const sluice::device d0{0};
  const sluice::stream s{d0, named("busy")};
  sluice::device_buffer<unsigned char> a{d0, 4096};
  std::thread renamer([&] {
    for (int i = 0; i < 200; ++i) s.set_name(i % 2 == 0 ? "busy" : "still busy");
  });
  for (int i = 0; i < 200; ++i) {
    sluice::fill(s, a.data(), static_cast<unsigned char>(i), a.size());
    const std::string n = s.name();
    EXPECT_TRUE(n == "busy" || n == "still busy") << n;
  }
  renamer.join();
  s.synchronize();
  EXPECT_EQ(s.name(), "still busy");
}

}  // namespace
