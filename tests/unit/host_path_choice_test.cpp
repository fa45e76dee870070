// The GPU backend's choice of a host-function path
// (backends/cuda_hip/host_func/host_path.hpp), from made-up environments and
// /proc/self/maps contents: which tools are taken for ones that serialize
// kernel launches, and what the choice says.
// Built into the host unit tests (no vendor runtime needed).
#include "host_func/host_path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

using sluice::detail::host_path::choice;
using sluice::detail::host_path::decide;
using sluice::detail::host_path::input;
using sluice::detail::host_path::mode;

const std::string sanitizer_dir = "/usr/local/cuda-13.0/compute-sanitizer/";
const std::string ncu_dir =
    "/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/";
const std::vector<std::string> shared_libraries = {
    "libInterceptorInjectionTarget.so", "libTreeLauncherTargetInjection.so",
    "libTreeLauncherTargetUpdatePreloadInjection.so"};
std::vector<std::string> sanitizer_libraries() {
  std::vector<std::string> all = {"libsanitizer-collection.so", "libsanitizer-public.so"};
  all.insert(all.end(), shared_libraries.begin(), shared_libraries.end());
  return all;
}
std::vector<std::string> ncu_libraries() {
  std::vector<std::string> all = {"libcuda-injection.so"};
  all.insert(all.end(), shared_libraries.begin(), shared_libraries.end());
  return all;
}

//! A maps text in the kernel's layout: the program, libc, anonymous memory,
//! the kernel's own regions, and one mapping of each path.
std::string maps_with(const std::vector<std::string>& paths) {
  std::string text =
      "55d0c0a00000-55d0c0a21000 r-xp 00000000 103:02 131 /work/app\n"
      "55d0c1b00000-55d0c1b21000 rw-p 00000000 00:00 0                          [heap]\n"
      "7f3a10000000-7f3a10021000 rw-p 00000000 00:00 0 \n"
      "7f3a12000000-7f3a12195000 r-xp 00028000 103:02 2912  "
      "                        /usr/lib/x86_64-linux-gnu/libc.so.6\n";
  unsigned inode = 4000;
  for (const std::string& path : paths)
    text += "7f3a14000000-7f3a14200000 r-xp 00000000 103:02 " + std::to_string(++inode) +
            "                   " + path + "\n";
  text += "7ffd3c5fe000-7ffd3c600000 r-xp 00000000 00:00 0                          [vdso]\n";
  return text;
}

std::vector<std::string> in_dir(const std::string& dir, const std::vector<std::string>& files) {
  std::vector<std::string> paths;
  for (const std::string& file : files) paths.push_back(dir + file);
  return paths;
}

//! The choice of a CUDA build (default `kernel`, CUDA_LAUNCH_BLOCKING) for
//! this environment and these mapped paths.
choice cuda_choice(std::map<std::string, std::string> environment,
                   const std::vector<std::string>& mapped,
                   const std::string& default_path = "kernel",
                   std::vector<std::string> variables = {"CUDA_LAUNCH_BLOCKING"}) {
  input in;
  in.default_path = default_path;
  in.launch_blocking_variables = std::move(variables);
  in.getenv = [environment](const char* name) -> const char* {
    const auto it = environment.find(name);
    return it == environment.end() ? nullptr : it->second.c_str();
  };
  in.maps = maps_with(mapped);
  return decide(in);
}

void expect_choice(const choice& c, mode path, const std::string& name,
                   const std::string& evidence) {
  EXPECT_EQ(c.path, path) << c.name << ": " << c.evidence;
  EXPECT_EQ(c.name, name);
  EXPECT_EQ(c.evidence, evidence);
}

const std::string no_tool = "the default (no tool that serializes kernel launches found)";
const std::string sanitizer_seen = "compute-sanitizer detected (libsanitizer-collection.so loaded)";
const std::string ncu_seen = "Nsight Compute detected (libcuda-injection.so loaded)";

TEST(HostPathChoice, NoToolKeepsTheDefault) {
  expect_choice(cuda_choice({}, {}), mode::kernel, "kernel", no_tool);
  expect_choice(cuda_choice({}, {}, "auto"), mode::automatic, "auto", no_tool);
}

