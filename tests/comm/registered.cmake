# sluice-comm-registered-<backend> (registered.cpp): sends and receives in a
# registered_host_memory range go unstaged, 2 ranks, the data checked. Included
# by tests/comm/CMakeLists.txt (SLUICE_COMM_LAUNCH: how its tests launch ranks).
# ctest comm.<backend>.registered (host backend, the mpi engine: it stages no
# host memory), sim.comm.cuda.registered.mpi and .nccl against the simulated
# runtime (and simulated NCCL): under nccl a registered buffer must go
# unstaged while a partly registered or plain host buffer is staged.
foreach(backend IN LISTS SLUICE_TESTED_COMM_BACKENDS)
  set(exe sluice-comm-registered-${backend})
  add_executable(${exe} ${CMAKE_CURRENT_LIST_DIR}/registered.cpp)
  target_link_libraries(${exe} PRIVATE sluice_comm_${backend})
  sluice_set_warnings(${exe})
  if(backend STREQUAL "host")
    add_test(NAME comm.host.registered
             COMMAND ${SLUICE_COMM_LAUNCH} -np 2 $<TARGET_FILE:${exe}>)
    set_tests_properties(comm.host.registered PROPERTIES
      LABELS comm TIMEOUT 120 RUN_SERIAL TRUE
      PASS_REGULAR_EXPRESSION "result: every check held"
      ENVIRONMENT "SLUICE_COMM_TIMEOUT_S=30;SLUICE_HOST_DEVICES=2")
  elseif(backend STREQUAL "cuda" AND TARGET sluice_sim_cudart)
    set(engines mpi)
    if(SLUICE_COMM_NCCL AND TARGET sluice_sim_nccl)
      list(APPEND engines nccl)
      add_dependencies(${exe} sluice_sim_nccl)
    endif()
    foreach(engine IN LISTS engines)
      add_test(NAME sim.comm.cuda.registered.${engine}
               COMMAND ${SLUICE_COMM_LAUNCH} -np 2 $<TARGET_FILE:${exe}> --engine=${engine})
      set_tests_properties(sim.comm.cuda.registered.${engine} PROPERTIES
        LABELS "sim;comm" TIMEOUT 120 RUN_SERIAL TRUE
        PASS_REGULAR_EXPRESSION "engine ${engine}.*result: every check held"
        ENVIRONMENT "LD_LIBRARY_PATH=$<TARGET_FILE_DIR:sluice_sim_cudart>;SLUICE_SIM_DEVICES=2;SLUICE_COMM_TIMEOUT_S=30")
    endforeach()
  endif()
endforeach()
