# ctest trace.environment: SLUICE_TRACE=<file> makes a program that never calls
# the trace API write its trace at exit.
#   cmake -DEXE=<program> -DOUT=<file> [-DSOURCE=cupti] -P trace_env.cmake
# SOURCE: the trace must say it came from that source (the GPU backends).
# A program that does not end within 100 s fails (ctest
# sim.trace.cuda.cupti.environment: the CUPTI source started from the
# engine's constructor once waited for the engine it was in).
file(REMOVE "${OUT}")
set(ENV{SLUICE_TRACE} "${OUT}")
set(ENV{SLUICE_HOST_DEVICES} "4")
execute_process(COMMAND "${EXE}" --ops=2000 --threads=4 RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 100)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the program failed (${rc}):\n${out}\n${err}")
endif()
if(NOT EXISTS "${OUT}")
  message(FATAL_ERROR "SLUICE_TRACE=${OUT}: no trace was written\n${err}")
endif()
file(READ "${OUT}" json)
foreach(part "\"traceEvents\"" "\"name\": \"copy\", \"cat\": \"op\"" "\"name\": \"wait\", \"cat\": \"op\""
             "\"ph\": \"f\"" "\"name\": \"host_func\", \"cat\": \"op\"")
  string(FIND "${json}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the trace lacks ${part}")
  endif()
endforeach()
if(DEFINED SOURCE)
  string(FIND "${json}" "\"trace_source\": \"${SOURCE}\"" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the trace does not say \"trace_source\": \"${SOURCE}\"\n${err}")
  endif()
endif()
if(NOT err MATCHES "trace of [0-9]+ operations written")
  message(FATAL_ERROR "no report on stderr: ${err}")
endif()
