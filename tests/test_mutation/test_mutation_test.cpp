// The one parser of the test-only mutations (src/test_mutation.hpp), in builds
// with -DSLUICE_TEST_MUTATIONS=ON.
#include "test_mutation.hpp"

#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

namespace mutation = sluice::detail::mutation;
using mutation::kind;

TEST(TestMutationParser, EveryPartsNamesParse) {
  EXPECT_EQ(mutation::parse(nullptr), kind::none);
  EXPECT_EQ(mutation::parse(""), kind::none);
  EXPECT_EQ(mutation::parse("host.ignore_event_waits"), kind::ignore_event_waits);
  EXPECT_EQ(mutation::parse("host.borrow_accepts_any"), kind::borrow_accepts_any);
  EXPECT_EQ(mutation::parse("comm.post_at_enqueue"), kind::post_at_enqueue);
  EXPECT_EQ(mutation::parse("comm.untraced"), kind::untraced);
  EXPECT_EQ(mutation::parse("kokkos.unordered"), kind::unordered);
  EXPECT_EQ(mutation::parse("kokkos.lose_exceptions"), kind::lose_exceptions);
}

TEST(TestMutationParser, AnyOtherNameIsRejected) {
  // A name without its part, of another part, or misspelt: a run under it
  // would break nothing and pass.
  for (const char* name : {"banana", "ignore_event_waits", "comm.ignore_event_waits",
                           "host.ignore_event_waits ", "HOST.ignore_event_waits", "kokkos."}) {
    try {
      mutation::parse(name);
      ADD_FAILURE() << "'" << name << "' was accepted";
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("SLUICE_TEST_MUTATION='") + name + "'"), std::string::npos)
          << what;
      EXPECT_NE(what.find("host.ignore_event_waits"), std::string::npos) << what;  // the list
      EXPECT_NE(what.find("kokkos.lose_exceptions"), std::string::npos) << what;
    }
  }
}

TEST(TestMutationParser, NoneIsInForceWithoutTheVariable) {
  if (std::getenv("SLUICE_TEST_MUTATION") != nullptr) GTEST_SKIP() << "SLUICE_TEST_MUTATION is set";
  EXPECT_EQ(mutation::active(), kind::none);
  EXPECT_FALSE(mutation::is(kind::ignore_event_waits));
  EXPECT_TRUE(mutation::is(kind::none));
}

// Run by ctest unit.startup.MUTATION_banana (SLUICE_TEST_MUTATION=banana).
TEST(TestMutationStartup, AnUnknownNameFailsEveryCall) {
  const char* value = std::getenv("SLUICE_TEST_MUTATION");
  ASSERT_NE(value, nullptr) << "run through ctest (unit.startup.MUTATION_banana)";
  for (int attempt = 0; attempt < 2; ++attempt) {  // the failure is reported on every call
    try {
      sluice::device_count();
      FAIL() << "the backend started with SLUICE_TEST_MUTATION=" << value;
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("SLUICE_TEST_MUTATION"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(sluice::stream s{sluice::device(0)}, sluice::error);
}

}  // namespace
