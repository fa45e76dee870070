// Which tests a --filter of `sluice conformance` selects, as gtest selects them.
#pragma once

#include <string>

namespace sluice::tool {

//! gtest's filter syntax: "POSITIVE[:POSITIVE...][-NEGATIVE[:NEGATIVE...]]" with * and ?.
bool matches_filter(const std::string& full_name, const std::string& filter);

}  // namespace sluice::tool
