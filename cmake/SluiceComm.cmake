# sluice::comm (include/sluice/comm.hpp, src/comm/; docs/comm.md): built when
# find_package(MPI) finds MPI (its C API, used from C++). One library per backend
# (sluice_comm_<backend>: a program links one backend); sluice::comm is the
# host backend's in this tree. SLUICE_COMM_BACKENDS lists those built. On the
# GPU backends device buffers go through pinned staging (src/comm/impl/staging.cpp:
# the MPI on our machines is not GPU-aware).
set(SLUICE_COMM_BACKENDS "")
if(SLUICE_ENABLE_COMM STREQUAL "OFF")
  return()
endif()
# MPI's C API through the C++ compiler, without the removed C++ bindings.
set(MPI_CXX_SKIP_MPICXX TRUE)
if(SLUICE_ENABLE_COMM STREQUAL "ON")
  find_package(MPI REQUIRED COMPONENTS CXX)
else()
  find_package(MPI QUIET COMPONENTS CXX)
endif()
if(NOT MPI_CXX_FOUND)
  message(STATUS "sluice::comm: not built (no MPI found: scripts/setup installs Open MPI)")
  return()
endif()
message(STATUS "sluice::comm: MPI ${MPI_CXX_VERSION} (${MPI_CXX_LIBRARY_VERSION_STRING})")

# The nccl engine's NCCL calls (src/comm/nccl/create_lanes.cpp, enqueue.cpp,
# lane_pool.cpp): the CUDA backend's, when nccl.h and libnccl are found (the
# toolkit's directory or the system's); SLUICE_COMM_NCCL says whether they
# are built. Elsewhere src/comm/nccl/not_built.cpp stands in for them.
set(SLUICE_COMM_NCCL OFF)
if("cuda" IN_LIST SLUICE_BACKENDS)
  find_path(SLUICE_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(SLUICE_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(SLUICE_NCCL_INCLUDE_DIR AND SLUICE_NCCL_LIBRARY)
    set(SLUICE_COMM_NCCL ON)
    message(STATUS "sluice::comm: the nccl engine on CUDA (${SLUICE_NCCL_LIBRARY})")
  else()
    message(STATUS "sluice::comm: no nccl engine (nccl.h or libnccl not found)")
  endif()
endif()

# src/comm (docs/design.md): the API and the engine thread; impl/, what both
# engines share; mpi/ and nccl/, each engine's transport (nccl/'s NCCL calls
# apart, above).
set(_sluice_comm_sources
  checks.cpp communicator.cpp engine_thread.cpp enqueue.cpp group.cpp
  names.cpp operations.cpp staging_plan.cpp trace_clock.cpp trace_span.cpp
  impl/batch_pool.cpp impl/event_pool.cpp impl/failure.cpp impl/message.cpp impl/staging.cpp
  mpi/poll.cpp mpi/post.cpp mpi/receive.cpp mpi/reduce.cpp mpi/ring_all_reduce.cpp
  mpi/small_collectives.cpp mpi/thresholds.cpp mpi/types.cpp
  nccl/poll.cpp nccl/size_exchange.cpp)
list(TRANSFORM _sluice_comm_sources PREPEND ${PROJECT_SOURCE_DIR}/src/comm/)

foreach(_sluice_cb IN LISTS SLUICE_BACKENDS)
  set(_sluice_nccl_calls ${PROJECT_SOURCE_DIR}/src/comm/nccl/not_built.cpp)
  if(_sluice_cb STREQUAL "cuda" AND SLUICE_COMM_NCCL)
    set(_sluice_nccl_calls
      ${PROJECT_SOURCE_DIR}/src/comm/nccl/create_lanes.cpp
      ${PROJECT_SOURCE_DIR}/src/comm/nccl/enqueue.cpp
      ${PROJECT_SOURCE_DIR}/src/comm/nccl/lane_pool.cpp)
  endif()
  add_library(sluice_comm_${_sluice_cb} ${_sluice_comm_sources} ${_sluice_nccl_calls})
  target_include_directories(sluice_comm_${_sluice_cb} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(sluice_comm_${_sluice_cb} PUBLIC sluice::${_sluice_cb} MPI::MPI_CXX)
  if(_sluice_cb STREQUAL "cuda" AND SLUICE_COMM_NCCL)
    target_include_directories(sluice_comm_${_sluice_cb} SYSTEM PRIVATE ${SLUICE_NCCL_INCLUDE_DIR})
    target_link_libraries(sluice_comm_${_sluice_cb} PRIVATE ${SLUICE_NCCL_LIBRARY} CUDA::cudart)
  endif()
  set_target_properties(sluice_comm_${_sluice_cb} PROPERTIES
    EXPORT_NAME comm_${_sluice_cb} POSITION_INDEPENDENT_CODE ON)
  sluice_set_warnings(sluice_comm_${_sluice_cb})
  list(APPEND SLUICE_COMM_BACKENDS ${_sluice_cb})
endforeach()
add_library(sluice::comm ALIAS sluice_comm_host)
unset(_sluice_cb)
# Those whose tests, examples and benches are built (SLUICE_TEST_BACKENDS).
set(SLUICE_TESTED_COMM_BACKENDS "")
foreach(_sluice_cb IN LISTS SLUICE_COMM_BACKENDS)
  if(_sluice_cb IN_LIST SLUICE_TESTED_BACKENDS)
    list(APPEND SLUICE_TESTED_COMM_BACKENDS ${_sluice_cb})
  endif()
endforeach()
unset(_sluice_cb)
unset(_sluice_nccl_calls)
unset(_sluice_comm_sources)
