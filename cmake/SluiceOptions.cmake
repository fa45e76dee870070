# Every sluice option, declared in one place.
include(GNUInstallDirs)

option(SLUICE_ENABLE_CUDA "Build the sluice::cuda backend (needs the CUDA toolkit)" OFF)
option(SLUICE_ENABLE_HIP "Build the sluice::hip backend (needs hipcc / libamdhip64-dev)" OFF)
option(SLUICE_BUILD_TESTS "Build the unit and conformance tests" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_BUILD_TOOLS "Build the sluice command" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_BUILD_BENCH "Build the benchmarks (the host bench needs Google Benchmark; it is skipped without)" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_BUILD_PROBES "Build the probes of the vendors' behaviour (bench/probes, sluice-probe-*, run by scripts/gpu-check); with SLUICE_BUILD_BENCH" OFF)
option(SLUICE_INSTALL "Generate install rules and the package config" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_WERROR "Treat warnings as errors" OFF)
set(SLUICE_ENABLE_COMM "AUTO" CACHE STRING "Build sluice::comm: AUTO (when find_package(MPI) finds MPI), ON (required) or OFF")
set_property(CACHE SLUICE_ENABLE_COMM PROPERTY STRINGS AUTO ON OFF)
set(SLUICE_ENABLE_KOKKOS "AUTO" CACHE STRING "Build sluice::kokkos: AUTO (when find_package(Kokkos) finds it), ON (required) or OFF")
set_property(CACHE SLUICE_ENABLE_KOKKOS PROPERTY STRINGS AUTO ON OFF)
option(SLUICE_TRACING "Compile tracing in (SLUICE_TRACE, trace_begin); OFF removes even its one load per operation" ON)
set(SLUICE_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures of sluice's device code (tests, benches); 90 = H100/H200")
set(SLUICE_HIP_ARCHITECTURES "gfx90a;gfx908;gfx1030" CACHE STRING "AMD targets of sluice's device code (hipcc --offload-arch)")
# HIP's platform for sluice::hip (cmake/SluiceHip.cmake, docs/hip-nvidia.md): amd (ROCm,
# hipcc) or nvidia (HIP's headers over the CUDA runtime: nvcc for the device code,
# SLUICE_CUDA_ARCHITECTURES, cudart linked statically).
set(SLUICE_HIP_PLATFORM "amd" CACHE STRING "HIP's platform for sluice::hip: amd or nvidia")
set_property(CACHE SLUICE_HIP_PLATFORM PROPERTY STRINGS amd nvidia)
set(SLUICE_SANITIZE "" CACHE STRING "Sanitizers for the whole build: '', 'address,undefined' or 'thread'")
option(SLUICE_FUZZ "Build the libFuzzer targets (tools/fuzz; clang only, with SLUICE_SANITIZE=address,undefined in CI)" OFF)
# Test-only mutations (src/test_mutation.hpp, docs/conformance/mutations.md): off,
# the libraries hold no mutation and SLUICE_TEST_MUTATION is not read.
option(SLUICE_TEST_MUTATIONS "Compile in the test-only mutations (SLUICE_TEST_MUTATION) and their ctests (label mutation)" OFF)

if(NOT SLUICE_TRACING)
  # src/trace.hpp: trace::enabled() becomes a constant false; trace_begin throws not_supported.
  add_compile_definitions(SLUICE_NO_TRACING)
endif()

if(SLUICE_TEST_MUTATIONS)
  # Everywhere, so that every file sees the same seams (src/test_mutation.hpp,
  # the mutated submit of include/sluice/kokkos.hpp).
  add_compile_definitions(SLUICE_TEST_MUTATIONS)
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
if(NOT SLUICE_HIP_PLATFORM MATCHES "^(amd|nvidia)$")
  message(FATAL_ERROR "SLUICE_HIP_PLATFORM must be amd or nvidia (not '${SLUICE_HIP_PLATFORM}').")
endif()
if(SLUICE_ENABLE_HIP AND SLUICE_HIP_PLATFORM STREQUAL "amd")
  find_package(hip CONFIG QUIET PATHS /opt/rocm /usr/lib/x86_64-linux-gnu/cmake/hip)
  find_program(SLUICE_HIPCC hipcc)
  if(NOT hip_FOUND OR NOT SLUICE_HIPCC)
    message(FATAL_ERROR "SLUICE_ENABLE_HIP=ON needs HIP (hipcc and its CMake package); on Debian 12: "
                        "apt-get install hipcc libamdhip64-dev (scripts/setup --hip).")
  endif()
elseif(SLUICE_ENABLE_HIP)
  # HIP's NVIDIA platform: HIP 5.2's headers compile against CUDA 11 (not 13: removed
  # cudaDeviceProp fields), so the CUDA here is Debian's 11.8 (nvidia-cuda-toolkit: headers
  # and libcudart_static.a in the system directories, nvcc in /usr/bin), not /usr/local/cuda.
  # sluice::cuda (CUDA 13) and this need two build trees.
  if(SLUICE_ENABLE_CUDA)
    message(FATAL_ERROR "SLUICE_HIP_PLATFORM=nvidia and SLUICE_ENABLE_CUDA=ON need two CUDA "
                        "toolkits (11.8 for HIP 5.2, 12+ for sluice::cuda): configure two build trees.")
  endif()
  set(_sluice_hint "on Debian 12: scripts/setup --hip-nvidia (docs/hip-nvidia.md)")
  find_path(SLUICE_HIP_INCLUDE_DIR hip/nvidia_detail/nvidia_hip_runtime_api.h)
  find_path(SLUICE_HIP_CUDA_INCLUDE_DIR cuda_runtime_api.h PATHS /usr/include NO_DEFAULT_PATH)
  find_program(SLUICE_HIP_NVCC nvcc PATHS /usr/bin NO_DEFAULT_PATH)
  find_program(SLUICE_HIP_NVCC_HOST_COMPILER NAMES g++-11 cuda-g++)
  find_library(SLUICE_HIP_CUDART_STATIC NAMES libcudart_static.a)
  foreach(_sluice_var SLUICE_HIP_INCLUDE_DIR SLUICE_HIP_CUDA_INCLUDE_DIR SLUICE_HIP_NVCC
                      SLUICE_HIP_NVCC_HOST_COMPILER SLUICE_HIP_CUDART_STATIC)
    if(NOT ${_sluice_var})
      message(FATAL_ERROR "SLUICE_HIP_PLATFORM=nvidia: ${_sluice_var} not found (HIP's headers, "
                          "CUDA 11's headers, nvcc, g++-11 for nvcc, libcudart_static.a); ${_sluice_hint}.")
    endif()
  endforeach()
  file(STRINGS ${SLUICE_HIP_CUDA_INCLUDE_DIR}/cuda_runtime_api.h _sluice_cudart
       REGEX "^#define CUDART_VERSION +[0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _sluice_cudart "${_sluice_cudart}")
  if(NOT _sluice_cudart OR _sluice_cudart LESS 11000 OR NOT _sluice_cudart LESS 12000)
    message(FATAL_ERROR "SLUICE_HIP_PLATFORM=nvidia needs CUDA 11 in ${SLUICE_HIP_CUDA_INCLUDE_DIR} "
                        "(HIP 5.2's NVIDIA headers); found CUDART_VERSION '${_sluice_cudart}'; ${_sluice_hint}.")
  endif()
endif()
