// The four ways `sluice conformance` reports the verdicts (verdicts.hpp): the
// terminal table, JUnit XML (one testcase per rule), Markdown and a JSON
// verdict file.
#pragma once

#include "conformance/verdicts.hpp"

#include <iosfwd>

namespace sluice::tool {

//! One line per rule, the tests that name no rule, failures outside tests, and the summary.
void print_table(std::ostream& out, const conformance_report& report);
void write_junit(std::ostream& out, const conformance_report& report);
void write_markdown(std::ostream& out, const conformance_report& report);
//! The verdict file (--json): the facts, one object per rule (id, level,
//! verdict, detail, its tests), the tests that name no rule, the run's errors.
void write_json(std::ostream& out, const conformance_report& report);

}  // namespace sluice::tool
