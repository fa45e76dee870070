# Whether the built libraries hold the test-only mutations (src/test_mutation.hpp).
#   cmake -DEXPECT=absent|present -DLIBRARIES=<lib>|<lib>|... -DPARSER_LIBRARY=<backend lib>
#         -DNAMES_FROM=src/test_mutation.cpp [-DOBJCOPY=<objcopy>] -DWORK=<dir>
#         -P check_libraries.cmake
# absent: no library holds a mutation's name (the parser's table, read from
#   NAMES_FROM) or a symbol of the mechanism (namespace sluice::detail::mutation,
#   sluice::kokkos's mutated submit).
# present: PARSER_LIBRARY holds every name and the parser's symbols: the scan
#   sees a compiled-in mechanism, so "absent" can fail.
# Debug information is stripped from a copy first: it names the enumerators of
# the seams' constant false, which is no code.
foreach(var EXPECT LIBRARIES PARSER_LIBRARY NAMES_FROM WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_libraries.cmake: -D${var}=... is missing")
  endif()
endforeach()

file(STRINGS ${NAMES_FROM} table REGEX "^ *\\{\"[a-z]+\\.[a-z_]+\", kind::")
set(names "")
foreach(line IN LISTS table)
  string(REGEX REPLACE "^ *\\{\"([a-z]+\\.[a-z_]+)\".*" "\\1" name "${line}")
  list(APPEND names ${name})
endforeach()
list(LENGTH names count)
if(count LESS 20)
  message(FATAL_ERROR "${NAMES_FROM}: found ${count} mutation names in the parser's table, "
                      "expected every one (20 or more): has its layout changed?")
endif()
# The mangled namespace sluice::detail::mutation, and sluice::kokkos's seam.
set(symbols "6detail8mutation" "submit_is_mutated" "mutated_submit")

# text_of(<library> <variable>): the library's printable strings, without debug information.
function(text_of library out)
  if(NOT EXISTS ${library})
    message(FATAL_ERROR "${library} is not built")
  endif()
  set(scanned ${library})
  if(OBJCOPY)
    get_filename_component(base ${library} NAME)
    set(scanned ${WORK}/stripped-${base})
    execute_process(COMMAND ${OBJCOPY} --strip-debug ${library} ${scanned} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${OBJCOPY} --strip-debug ${library} failed (${rc})")
    endif()
  endif()
  file(STRINGS ${scanned} lines)
  string(JOIN "\n" text ${lines})
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

if(EXPECT STREQUAL "absent")
  string(REPLACE "|" ";" libraries "${LIBRARIES}")
  set(found "")
  foreach(library IN LISTS libraries)
    text_of(${library} text)
    foreach(needle IN LISTS names symbols)
      string(FIND "${text}" "${needle}" at)
      if(at GREATER -1)
        list(APPEND found "${library}: ${needle}")
      endif()
    endforeach()
  endforeach()
  if(found)
    string(REPLACE ";" "\n  " found "${found}")
    message(FATAL_ERROR "a build without -DSLUICE_TEST_MUTATIONS holds test-only mutations:\n  "
                        "${found}")
  endif()
  list(LENGTH libraries n)
  message(STATUS "${n} libraries, none holds any of ${count} mutation names or the mechanism")
elseif(EXPECT STREQUAL "present")
  text_of(${PARSER_LIBRARY} text)
  set(missing "")
  foreach(needle IN LISTS names "6detail8mutation")
    string(FIND "${text}" "${needle}" at)
    if(at EQUAL -1)
      list(APPEND missing ${needle})
    endif()
  endforeach()
  if(missing)
    message(FATAL_ERROR "${PARSER_LIBRARY} lacks, with -DSLUICE_TEST_MUTATIONS=ON: ${missing}")
  endif()
  message(STATUS "${PARSER_LIBRARY} holds all ${count} mutation names and the parser")
else()
  message(FATAL_ERROR "EXPECT must be absent or present, not '${EXPECT}'")
endif()
