// Prints docs/api.md's "Settings" table from the registry's declarations
// (src/settings.cpp), between the two markers that ctest docs.settings_table
// looks for in docs/api.md (settings_doc.cmake): the reference lists exactly
// what the code declares. Regenerate the table with
//   build/tests/docs/sluice-settings-table
// and paste its output over the old table.
#include "settings.hpp"

#include <cstdio>
#include <string>

namespace {

namespace settings = sluice::detail::settings;

std::string default_of(const settings::declaration& d) {
  if (d.shown_default != nullptr) return d.shown_default;
  return std::to_string(d.fallback);
}

std::string range_of(const settings::declaration& d) {
  if (d.shown_range != nullptr) return d.shown_range;
  return std::to_string(d.low) + ".." + std::to_string(d.high);
}

}  // namespace

int main() {
  std::printf(
      "<!-- settings table: printed by tests/docs/settings_table.cpp from "
      "src/settings.cpp -->\n");
  std::printf("| variable | whose | type | default | range | read by | what it does |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const settings::declaration* d = settings::begin(); d != settings::end(); ++d)
    std::printf("| `%s` | %s | %s | %s | %s | %s | %s |\n", d->name, d->of,
                settings::type_name(d->type), default_of(*d).c_str(), range_of(*d).c_str(),
                d->exists_in, d->what);
  std::printf("<!-- end of the settings table -->\n");
  return 0;
}
