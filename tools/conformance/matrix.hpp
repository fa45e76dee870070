// `sluice conformance matrix A.json B.json ... [--markdown OUT.md]`: the
// verdict files of `sluice conformance --json` (one per backend run) side by
// side, one row per rule, one column per file. The reader validates a file
// and throws std::runtime_error naming what is wrong; it needs only
// nlohmann-json (the fuzz target, tools/fuzz/verdict_fuzz.cpp, links it alone).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace sluice::tool {

//! One rule's line of a verdict file.
struct rule_verdict {
  std::string id;       //!< "ORD-1"
  std::string level;    //!< "MUST" or "MAY"
  std::string verdict;  //!< "PASS", "FAIL", "SKIP", "NOT OBSERVED", "NO TEST", "NOT RUN"
};

//! What the matrix takes from one verdict file.
struct verdict_file {
  std::string label;    //!< the column's name: the file name without directory and ".json"
  std::string backend;  //!< facts.backend: "host", "cuda", "hip"
  std::string machine;  //!< facts.machine
  std::string date;     //!< facts.date
  std::vector<rule_verdict> rules;  //!< in the file's order
};

//! Parses the text of a verdict file (format "sluice-conformance-verdicts",
//! version 1). Throws std::runtime_error naming what is wrong: not JSON, the
//! wrong format or version, a missing or mistyped field, an unknown verdict,
//! an empty or repeated rule id.
verdict_file read_verdicts(const std::string& text, const std::string& label);

//! Reads the file at `path`; its label is the file name without ".json".
//! Throws std::runtime_error (without the path: the caller names the file).
verdict_file read_verdict_file(const std::string& path);

//! The rule x file table: rows in the order of the first file (rules only a
//! later file has come after), a cell per file (a rule absent from a file is
//! "-"), and the column "hip on AMD" (not run: no AMD GPU). A row whose
//! verdicts differ between the files that ran it (NOT RUN and "-" aside) is
//! marked "*", with a footnote. Plain text, or a Markdown table.
void print_matrix(std::ostream& out, const std::vector<verdict_file>& files, bool markdown);

}  // namespace sluice::tool
