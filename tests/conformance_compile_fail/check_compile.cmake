# cmake -DCXX=<compiler> -DSTD_FLAG=<-std=c++17> -DINCLUDE_DIR=<dir> -DSOURCE=<file>
#       -DEXPECT=<fail|compile> -P check_compile.cmake
#
# Runs the compiler on SOURCE in syntax-only mode. EXPECT=fail passes only when
# the compiler rejects the file with a diagnostic about a deleted function (so
# a missing header or a typo cannot pass for the expected error);
# EXPECT=compile passes only when it is accepted.
foreach(var CXX INCLUDE_DIR SOURCE EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_compile.cmake: -D${var}=... is missing")
  endif()
endforeach()

execute_process(
  COMMAND "${CXX}" ${STD_FLAG} -fsyntax-only "-I${INCLUDE_DIR}" "${SOURCE}"
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)

if(EXPECT STREQUAL "fail")
  if(result EQUAL 0)
    message(FATAL_ERROR "${SOURCE} compiled, but it must not:\n${output}")
  endif()
  if(NOT output MATCHES "deleted")
    message(FATAL_ERROR "${SOURCE} failed to compile, but not because of a deleted "
                        "constructor:\n${output}")
  endif()
  message(STATUS "rejected as expected:\n${output}")
elseif(EXPECT STREQUAL "compile")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${SOURCE} must compile:\n${output}")
  endif()
else()
  message(FATAL_ERROR "check_compile.cmake: EXPECT must be 'fail' or 'compile', not '${EXPECT}'")
endif()
