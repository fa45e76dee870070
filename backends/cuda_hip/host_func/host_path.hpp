// Which path the GPU backend's host functions take in this process, and why
// (chosen_path.cpp makes it for the process; sluice::detail::host_function_path
// reports it).
// Pure: no vendor header, and the input is plain data, so the host unit tests
// drive it with made-up environments and memory maps
// (tests/unit/host_path_choice_test.cpp).
//
// SLUICE_HOST_FUNC_PATH, where set, chooses. Otherwise the backend's default
// (the traits' default_host_path), except where that default spins a kernel
// (`kernel`, the gate kernel, and `auto`, whose rule falls back on it) and a
// tool that serializes kernel launches is present: then `signal`, which
// launches no kernel (a stream memory write and wait). On one H200 (CUDA
// 13.0, tools 2025.3.1) the gate kernel hung the process under
// compute-sanitizer, Nsight Compute and CUDA_LAUNCH_BLOCKING=1, and the
// signal path passed; so did the vendor callback, but its enqueue blocks
// once many streams hold for the host (there, with 64 streams each held
// behind a host function, the 57th cudaLaunchHostFunc).
//
// The tools are known by the libraries they load into the process, by file
// name (the last component of the mapped path, a version suffix allowed),
// never by a part of the path: an install elsewhere is still found, a user's
// library that only contains such a word is not. Each tool's libraries
// (host_path.cpp) are its own; the injection libraries that compute-sanitizer and Nsight
// Compute share (libInterceptorInjectionTarget.so, libTreeLauncherTarget*.so,
// which other Nsight tools may load too) prove neither, and Nsight Systems,
// which does not serialize launches (libToolsInjection*.so), keeps the
// default.
//
// cuda-gdb's `set cuda launch_blocking on` serializes launches from inside
// the debugger: its documentation names nothing that it leaves in the
// process (no variable, no library), so it is not detected; under it, set
// SLUICE_HOST_FUNC_PATH=signal.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace sluice::detail::host_path {

enum class mode { automatic, signal, kernel, callback, invalid };

//! What the choice is made from.
struct input {
  //! The backend's default: "auto", "signal", "kernel" or "callback".
  std::string default_path;
  //! The runtime's variables that serialize kernel launches where set to a
  //! decimal integer other than 0 (the traits' launch_blocking_variables).
  std::vector<std::string> launch_blocking_variables;
  //! The environment: a variable's value, or nullptr where it is unset.
  std::function<const char*(const char*)> getenv;
  //! The text of /proc/self/maps (empty: nothing known to be loaded).
  std::string maps;
};

struct choice {
  mode path = mode::invalid;
  //! "auto", "signal", "kernel", "callback" or "invalid".
  std::string name;
  //! Why, in one line: "compute-sanitizer detected (libsanitizer-collection.so loaded)".
  std::string evidence;
  //! A tool or switch that serializes kernel launches was found, whatever the
  //! path: every kernel launch then waits for its kernel, so the backend
  //! launches none of its own on streams that may be held (its SM copy
  //! kernels stay off, copies take the copy engine).
  bool launches_serialized = false;
};

choice decide(const input& in);

//! This process's input: the environment (settings::value), and
//! /proc/self/maps as it is now (empty where it cannot be read). A tool's
//! library may be loaded only as the vendor's driver starts (Nsight
//! Compute's comes through the CUDA driver's injection): read it after the
//! runtime has started.
input this_process(std::string default_path, std::vector<std::string> launch_blocking_variables);

}  // namespace sluice::detail::host_path
