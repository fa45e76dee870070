// Loading libcupti (cupti_library.hpp).
#include "trace/cupti_library.hpp"

#include "settings.hpp"

#include <dlfcn.h>

#include <string>
#include <vector>

#ifndef SLUICE_CUPTI_SONAME
#error "SLUICE_CUPTI_SONAME: set by backends/cuda_hip/CMakeLists.txt"
#endif

namespace sluice::detail {

namespace {

template <class F>
bool find(void* lib, const char* name, F* f, std::string* missing) {
  *f = reinterpret_cast<F>(dlsym(lib, name));
  if (*f == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *f != nullptr;
}

}  // namespace

bool load_cupti(cupti_table& t, std::string* why) {
  // CUPTI works through the driver: where the runtime has not loaded one
  // (the simulated runtimes of tests/fake_cudart), libcupti is not loaded,
  // unless SLUICE_CUPTI_LIBRARY names a library (the tests name the
  // simulated runtime, which is also a CUPTI: tests/fake_cudart/sim_cupti.cpp).
  const std::string named = settings::cupti_library();  // empty: unset or empty
  if (named.empty()) {
    if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(driver);
    } else {
      *why = "no CUDA driver in this process (libcuda.so.1 is not loaded)";
      return false;
    }
  }
  std::vector<std::string> tried;
  if (!named.empty()) {
    tried.emplace_back(named);
  } else {
    tried.emplace_back(SLUICE_CUPTI_SONAME);
    for (const char* dir : {SLUICE_CUPTI_LIBDIR, SLUICE_CUPTI_EXTRAS, "/usr/local/cuda/lib64",
                            "/usr/local/cuda/extras/CUPTI/lib64"})
      tried.push_back(std::string(dir) + "/" + SLUICE_CUPTI_SONAME);
  }
  void* lib = nullptr;
  std::string errors;
  for (const auto& p : tried) {
    lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* e = dlerror();
    errors += "\n  " + (e != nullptr ? std::string(e) : p);
  }
  if (lib == nullptr) {
    *why = "libcupti could not be loaded:" + errors;
    return false;
  }
  std::string missing;
  find(lib, "cuptiSubscribe", &t.subscribe, &missing);
  find(lib, "cuptiUnsubscribe", &t.unsubscribe, &missing);
  find(lib, "cuptiActivityRegisterCallbacks", &t.register_callbacks, &missing);
  find(lib, "cuptiActivityEnable", &t.enable, &missing);
  find(lib, "cuptiActivityDisable", &t.disable, &missing);
  find(lib, "cuptiActivityFlushAll", &t.flush_all, &missing);
  find(lib, "cuptiActivityGetNextRecord", &t.next_record, &missing);
  find(lib, "cuptiActivityGetNumDroppedRecords", &t.dropped, &missing);
  find(lib, "cuptiActivityPushExternalCorrelationId", &t.push, &missing);
  find(lib, "cuptiActivityPopExternalCorrelationId", &t.pop, &missing);
  find(lib, "cuptiGetStreamIdEx", &t.stream_id, &missing);
  find(lib, "cuptiGetTimestamp", &t.timestamp, &missing);
  find(lib, "cuptiGetResultString", &t.result_string, &missing);
  std::string optional;
  find(lib, "cuptiEnableCallback", &t.enable_callback, &optional);
  if (!missing.empty()) {
    *why = "the loaded libcupti lacks " + missing;
    dlclose(lib);
    return false;
  }
  return true;
}

}  // namespace sluice::detail
