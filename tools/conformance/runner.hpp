// `sluice conformance`: runs the conformance tests linked into this
// executable (the OBJECT library sluice_conformance_<backend>) in-process and
// reports one verdict per rule (see conformance/verdicts.hpp and docs/tool.md).
#pragma once

#include <string>
#include <vector>

namespace sluice::tool {

struct conformance_options {
  std::string filter;                        //!< gtest filter, e.g. "*EVT_*"; empty: every test
  std::string junit_path;                    //!< write JUnit XML here when not empty
  std::string markdown_path;                 //!< write a Markdown report here when not empty
  std::string json_path;                     //!< write the JSON verdict file here when not empty
  bool list = false;                         //!< list the tests per rule instead of running them
  bool verbose = false;                      //!< keep gtest's own per-test output
  std::vector<std::string> gtest_arguments;  //!< --gtest_* options passed through
};

//! Runs (or lists) the suite; returns the exit code: 0 when no rule failed or
//! lacks a test, 1 otherwise, 3 when the backend has no device (nothing ran;
//! the reports are written all the same, every rule NOT RUN with the reason). `program` is this
//! executable's path, which gtest re-executes for death tests. Throws sluice::error when the
//! backend cannot start and std::runtime_error when a report file cannot be written.
int run_conformance(const std::string& program, const conformance_options& options);

//! True when gtest started this process to run one death test; such a child
//! must go straight to gtest (run_death_test_child) and print nothing else.
bool is_death_test_child(int argc, char** argv);
int run_death_test_child(int argc, char** argv);

}  // namespace sluice::tool
