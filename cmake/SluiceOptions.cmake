# Every sluice option, declared in one place.
include(GNUInstallDirs)

option(SLUICE_ENABLE_CUDA "Build the sluice::cuda backend (needs the CUDA toolkit)" OFF)
option(SLUICE_ENABLE_HIP "Build the sluice::hip backend (needs hipcc / libamdhip64-dev)" OFF)
option(SLUICE_BUILD_TESTS "Build the unit and conformance tests" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_BUILD_TOOLS "Build the sluice command" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_BUILD_BENCH "Build the benchmarks (the host bench needs Google Benchmark; it is skipped without)" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_INSTALL "Generate install rules and the package config" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_WERROR "Treat warnings as errors" OFF)
set(SLUICE_ENABLE_KOKKOS "AUTO" CACHE STRING "Build sluice::kokkos: AUTO (when find_package(Kokkos) finds it), ON (required) or OFF")
set_property(CACHE SLUICE_ENABLE_KOKKOS PROPERTY STRINGS AUTO ON OFF)
option(SLUICE_TRACING "Compile tracing in (SLUICE_TRACE, trace_begin); OFF removes even its one load per operation" ON)
set(SLUICE_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures of sluice's device code (tests, benches); 90 = H100/H200")
set(SLUICE_HIP_ARCHITECTURES "gfx90a;gfx908;gfx1030" CACHE STRING "AMD targets of sluice's device code (hipcc --offload-arch)")
set(SLUICE_SANITIZE "" CACHE STRING "Sanitizers for the whole build: '', 'address,undefined' or 'thread'")
option(SLUICE_FUZZ "Build the libFuzzer targets (tools/fuzz; clang only, with SLUICE_SANITIZE=address,undefined in CI)" OFF)

if(NOT SLUICE_TRACING)
  # src/trace.hpp: trace::enabled() becomes a constant false; trace_begin throws not_supported.
  add_compile_definitions(SLUICE_NO_TRACING)
endif()

if(SLUICE_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "SLUICE_FUZZ=ON needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++ "
                      "(Debian 12: scripts/setup --fuzz installs clang and libclang-rt-14-dev)")
endif()

if(SLUICE_SANITIZE)
  if(SLUICE_SANITIZE MATCHES "thread" AND SLUICE_SANITIZE MATCHES "address")
    message(FATAL_ERROR "SLUICE_SANITIZE: ThreadSanitizer cannot be combined with AddressSanitizer; "
                        "configure two build trees ('thread' and 'address,undefined').")
  endif()
  add_compile_options(-fsanitize=${SLUICE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SLUICE_SANITIZE})
endif()

# The GPU backends: stop at configure time, saying what to install, when the
# vendor toolkit is missing.
if(SLUICE_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR "SLUICE_ENABLE_CUDA=ON needs the CUDA toolkit (nvcc, cudart; e.g. /usr/local/cuda): "
                        "install it or pass -DCUDAToolkit_ROOT=<dir>.")
  endif()
  if(CUDAToolkit_VERSION VERSION_LESS 12.0)
    message(FATAL_ERROR "SLUICE_ENABLE_CUDA=ON needs CUDA 12 or newer (found ${CUDAToolkit_VERSION}).")
  endif()
endif()
if(SLUICE_ENABLE_HIP)
  find_package(hip CONFIG QUIET PATHS /opt/rocm /usr/lib/x86_64-linux-gnu/cmake/hip)
  find_program(SLUICE_HIPCC hipcc)
  if(NOT hip_FOUND OR NOT SLUICE_HIPCC)
    message(FATAL_ERROR "SLUICE_ENABLE_HIP=ON needs HIP (hipcc and its CMake package); on Debian 12: "
                        "apt-get install hipcc libamdhip64-dev (scripts/setup --hip).")
  endif()
endif()
