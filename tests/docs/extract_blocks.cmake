# Writes the ```cpp blocks of one Markdown document into one C++ translation
# unit per variant, for the doc tests (tests/docs/CMakeLists.txt):
#
#   cmake -DDOC=<file.md> -DDOC_NAME=<shown in messages> -DOUT_PREFIX=<dir/name>
#         "-DDECLARED=host;cuda;..." "-DBUILT=host;..." -P extract_blocks.cmake
#
# writes <OUT_PREFIX>_<variant>.cpp (.cu for cuda) for each variant in BUILT,
# each file rewritten only when its text changes (so an edit to one block
# recompiles only its variant).
#
# What a block is, from its first line:
#   `// needs: cuda` (or kokkos, comm; several: `// needs: kokkos, cuda`): the
#       block goes to that variant's file (compiled with sluice::cuda,
#       sluice::kokkos or sluice::comm); without it, to the host variant.
#       A variant in DECLARED but not in BUILT is not compiled in this build;
#       one not in DECLARED is an error.
#   `// fragment` (may be combined: `// fragment, needs: cuda`): statements,
#       compiled as the body of a function that nothing calls.
# Otherwise a block that defines `int main(` is a whole program: its main is
# renamed and the file's own main runs every program of the file in turn
# (tests/docs/CMakeLists.txt says which variants run). Any other block is
# compiled as declarations. Every block gets a namespace of its own, named by
# its first line in the document, and `#line` directives point the compiler's
# messages at the document. `#include` lines are moved to the top of the file
# (after <sluice/sluice.hpp>, which every file includes). A whole program ends
# with an explicit `return` (its main is no longer the program's main).
cmake_minimum_required(VERSION 3.25)

foreach(var DOC DOC_NAME OUT_PREFIX DECLARED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "extract_blocks.cmake: -D${var}=... is required")
  endif()
endforeach()

# CMake lists split on ';' and treat '[' and ']' specially: those characters are
# replaced by control characters while the text is handled line by line.
string(ASCII 1 semicolon)
string(ASCII 2 open_bracket)
string(ASCII 3 close_bracket)
string(ASCII 4 backslash)
file(READ "${DOC}" text)
string(REPLACE "\\" "${backslash}" text "${text}")
string(REPLACE ";" "${semicolon}" text "${text}")
string(REPLACE "[" "${open_bracket}" text "${text}")
string(REPLACE "]" "${close_bracket}" text "${text}")
string(REPLACE "\n" ";" lines "${text}")

set(variants host kokkos comm cuda)
foreach(v IN LISTS variants)
  set(includes_${v} "")
  set(body_${v} "")
  set(programs_${v} "")
  set(count_${v} 0)
endforeach()

set(number 0)        # line number in the document
set(state outside)   # outside, cpp (inside a ```cpp block), other (inside another fence)
set(fence_indent "")
foreach(line IN LISTS lines)
  math(EXPR number "${number} + 1")
  if(state STREQUAL "outside")
    if(line MATCHES "^( *)```(cpp|c\\+\\+) *$")
      set(state cpp)
      set(fence_indent "${CMAKE_MATCH_1}")
      math(EXPR first "${number} + 1")
      set(block_lines "")
    elseif(line MATCHES "^ *```")
      set(state other)
    endif()
    continue()
  endif()
  if(state STREQUAL "other")
    if(line MATCHES "^ *``` *$")
      set(state outside)
    endif()
    continue()
  endif()
  # Inside a ```cpp block.
  if(NOT line MATCHES "^ *``` *$")
    if(fence_indent AND line MATCHES "^${fence_indent}(.*)$")
      set(line "${CMAKE_MATCH_1}")
    endif()
    list(APPEND block_lines "|${line}")  # '|': an empty line is an element too
    continue()
  endif()
  set(state outside)

  # One block: lines first..number-1 of the document.
  list(LENGTH block_lines size)
  if(size EQUAL 0)
    continue()
  endif()
  list(GET block_lines 0 head)
  string(SUBSTRING "${head}" 1 -1 head)
  set(fragment FALSE)
  set(needs "")
  if(head MATCHES "^//")
    if(head MATCHES "^// *fragment")
      set(fragment TRUE)
    endif()
    if(head MATCHES "needs: *([a-z, ]+)")
      string(REGEX REPLACE "[ ,]+" ";" needs "${CMAKE_MATCH_1}")
      list(REMOVE_ITEM needs "")
    endif()
  endif()
  set(variant host)
  if(needs)
    list(REMOVE_ITEM needs host)
    list(LENGTH needs n_needs)
    if(n_needs GREATER 1)
      # kokkos or comm with cuda: the cuda variant links sluice::cuda only.
      message(FATAL_ERROR "${DOC_NAME}:${first}: a block needs more than one of kokkos, comm, "
                          "cuda (${needs}); the doc tests build one variant per block")
    endif()
    list(GET needs 0 variant)
    if(NOT variant IN_LIST variants)
      message(FATAL_ERROR "${DOC_NAME}:${first}: unknown need '${variant}' (known: kokkos, comm, cuda)")
    endif()
  endif()
  if(NOT variant IN_LIST DECLARED)
    message(FATAL_ERROR "${DOC_NAME}:${first}: a block needs ${variant}, which "
                        "tests/docs/CMakeLists.txt does not build for this document (it builds: "
                        "${DECLARED})")
  endif()
  if(NOT variant IN_LIST BUILT)
    continue()  # not compiled in this build (no CUDA, no Kokkos, no MPI)
  endif()

  set(program FALSE)
  if(NOT fragment)
    foreach(l IN LISTS block_lines)
      if(l MATCHES "^[|]int main\\(")
        set(program TRUE)
      endif()
    endforeach()
  endif()

  # The block's text: #include lines moved to the top (a blank line stays in
  # their place, so that the #line numbers hold).
  set(code "")
  set(at ${first})
  foreach(l IN LISTS block_lines)
    string(SUBSTRING "${l}" 1 -1 l)
    if(l MATCHES "^ *# *include")
      string(APPEND includes_${variant} "#line ${at} \"${DOC}\"\n${l}\n")
      set(l "")
    elseif(program AND l MATCHES "^int main\\(")
      string(REGEX REPLACE "^int main\\(" "int doc_main(" l "${l}")
    endif()
    string(APPEND code "${l}\n")
    math(EXPR at "${at} + 1")
  endforeach()

  set(ns "doc_line_${first}")
  if(fragment)
    string(APPEND body_${variant} "namespace ${ns} {\nvoid fragment() {\n#line ${first} \"${DOC}\"\n${code}}\n}  // namespace ${ns}\n\n")
  else()
    string(APPEND body_${variant} "namespace ${ns} {\n#line ${first} \"${DOC}\"\n${code}}  // namespace ${ns}\n\n")
  endif()
  if(program)
    string(APPEND programs_${variant} "    {${first}, [](int count, char** values) { return sluice_doc::call(&${ns}::doc_main, count, values); }},\n")
  endif()
  math(EXPR count_${variant} "${count_${variant}} + 1")
