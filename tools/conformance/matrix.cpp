#include "conformance/matrix.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::tool {

namespace {

using json = nlohmann::json;

const char* const known_verdicts[] = {"PASS", "FAIL", "SKIP", "NOT OBSERVED", "NO TEST", "NOT RUN"};

//! The member `key` of `object` as a string; throws naming `where`.key.
std::string string_member(const json& object, const char* key, const std::string& where) {
  const auto found = object.find(key);
  if (found == object.end()) throw std::runtime_error(where + " has no \"" + key + "\"");
  if (!found->is_string())
    throw std::runtime_error(where + "." + key + " is " + found->type_name() + ", not a string");
  return found->get<std::string>();
}

}  // namespace

verdict_file read_verdicts(const std::string& text, const std::string& label) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("not a JSON document: ") + e.what());
  }
  if (!doc.is_object()) throw std::runtime_error("the document is not a JSON object");
  const std::string format = string_member(doc, "format", "the document");
  if (format != "sluice-conformance-verdicts")
    throw std::runtime_error("format is \"" + format +
                             "\", not \"sluice-conformance-verdicts\" (not a verdict file "
                             "of 'sluice conformance --json')");
  const auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || *version != 1)
    throw std::runtime_error("version is missing or not 1 (this sluice reads version 1)");

  verdict_file file;
  file.label = label;
  const auto facts = doc.find("facts");
  if (facts == doc.end() || !facts->is_object())
    throw std::runtime_error("\"facts\" is missing or not an object");
  file.backend = string_member(*facts, "backend", "facts");
  if (file.backend.empty()) throw std::runtime_error("facts.backend is empty");
  file.machine = string_member(*facts, "machine", "facts");
  file.date = string_member(*facts, "date", "facts");

  const auto rules = doc.find("rules");
  if (rules == doc.end()) throw std::runtime_error("the document has no \"rules\"");
  if (!rules->is_array()) throw std::runtime_error("\"rules\" is not an array");
  if (rules->empty()) throw std::runtime_error("\"rules\" is empty");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < rules->size(); ++i) {
    const json& rule = (*rules)[i];
    const std::string where = "rules[" + std::to_string(i) + "]";
    if (!rule.is_object()) throw std::runtime_error(where + " is not an object");
    rule_verdict verdict;
    verdict.id = string_member(rule, "id", where);
    if (verdict.id.empty()) throw std::runtime_error(where + ".id is empty");
    if (!seen.insert(verdict.id).second)
      throw std::runtime_error(where + ": rule " + verdict.id + " appears twice");
    verdict.level = string_member(rule, "level", where + " (" + verdict.id + ")");
    if (verdict.level != "MUST" && verdict.level != "MAY")
      throw std::runtime_error(where + " (" + verdict.id + "): level \"" + verdict.level +
                               "\" is neither MUST nor MAY");
    verdict.verdict = string_member(rule, "verdict", where + " (" + verdict.id + ")");
    if (std::none_of(std::begin(known_verdicts), std::end(known_verdicts),
                     [&](const char* known) { return verdict.verdict == known; }))
      throw std::runtime_error(where + " (" + verdict.id + "): unknown verdict \"" +
                               verdict.verdict + "\"");
    file.rules.push_back(std::move(verdict));
  }
  return file;
}

verdict_file read_verdict_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read the file");
  std::string label = path.substr(path.find_last_of('/') + 1);
  if (label.size() > 5 && label.compare(label.size() - 5, 5, ".json") == 0)
    label.resize(label.size() - 5);
  return read_verdicts(text.str(), label);
}

void print_matrix(std::ostream& out, const std::vector<verdict_file>& files, bool markdown) {
  // Rows: the first file's order, then rules only later files have.
  std::vector<std::string> ids;
  std::map<std::string, std::string> levels;
  std::vector<std::map<std::string, std::string>> cells(files.size());
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (const auto& rule : files[f].rules) {
      if (levels.emplace(rule.id, rule.level).second) ids.push_back(rule.id);
      cells[f][rule.id] = rule.verdict;
    }
  }
  std::vector<std::string> header = {"rule", "level"};
  for (const auto& file : files)
    header.push_back(file.label == file.backend ? file.backend
                                                : file.backend + " (" + file.label + ")");
  header.push_back("hip on AMD");
  std::vector<std::vector<std::string>> rows;
  int differing = 0;
  for (const auto& id : ids) {
    std::vector<std::string> row = {id, levels[id]};
    std::set<std::string> ran;
    for (std::size_t f = 0; f < files.size(); ++f) {
      const auto found = cells[f].find(id);
      const std::string cell = found == cells[f].end() ? "-" : found->second;
      if (cell != "-" && cell != "NOT RUN") ran.insert(cell);
      row.push_back(cell);
    }
    row.push_back("not run: no AMD GPU");
    if (ran.size() > 1) {
      row[0] += " *";
      ++differing;
    }
    rows.push_back(std::move(row));
  }

  if (markdown) {
    const auto line = [&out](const std::vector<std::string>& cells_of_row) {
      out << '|';
      for (const auto& cell : cells_of_row) out << ' ' << cell << " |";
      out << '\n';
    };
    line(header);
    out << '|';
    for (std::size_t i = 0; i < header.size(); ++i) out << " --- |";
    out << '\n';
    for (const auto& row : rows) line(row);
  } else {
    std::vector<std::size_t> width(header.size(), 0);
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const auto& row : rows)
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    const auto line = [&](const std::vector<std::string>& cells_of_row) {
      std::string text;
      for (std::size_t i = 0; i < cells_of_row.size(); ++i) {
        text += cells_of_row[i];
        if (i + 1 < cells_of_row.size())
          text += std::string(width[i] - cells_of_row[i].size() + 2, ' ');
      }
      out << text << '\n';
    };
    line(header);
    for (const auto& row : rows) line(row);
  }
  out << '\n';
  if (differing > 0) {
    out << (markdown ? "\\* " : "* ") << differing << (differing == 1 ? " rule's" : " rules'")
        << " verdicts differ between the runs (NOT RUN and - aside)\n";
  } else {
    out << "The verdicts agree between the runs on every rule (NOT RUN and - aside).\n";
  }
  if (markdown) out << '\n';
  out << (markdown ? "`-`" : "-")
      << ": the rule is not in that file. hip on AMD: not run: no AMD GPU.\n";
  if (markdown) out << '\n';
  out << "Runs:\n";
  if (markdown) out << '\n';
  for (const auto& file : files)
    out << (markdown ? "- " : "  ") << file.label << ": backend " << file.backend << ", "
        << file.machine << ", " << file.date << '\n';
}

}  // namespace sluice::tool