TEST(HostPathChoice, ComputeSanitizerTakesTheSignal) {
  expect_choice(cuda_choice({}, in_dir(sanitizer_dir, sanitizer_libraries())), mode::signal,
                "signal", sanitizer_seen);
}

TEST(HostPathChoice, ComputeSanitizerInstalledElsewhereIsFound) {
  expect_choice(cuda_choice({}, in_dir("/opt/tools/cs-2026/", sanitizer_libraries())), mode::signal,
                "signal", sanitizer_seen);
  // Either of its own libraries alone, versioned too.
  expect_choice(cuda_choice({}, {"/opt/tools/cs-2026/libsanitizer-public.so"}), mode::signal,
                "signal", "compute-sanitizer detected (libsanitizer-public.so loaded)");
  expect_choice(cuda_choice({}, {"/opt/cs/libsanitizer-collection.so.2025.3.1"}), mode::signal,
                "signal",
                "compute-sanitizer detected (libsanitizer-collection.so.2025.3.1 loaded)");
}

TEST(HostPathChoice, NsightComputeTakesTheSignal) {
  expect_choice(cuda_choice({}, in_dir(ncu_dir, ncu_libraries())), mode::signal, "signal",
                ncu_seen);
  expect_choice(cuda_choice({}, in_dir("/home/me/ncu-2026.1/target/", ncu_libraries())),
                mode::signal, "signal", ncu_seen);
}

TEST(HostPathChoice, TheAutoRuleUnderAToolTakesTheSignal) {
  expect_choice(cuda_choice({}, in_dir(ncu_dir, ncu_libraries()), "auto"), mode::signal, "signal",
                ncu_seen);
}

TEST(HostPathChoice, TheSharedInjectionLibrariesAloneProveNoTool) {
  expect_choice(cuda_choice({}, in_dir(sanitizer_dir, shared_libraries)), mode::kernel, "kernel",
                no_tool);
  expect_choice(cuda_choice({}, in_dir(ncu_dir, shared_libraries)), mode::kernel, "kernel",
                no_tool);
}

TEST(HostPathChoice, NsightSystemsKeepsTheDefault) {
  const std::string dir = "/opt/nvidia/nsight-systems/2025.3.1/target-linux-x64/";
  std::vector<std::string> nsys = {"libToolsInjection64.so", "libToolsInjectionProxy64.so",
                                   "libToolsInjectionCuda64.so"};
  nsys.insert(nsys.end(), shared_libraries.begin(), shared_libraries.end());
  expect_choice(cuda_choice({}, in_dir(dir, nsys)), mode::kernel, "kernel", no_tool);
}

TEST(HostPathChoice, LibrariesThatOnlyContainAToolsWordAreNotTheTool) {
  const std::vector<std::string> lookalikes = {"/home/me/lib/libmysanitizer.so",
                                               "/home/me/lib/libsanitizer_common_utils.so",
                                               "/home/me/sanitizer/libfoo.so",
                                               "/usr/local/cuda-13.0/compute-sanitizer/libfoo.so",
                                               "/home/me/libsanitizer-collection.so/libfoo.so",
                                               "/home/me/lib/libsanitizer-collection.so-old",
                                               "/home/me/lib/libsanitizer-collection.so.bak",
                                               "/home/me/lib/mylibcuda-injection.so",
                                               "/home/me/lib/libcuda-injection.so2"};
  expect_choice(cuda_choice({}, lookalikes), mode::kernel, "kernel", no_tool);
}

TEST(HostPathChoice, ADeletedButStillMappedLibraryCounts) {
  expect_choice(cuda_choice({}, {sanitizer_dir + "libsanitizer-collection.so (deleted)"}),
                mode::signal, "signal", sanitizer_seen);
}

TEST(HostPathChoice, UnreadableMapsKeepTheDefault) {
  input in;
  in.default_path = "kernel";
  in.launch_blocking_variables = {"CUDA_LAUNCH_BLOCKING"};
  in.getenv = [](const char*) -> const char* { return nullptr; };
  expect_choice(decide(in), mode::kernel, "kernel", no_tool);
}

