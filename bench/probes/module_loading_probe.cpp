// sluice-probe-module-loading: which module loading mode CUDA runs with in a
// program, and whether the driver was already loaded before the program's
// first CUDA call. `sluice`: the first call is sluice's (a stream);
// `raw-setenv`: CUDA_MODULE_LOADING=EAGER set with setenv, then cudaFree(0);
// `raw`: cudaFree(0) alone; `raw-first`: cudaFree(0), then sluice's stream. Prints one line per fact.
#include <sluice/sluice.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <dlfcn.h>

namespace {

bool driver_loaded() { return dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY) != nullptr; }

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "(unset)";
}

void loading_mode(const char* when) {
  using fn_t = CUresult (*)(CUmoduleLoadingMode*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    std::printf("%s: cuModuleGetLoadingMode not found\n", when);
    return;
  }
  CUmoduleLoadingMode m{};
  const CUresult r = reinterpret_cast<fn_t>(fn)(&m);
  std::printf("%s: cuModuleGetLoadingMode %d -> %s\n", when, static_cast<int>(r),
              m == CU_MODULE_EAGER_LOADING ? "EAGER" : m == CU_MODULE_LAZY_LOADING ? "LAZY" : "?");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string how = argc > 1 ? argv[1] : "sluice";
  std::printf("at main: CUDA_MODULE_LOADING=%s, libcuda loaded: %s\n", env("CUDA_MODULE_LOADING"),
              driver_loaded() ? "yes" : "no");
  if (how == "raw-first") {
    (void)cudaFree(nullptr);
    sluice::stream s{sluice::device{0}};
  } else if (how == "sluice") {
    sluice::stream s{sluice::device{0}};
    std::printf("after sluice's first stream: CUDA_MODULE_LOADING=%s\n", env("CUDA_MODULE_LOADING"));
  } else {
    if (how == "raw-setenv") setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    (void)cudaFree(nullptr);
  }
  loading_mode(how.c_str());
  std::ifstream maps("/proc/self/maps");
  std::string line, seen;
  while (std::getline(maps, line))
    if (line.find("/libcuda.so") != std::string::npos && seen.find(line.substr(line.rfind(' ') + 1)) == std::string::npos) {
      seen += line.substr(line.rfind(' ') + 1) + " ";
    }
  std::printf("libcuda mapped: %s\n", seen.empty() ? "(none)" : seen.c_str());
  return 0;
}
