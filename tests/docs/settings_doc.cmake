# ctest docs.settings_table: docs/api.md must contain the settings table
# exactly as the registry prints it (settings_table.cpp), so that the
# reference lists every variable sluice reads, as src/settings.cpp declares it.
#   cmake -DEXE=<sluice-settings-table> -DOUT=<file> -DDOC=<docs/api.md> -P settings_doc.cmake
execute_process(COMMAND "${EXE}" RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} failed (${rc}):\n${err}")
endif()
file(WRITE "${OUT}" "${table}")
file(READ "${DOC}" doc)
string(FIND "${doc}" "${table}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} does not contain the settings table that the registry prints "
                      "(${OUT}); regenerate it: run ${EXE} and paste its output over the "
                      "table between the two markers in ${DOC}")
endif()
