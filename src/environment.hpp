// The integer parser of the settings registry (settings.cpp), also fuzzed
// alone (tests/fuzz). sluice's code reads the environment through
// settings.hpp's accessors, never by calling this. Internal.
#pragma once

#include <optional>
#include <string>

namespace sluice::detail {

//! The integer value of environment variable `name` in [low, high], or
//! `fallback` when it is unset or empty. Throws errc::invalid_argument with a
//! message naming the variable, its value and the range otherwise.
int integer_from_environment(const char* name, int fallback, int low, int high);

}  // namespace sluice::detail
