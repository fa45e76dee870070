// The rules both backends share (src/backend_rules.hpp), on their own.
#include "backend_rules.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <new>
#include <vector>

namespace {

struct fake_stream {
  int refs = 0;
  void add_ref() noexcept { ++refs; }
};

//! A list that cannot grow while `full` is set, as a vector whose push_back
//! finds no memory.
struct list_without_memory {
  std::vector<fake_stream*> items;
  bool full = false;
  auto begin() const { return items.begin(); }
  auto end() const { return items.end(); }
  void push_back(fake_stream* s) {
    if (full) throw std::bad_alloc();
    items.push_back(s);
  }
};

// The host backend took the stream's reference before push_back, so a
// bad_alloc there leaked it and the stream's state never went back to its pool.
TEST(BackendRules, RecordStreamTakesNoReferenceWhenTheListCannotGrow) {
  std::mutex m;
  fake_stream s;
  list_without_memory recorded;
  recorded.full = true;
  EXPECT_THROW(
      sluice::detail::add_recorded_stream(m, static_cast<fake_stream*>(nullptr), recorded, s),
      std::bad_alloc);
  EXPECT_EQ(s.refs, 0) << "a reference was taken for a stream that was not listed";
  recorded.full = false;
  sluice::detail::add_recorded_stream(m, static_cast<fake_stream*>(nullptr), recorded, s);
  sluice::detail::add_recorded_stream(m, static_cast<fake_stream*>(nullptr), recorded, s);
  EXPECT_EQ(s.refs, 1) << "a stream recorded twice must be listed and referenced once";
  EXPECT_EQ(recorded.items.size(), 1U);
}

TEST(BackendRules, RecordStreamIgnoresTheBuffersOwnStream) {
  std::mutex m;
  fake_stream own;
  std::vector<fake_stream*> recorded;
  sluice::detail::add_recorded_stream(m, &own, recorded, own);
  EXPECT_TRUE(recorded.empty());
  EXPECT_EQ(own.refs, 0);
}

TEST(BackendRules, RefCountRevivesNoStateOnItsWayToThePool) {
  sluice::detail::ref_count r;
  r.reset_to_one();
  EXPECT_TRUE(r.try_add());
  EXPECT_FALSE(r.drop());
  EXPECT_TRUE(r.drop());
  EXPECT_FALSE(r.try_add()) << "a count that reached zero must not be taken again";
}

TEST(BackendRules, ElapsedArgumentsNameWhatIsWrong) {
  using sluice::detail::check_elapsed_arguments;
  const auto message = [](auto call) -> std::string {
    try {
      call();
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message([] {
              check_elapsed_arguments(false, true, 0, 0, true, true);
            }).find("event_options::timing (start: no, stop: yes)"),
            std::string::npos);
  EXPECT_NE(message([] {
              check_elapsed_arguments(true, true, 0, 1, true, true);
            }).find("different devices (0 and 1)"),
            std::string::npos);
  EXPECT_NE(message([] {
              check_elapsed_arguments(true, true, 0, 0, true, false);
            }).find("stop event was never recorded"),
            std::string::npos);
  EXPECT_NO_THROW(check_elapsed_arguments(true, true, 1, 1, true, true));
}

}  // namespace
