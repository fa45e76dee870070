# ctest tool.trace.png: a program traced with SLUICE_TRACE, then
# `sluice trace report <file> --png <png>`: the report covers its 16 streams (8,
# plus 4 + 4 the stress program makes to fill and read back) and the
# PNG is a PNG.
#   cmake -DPROGRAM=<traced program> -DSLUICE=<sluice> -DOUT=<dir> -P tools/tests/trace_png.cmake
set(trace "${OUT}/tool-trace.json")
set(png "${OUT}/tool-trace.png")
file(REMOVE "${trace}" "${png}")
set(ENV{SLUICE_TRACE} "${trace}")
set(ENV{SLUICE_HOST_DEVICES} "4")
execute_process(COMMAND "${PROGRAM}" --ops=3000 --threads=4 --streams=8 RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET)
unset(ENV{SLUICE_TRACE})
if(NOT rc EQUAL 0 OR NOT EXISTS "${trace}")
  message(FATAL_ERROR "the traced program failed (${rc}) or wrote no trace")
endif()
execute_process(COMMAND "${SLUICE}" trace report "${trace}" --png "${png}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sluice trace report failed (${rc}):\n${out}\n${err}")
endif()
foreach(part "operations on 16 streams" "overlap \\(" "critical path: " "timeline: ")
  if(NOT out MATCHES "${part}")
    message(FATAL_ERROR "the report lacks '${part}':\n${out}")
  endif()
endforeach()
file(READ "${png}" magic LIMIT 8 HEX)
if(NOT magic STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "${png} is not a PNG (starts with ${magic})")
endif()
