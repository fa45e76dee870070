#include "environment.hpp"

#include <sluice/error.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~scoped_env() { ::unsetenv(name); }
};

TEST(Environment, FallbackWhenUnsetOrEmpty) {
  ::unsetenv("SLUICE_UNIT_VAR");
  EXPECT_EQ(sluice::detail::integer_from_environment("SLUICE_UNIT_VAR", 7, 1, 64), 7);
  scoped_env e("SLUICE_UNIT_VAR", "");
  EXPECT_EQ(sluice::detail::integer_from_environment("SLUICE_UNIT_VAR", 7, 1, 64), 7);
}

TEST(Environment, Parses) {
  scoped_env e("SLUICE_UNIT_VAR", "64");
  EXPECT_EQ(sluice::detail::integer_from_environment("SLUICE_UNIT_VAR", 7, 1, 64), 64);
}

TEST(Environment, RejectsGarbageAndRange) {
  for (const char* bad : {"0", "65", "-1", "abc", "3x", " ", "99999999999999999999"}) {
    scoped_env e("SLUICE_UNIT_VAR", bad);
    try {
      sluice::detail::integer_from_environment("SLUICE_UNIT_VAR", 7, 1, 64);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const sluice::error& err) {
      EXPECT_EQ(err.code(), sluice::errc::invalid_argument);
      const std::string what = err.what();
      EXPECT_NE(what.find("SLUICE_UNIT_VAR"), std::string::npos) << what;
      EXPECT_NE(what.find("1..64"), std::string::npos) << what;
    }
  }
}

}  // namespace
