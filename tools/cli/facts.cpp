#include "cli/facts.hpp"

#include "settings.hpp"

#include <sluice/sluice.hpp>

#include <sys/utsname.h>

#include <ostream>
#include <sstream>
#include <thread>

namespace sluice::tool {

namespace {

std::string compiler_description() {
#if defined(__clang__)
  return "clang++ " __clang_version__;
#elif defined(__GNUC__)
  return "g++ " __VERSION__;
#else
  return "unknown compiler";
#endif
}

std::string machine_description() {
  std::ostringstream out;
  struct utsname names {};
  if (uname(&names) == 0) {
    out << names.sysname << ' ' << names.release << ' ' << names.machine;
  } else {
    out << "unknown system";
  }
  if (const unsigned cpus = std::thread::hardware_concurrency(); cpus != 0) {
    out << ", " << cpus << " CPUs";
  }
  return out.str();
}

std::string format_time(std::time_t when, const char* format) {
  std::tm parts{};
  gmtime_r(&when, &parts);
  char text[64];
  const std::size_t length = std::strftime(text, sizeof text, format, &parts);
  return std::string(text, length);
}

//! Why a backend sees no device. The GPU backends treat a missing driver like
//! a machine without devices (count 0); their version string says "no driver".
std::string no_device_reason(const std::string& backend_version) {
  const backend_kind kind = sluice::backend();
  if (kind == backend_kind::host) return "the host backend has no simulated device";
  const std::string vendor = kind == backend_kind::cuda ? "CUDA" : "HIP";
  std::string reason = "no " + vendor + " device";
  std::string why;
  if (backend_version.find("no driver") != std::string::npos) why = "no " + vendor + " driver";
  // The devices a program may see, narrowed by the vendor's variable.
  const char* const variables[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                   "ROCR_VISIBLE_DEVICES"};
  for (const char* variable : variables) {
    if (kind == backend_kind::cuda && std::string(variable) != "CUDA_VISIBLE_DEVICES") continue;
    if (const char* value = sluice::detail::settings::value(variable); value != nullptr) {
      why += (why.empty() ? "" : ", ") + std::string(variable) + "='" + value + "'";
    }
  }
  return why.empty() ? reason : reason + " (" + why + ")";
}

}  // namespace

machine_facts collect_facts() {
  machine_facts facts;
  facts.sluice_version = SLUICE_VERSION_STRING;
  facts.compiler = compiler_description();
  facts.backend = sluice::backend_name();
  facts.backend_version = sluice::backend_version();
  const int count = sluice::device_count();
  for (int id = 0; id < count; ++id) facts.device_names.push_back(sluice::device(id).name());
  if (count == 0) facts.no_device_reason = no_device_reason(facts.backend_version);
  facts.machine = machine_description();
  facts.when = std::time(nullptr);
  return facts;
}

std::string utc_date(std::time_t when) { return format_time(when, "%Y-%m-%d %H:%M:%S UTC"); }

std::string iso_date(std::time_t when) { return format_time(when, "%Y-%m-%dT%H:%M:%SZ"); }

std::string device_list(const machine_facts& facts) {
  if (facts.device_names.empty()) {
    return "none usable: " +
           (facts.no_device_reason.empty() ? std::string("no device") : facts.no_device_reason);
  }
  std::string text = std::to_string(facts.device_names.size());
  for (std::size_t id = 0; id < facts.device_names.size(); ++id) {
    text += (id == 0 ? ": [" : ", [") + std::to_string(id) + "] " + facts.device_names[id];
  }
  return text;
}

void print_facts(std::ostream& out, const machine_facts& facts) {
  out << "  sluice:   " << facts.sluice_version << " (built with " << facts.compiler << ")\n"
      << "  backend:  " << facts.backend << " (" << facts.backend_version << ")\n"
      << "  devices:  " << device_list(facts) << '\n'
      << "  machine:  " << facts.machine << "\n  date:     " << utc_date(facts.when) << '\n';
}

}  // namespace sluice::tool