endforeach()
if(NOT state STREQUAL "outside")
  message(FATAL_ERROR "${DOC_NAME}: a code block does not end")
endif()

foreach(v IN LISTS BUILT)
  set(ext cpp)
  if(v STREQUAL "cuda")
    set(ext cu)
  endif()
  set(out "${OUT_PREFIX}_${v}.${ext}")
  set(no_device "")
  if(v STREQUAL "cuda")
    set(no_device "  if (sluice::device_count() == 0) {\n    std::printf(\"${DOC_NAME}: no ${v} device: the programs were compiled, not run\\n\")${semicolon}\n    return 77${semicolon}\n  }\n")
  endif()
  set(programs "${programs_${v}}")
  if(programs STREQUAL "")
    set(programs "    {0, nullptr},\n")
  endif()
  set(source "// Generated from ${DOC_NAME} by tests/docs/extract_blocks.cmake: its ${count_${v}}
// ```cpp block(s) of the ${v} variant. Edit the document, not this file.
#include <sluice/sluice.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace sluice_doc {
inline int call(int (*f)(), int, char**) { return f()${semicolon} }
inline int call(int (*f)(int, char**), int argc, char** argv) { return f(argc, argv)${semicolon} }
struct program {
  int line${semicolon}  // the program's first line in the document
  int (*run)(int, char**)${semicolon}
}${semicolon}
}  // namespace sluice_doc

${includes_${v}}
${body_${v}}")
  # The driver's own lines: numbered as lines of this file again.
  string(REGEX MATCHALL "\n" newlines "${source}")
  list(LENGTH newlines at)
  math(EXPR at "${at} + 2")
  string(APPEND source "#line ${at} \"${out}\"
namespace sluice_doc {
const program programs${open_bracket}${close_bracket} = {
${programs}}${semicolon}
}  // namespace sluice_doc

// Runs every whole program of the document in turn (or the one whose first
// line is argv[1]); fails when one returns non-zero or throws.
int main(int argc, char** argv) {
${no_device}  const int only = argc > 1 ? std::atoi(argv${open_bracket}1${close_bracket}) : 0${semicolon}
  int failed = 0${semicolon}
  int ran = 0${semicolon}
  for (const sluice_doc::program& p : sluice_doc::programs) {
    if (p.run == nullptr || (only != 0 && p.line != only)) continue${semicolon}
    std::printf(\"${DOC_NAME}:%d: running the program\\n\", p.line)${semicolon}
    std::fflush(stdout)${semicolon}
    int status = 1${semicolon}
    try {
      status = p.run(1, argv)${semicolon}
    } catch (const std::exception& e) {
      std::printf(\"${DOC_NAME}:%d: threw: %s\\n\", p.line, e.what())${semicolon}
    }
    std::fflush(stdout)${semicolon}
    ++ran${semicolon}
    if (status != 0) {
      std::printf(\"${DOC_NAME}:%d: FAILED (status %d)\\n\", p.line, status)${semicolon}
      ++failed${semicolon}
    }
  }
  std::printf(\"${DOC_NAME}: %d program(s) ran, %d failed\\n\", ran, failed)${semicolon}
  return failed == 0 ? 0 : 1${semicolon}
}
")
  string(REPLACE "${semicolon}" ";" source "${source}")
  string(REPLACE "${open_bracket}" "[" source "${source}")
  string(REPLACE "${close_bracket}" "]" source "${source}")
  string(REPLACE "${backslash}" "\\" source "${source}")
  file(WRITE "${out}.new" "${source}")
  file(COPY_FILE "${out}.new" "${out}" ONLY_IF_DIFFERENT)
  file(REMOVE "${out}.new")
endforeach()
