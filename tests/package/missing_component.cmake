# cmake -DPREFIX=<install prefix> -DPROJECT=<missing_component dir> -DWORK=<binary dir>
#       -DGENERATOR=<generator> -DCOMPONENTS=<comma-separated> -P missing_component.cmake
# Configures tests/package/missing_component against the install: it must fail,
# and the reason find_package gives must name every component asked for, with
# no ';' (a CMake list shown as text).
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${PROJECT}" -B "${WORK}" -G "${GENERATOR}"
                        "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DSLUICE_COMPONENTS=${COMPONENTS}"
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
if(status EQUAL 0)
  message(FATAL_ERROR "find_package(sluice COMPONENTS ${COMPONENTS}) succeeded")
endif()
string(FIND "${output}" "Reason given by package:" at)
if(at LESS 0)
  message(FATAL_ERROR "find_package gave no reason")
endif()
string(SUBSTRING "${output}" ${at} -1 reason)
# The end of the reason: the next message of CMake ("-- Configuring incomplete").
string(FIND "${reason}" "\n-- " end)
if(end GREATER 0)
  string(SUBSTRING "${reason}" 0 ${end} reason)
endif()
string(REGEX REPLACE "[ \n]+" " " reason "${reason}")  # CMake wraps the text
set(problems "")
if(reason MATCHES ";")
  string(APPEND problems "the reason contains a ';': ${reason}\n")
endif()
string(REPLACE "," ";" components "${COMPONENTS}")
foreach(component IN LISTS components)
  if(NOT reason MATCHES "'${component}'")
    string(APPEND problems "the reason does not name '${component}': ${reason}\n")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "${problems}")
endif()
