# sluice::kokkos (include/sluice/kokkos.hpp, src/kokkos/): built when
# find_package(Kokkos) finds Kokkos (users bring their own; docs/kokkos.md).
# It goes with the sluice backend that matches Kokkos's device: a Kokkos built
# with CUDA serves sluice::cuda, with HIP sluice::hip, otherwise (Serial,
# OpenMP, Threads) sluice::host. SLUICE_KOKKOS_BACKEND is that backend, or
# empty when sluice::kokkos is not built.
set(SLUICE_KOKKOS_BACKEND "")
if(SLUICE_ENABLE_KOKKOS STREQUAL "OFF")
  return()
endif()
if(SLUICE_ENABLE_KOKKOS STREQUAL "ON")
  find_package(Kokkos REQUIRED)
else()
  find_package(Kokkos QUIET)
endif()
if(NOT Kokkos_FOUND)
  message(STATUS "sluice::kokkos: not built (no Kokkos found; set Kokkos_ROOT)")
  return()
endif()
include(${PROJECT_SOURCE_DIR}/cmake/sluiceKokkosDependency.cmake)
if("CUDA" IN_LIST Kokkos_DEVICES)
  set(_sluice_kb cuda)
elseif("HIP" IN_LIST Kokkos_DEVICES)
  set(_sluice_kb hip)
else()
  set(_sluice_kb host)
endif()
if(NOT _sluice_kb IN_LIST SLUICE_BACKENDS)
  message(STATUS "sluice::kokkos: not built (Kokkos ${Kokkos_VERSION} runs on ${Kokkos_DEVICES}: "
                 "it needs the sluice ${_sluice_kb} backend, which this build does not have)")
  return()
endif()
set(SLUICE_KOKKOS_BACKEND ${_sluice_kb})
message(STATUS "sluice::kokkos: Kokkos ${Kokkos_VERSION} (${Kokkos_DEVICES}) with sluice::${_sluice_kb}")

add_library(sluice_kokkos ${PROJECT_SOURCE_DIR}/src/kokkos/kokkos.cpp)
add_library(sluice::kokkos ALIAS sluice_kokkos)
set_target_properties(sluice_kokkos PROPERTIES EXPORT_NAME kokkos POSITION_INDEPENDENT_CODE ON)
target_link_libraries(sluice_kokkos PUBLIC sluice::${_sluice_kb} sluice::kokkos_dependency)
target_include_directories(sluice_kokkos PRIVATE ${PROJECT_SOURCE_DIR}/src)  # test_mutation.hpp
# With a CUDA Kokkos, find_package(Kokkos) sends every compile and link line
# that carries Kokkos's flags through its nvcc_wrapper (kokkos_compilation
# GLOBAL): nothing to do here. sluice's warning set only where the host
# compiler sees Kokkos's headers alone (nvcc reports in Kokkos's own headers).
if(_sluice_kb STREQUAL "host")
  sluice_set_warnings(sluice_kokkos)
endif()
unset(_sluice_kb)