// CUDA_LAUNCH_BLOCKING is on for a decimal integer other than 0, off for
// anything else, read strictly.
TEST(HostPathChoice, LaunchBlockingValues) {
  for (const std::string on : {"1", "2", "01", "10"}) {
    SCOPED_TRACE("CUDA_LAUNCH_BLOCKING='" + on + "'");
    expect_choice(cuda_choice({{"CUDA_LAUNCH_BLOCKING", on}}, {}), mode::signal, "signal",
                  "CUDA_LAUNCH_BLOCKING=" + on + " (kernel launches serialized)");
  }
  for (const std::string off :
       {"0", "00", "", "yes", "true", " 1", "1 ", "-1", "+1", "1x", "0x1"}) {
    SCOPED_TRACE("CUDA_LAUNCH_BLOCKING='" + off + "'");
    expect_choice(cuda_choice({{"CUDA_LAUNCH_BLOCKING", off}}, {}), mode::kernel, "kernel",
                  no_tool);
  }
}

// A tool's libraries are named before a variable.
TEST(HostPathChoice, AToolsLibraryIsNamedBeforeAVariable) {
  expect_choice(
      cuda_choice({{"CUDA_LAUNCH_BLOCKING", "1"}}, in_dir(sanitizer_dir, sanitizer_libraries())),
      mode::signal, "signal", sanitizer_seen);
}

// Only the runtime's own variables count: HIP's on AMD, not CUDA's.
TEST(HostPathChoice, OnlyTheRuntimesOwnVariablesCount) {
  const std::vector<std::string> amd = {"HIP_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL"};
  expect_choice(cuda_choice({{"AMD_SERIALIZE_KERNEL", "3"}}, {}, "kernel", amd), mode::signal,
                "signal", "AMD_SERIALIZE_KERNEL=3 (kernel launches serialized)");
  expect_choice(cuda_choice({{"HIP_LAUNCH_BLOCKING", "1"}}, {}, "kernel", amd), mode::signal,
                "signal", "HIP_LAUNCH_BLOCKING=1 (kernel launches serialized)");
  expect_choice(cuda_choice({{"CUDA_LAUNCH_BLOCKING", "1"}}, {}, "kernel", amd), mode::kernel,
                "kernel", no_tool);
  expect_choice(cuda_choice({{"AMD_SERIALIZE_KERNEL", "3"}}, {}), mode::kernel, "kernel", no_tool);
}

// HIP's AMD default, the callback, spins no kernel: kept, and the tool named.
TEST(HostPathChoice, ACallbackDefaultIsKeptUnderATool) {
  expect_choice(cuda_choice({}, {}, "callback"), mode::callback, "callback", no_tool);
  expect_choice(cuda_choice({}, in_dir(sanitizer_dir, sanitizer_libraries()), "callback"),
                mode::callback, "callback",
                "the default, which spins no kernel; " + sanitizer_seen);
  expect_choice(cuda_choice({{"AMD_SERIALIZE_KERNEL", "1"}}, {}, "callback",
                            {"HIP_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL"}),
                mode::callback, "callback",
                "the default, which spins no kernel; AMD_SERIALIZE_KERNEL=1 (kernel launches "
                "serialized)");
}

TEST(HostPathChoice, AnExplicitPathBeatsATool) {
  expect_choice(cuda_choice({{"SLUICE_HOST_FUNC_PATH", "callback"}},
                            in_dir(sanitizer_dir, sanitizer_libraries())),
                mode::callback, "callback",
                "SLUICE_HOST_FUNC_PATH=callback (set explicitly); " + sanitizer_seen);
  expect_choice(
      cuda_choice({{"SLUICE_HOST_FUNC_PATH", "kernel"}, {"CUDA_LAUNCH_BLOCKING", "1"}}, {}),
      mode::kernel, "kernel",
      "SLUICE_HOST_FUNC_PATH=kernel (set explicitly); CUDA_LAUNCH_BLOCKING=1 (kernel launches "
      "serialized)");
  expect_choice(cuda_choice({{"SLUICE_HOST_FUNC_PATH", "auto"}}, {}, "callback"), mode::automatic,
                "auto", "SLUICE_HOST_FUNC_PATH=auto (set explicitly)");
  expect_choice(cuda_choice({{"SLUICE_HOST_FUNC_PATH", "signal"}}, {}), mode::signal, "signal",
                "SLUICE_HOST_FUNC_PATH=signal (set explicitly)");
}

