# ctest comm.<backend>.killed_rank: runs sluice-comm-kill under mpirun with a
# time limit. Passes when the job ended (non-zero exit) before the limit:
# through the launcher (a killed rank ends the job) or with rank 0 reporting
# errc::comm_failure. Fails on a hang (the limit) or a silent success.
#   cmake -DMPIEXEC=... -DPROGRAM=... -DLIMIT=seconds -P kill_check.cmake
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIEXEC} --allow-run-as-root --oversubscribe -np 2 ${PROGRAM}
  TIMEOUT ${LIMIT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(TIMESTAMP end "%s")
math(EXPR took "${end} - ${start}")
message("exit: ${rc} after ${took} s\n--- stdout\n${out}\n--- stderr\n${err}")
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end within ${LIMIT} s (${rc}): a hang")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job succeeded although rank 1 was killed")
endif()
if(NOT out MATCHES "first exchange done")
  message(FATAL_ERROR "the job failed before the exchange: not the case under test")
endif()
if(out MATCHES "rank 0: comm_failure")
  message("ended: rank 0 saw errc::comm_failure")
else()
  message("ended: through the launcher (exit ${rc})")
endif()
