# ctest unit.watchdog: EXE must exit 124 and name its hanging test on stderr.
execute_process(COMMAND ${CMAKE_COMMAND} -E env SLUICE_CONFORMANCE_TEST_TIMEOUT=1 ${EXE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 124)
  message(FATAL_ERROR "expected exit 124 from the watchdog, got ${rc}\n${out}\n${err}")
endif()
if(NOT err MATCHES "WatchdogProbe.RunsLongerThanTheLimit has run for [0-9]+ s")
  message(FATAL_ERROR "the watchdog did not name the test:\n${err}")
endif()