TEST(HostPathChoice, AnInvalidExplicitPathStaysInvalid) {
  const std::string must = " (set explicitly; must be auto, signal, kernel or callback)";
  expect_choice(cuda_choice({{"SLUICE_HOST_FUNC_PATH", "banana"}},
                            in_dir(sanitizer_dir, sanitizer_libraries())),
                mode::invalid, "invalid", "SLUICE_HOST_FUNC_PATH=banana" + must);
  expect_choice(cuda_choice({{"SLUICE_HOST_FUNC_PATH", ""}}, {}), mode::invalid, "invalid",
                "SLUICE_HOST_FUNC_PATH=" + must);
  expect_choice(cuda_choice({{"SLUICE_HOST_FUNC_PATH", "Signal"}}, {}), mode::invalid, "invalid",
                "SLUICE_HOST_FUNC_PATH=Signal" + must);
}

// Launches are serialized wherever a tool or switch is seen, whatever the
// path chosen: the backend then launches none of its kernels on user streams.
TEST(HostPathChoice, LaunchesSerializedWheneverAToolOrSwitchIsSeen) {
  EXPECT_FALSE(cuda_choice({}, {}).launches_serialized);
  EXPECT_FALSE(cuda_choice({}, in_dir(ncu_dir, shared_libraries)).launches_serialized);
  EXPECT_FALSE(cuda_choice({{"CUDA_LAUNCH_BLOCKING", "0"}}, {}).launches_serialized);
  EXPECT_TRUE(cuda_choice({}, in_dir(sanitizer_dir, sanitizer_libraries())).launches_serialized);
  EXPECT_TRUE(cuda_choice({}, in_dir(ncu_dir, ncu_libraries())).launches_serialized);
  EXPECT_TRUE(cuda_choice({{"CUDA_LAUNCH_BLOCKING", "1"}}, {}).launches_serialized);
  EXPECT_TRUE(cuda_choice({{"SLUICE_HOST_FUNC_PATH", "kernel"}, {"CUDA_LAUNCH_BLOCKING", "1"}}, {})
                  .launches_serialized);
  EXPECT_TRUE(cuda_choice({}, in_dir(sanitizer_dir, sanitizer_libraries()), "callback")
                  .launches_serialized);
  EXPECT_FALSE(cuda_choice({{"SLUICE_HOST_FUNC_PATH", "signal"}}, {}).launches_serialized);
}

// This process's input: its environment and its own maps.
TEST(HostPathChoice, ThisProcessReadsItsEnvironmentAndMaps) {
  ASSERT_EQ(::setenv("AMD_SERIALIZE_KERNEL", "7", 1), 0);
  const input in =
      sluice::detail::host_path::this_process("callback", {"AMD_SERIALIZE_KERNEL"});
  ASSERT_EQ(::unsetenv("AMD_SERIALIZE_KERNEL"), 0);
  EXPECT_EQ(in.default_path, "callback");
  ASSERT_TRUE(in.getenv);
  EXPECT_EQ(in.getenv("AMD_SERIALIZE_KERNEL"), nullptr);  // read now, not copied
  ASSERT_EQ(::setenv("AMD_SERIALIZE_KERNEL", "7", 1), 0);
  EXPECT_EQ(std::string(in.getenv("AMD_SERIALIZE_KERNEL")), "7");
  ASSERT_EQ(::unsetenv("AMD_SERIALIZE_KERNEL"), 0);
  // The maps name this program.
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(length, 0);
  EXPECT_NE(in.maps.find(std::string(self, static_cast<std::size_t>(length))), std::string::npos)
      << in.maps.substr(0, 2000);
}

}  // namespace
