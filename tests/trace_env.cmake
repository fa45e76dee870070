# ctest trace.environment: SLUICE_TRACE=<file> makes a program that never calls
# the trace API write its trace at exit.
#   cmake -DEXE=<program> -DOUT=<file> -P trace_env.cmake
file(REMOVE "${OUT}")
set(ENV{SLUICE_TRACE} "${OUT}")
set(ENV{SLUICE_HOST_DEVICES} "4")
execute_process(COMMAND "${EXE}" --ops=2000 --threads=4 RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
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
if(NOT err MATCHES "trace of [0-9]+ operations written")
  message(FATAL_ERROR "no report on stderr: ${err}")
endif()
