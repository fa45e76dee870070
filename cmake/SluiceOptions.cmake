# Every sluice option, declared in one place.
include(GNUInstallDirs)

option(SLUICE_ENABLE_CUDA "Build the sluice::cuda backend (needs the CUDA toolkit)" OFF)
option(SLUICE_ENABLE_HIP "Build the sluice::hip backend (needs hipcc / libamdhip64-dev)" OFF)
option(SLUICE_BUILD_TESTS "Build the unit and conformance tests" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_BUILD_TOOLS "Build the sluice command" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_BUILD_BENCH "Build the benchmarks (needs Google Benchmark)" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_INSTALL "Generate install rules and the package config" ${PROJECT_IS_TOP_LEVEL})
option(SLUICE_WERROR "Treat warnings as errors" OFF)
set(SLUICE_SANITIZE "" CACHE STRING "Sanitizers for the whole build: '', 'address,undefined' or 'thread'")

if(SLUICE_SANITIZE)
  if(SLUICE_SANITIZE MATCHES "thread" AND SLUICE_SANITIZE MATCHES "address")
    message(FATAL_ERROR "SLUICE_SANITIZE: ThreadSanitizer cannot be combined with AddressSanitizer; "
                        "configure two build trees ('thread' and 'address,undefined').")
  endif()
  add_compile_options(-fsanitize=${SLUICE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SLUICE_SANITIZE})
endif()

if(SLUICE_ENABLE_CUDA OR SLUICE_ENABLE_HIP)
  message(FATAL_ERROR "SLUICE_ENABLE_CUDA / SLUICE_ENABLE_HIP: the GPU backends are not implemented "
                      "yet in this version (see docs/design.md); configure without them.")
endif()
