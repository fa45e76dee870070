# ctest docs.misuse_table: docs/misuse.md must contain the misuse table exactly
# as tests/conformance/misuse.cpp writes it (SLUICE_MISUSE_TABLE), so that the
# documented table is the tested one.
#   cmake -DEXE=<sluice-conformance-host> -DOUT=<file> -DDOC=<docs/misuse.md> -P misuse_doc.cmake
set(ENV{SLUICE_MISUSE_TABLE} "${OUT}")
execute_process(COMMAND "${EXE}" "--gtest_filter=Errors.ERR_4__misuse_table*" --gtest_brief=1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the misuse table test failed:\n${out}")
endif()
file(READ "${OUT}" table)
file(READ "${DOC}" doc)
string(FIND "${doc}" "${table}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} does not contain the table the test writes (${OUT}); "
                      "regenerate: SLUICE_MISUSE_TABLE=<file> sluice-conformance-host "
                      "--gtest_filter='Errors.ERR_4__misuse_table*', then paste it")
endif()
