# cmake -DROOT=<checkout> -P tests/docs/no_history_references.cmake
#
# Fails when text that describes sluice as it is today names a ticket number,
# a file outside the repository or a doc the repository no longer has. History lives in git and in the dated run
# records; the repository must make sense on its own.
#
# What is scanned (paths relative to ROOT):
#   docs        README.md, examples/README.md, every docs/**/*.md except the run
#               records (docs/results/runs/) and the per-run conformance
#               reports (docs/conformance/*.md but README.md and mutations.md),
#               and the Markdown files under the code folders below
#   comments    // and /* */ comments of the C++ and CUDA sources (.hpp .h .cpp
#               .cc .cu .cuh), and every line of the CMake, Python and shell
#               files, under include/ src/ backends/ tools/ tests/ bench/ examples/
#   scripts     every line of scripts/*, of every file under scripts/gpu-check.d/
#               (gpu-check's steps), and of .ci/run
# What is a hit (the patterns below): a ticket number, a path into the
# project's shared folder, two design files kept outside the repository, the
# outside design contract's parts, and a path docs/<...>.md that names no file
# of the checkout (a removed or renamed doc; relative links such as
# ../docs/x.md are not followed).
# Prints each hit as <file>:<line>: <what>: <the line>, then the count per
# file; the exit status is non-zero when there is any.
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "no_history_references.cmake: -DROOT=<checkout> is required")
endif()
# A relative ROOT (-DROOT=.) is taken from the working directory: the globs
# below need an absolute one.
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

# Written so that this file does not match itself.
set(pattern_names "ticket number" "outside folder" "outside file" "outside file" "outside contract")
set(patterns
  "[Ii][Ss][Ss][Uu][Ee] #?[0-9]+"
  "[.][.]/shared"
  "anchors[.]md"
  "toolchains[.]md"
  "contract, P[a]rt")
list(JOIN patterns "|" any_pattern)
# A doc named by its path from the checkout: it must exist. Not preceded by a
# path character, so tests/docs/x.md or ../docs/x.md is not read as docs/x.md.
set(doc_path "docs/[A-Za-z0-9_./-]*[.]md")
set(doc_reference "(^|[^A-Za-z0-9_./-])${doc_path}")
set(self "tests/docs/no_history_references.cmake")

set(c_extensions hpp h cpp cc cu cuh)
set(code_dirs include src backends tools tests bench examples)

# The files, each with how it is read: whole (every line) or comments.
set(whole_files README.md examples/README.md .ci/run)
set(comment_files "")
file(GLOB_RECURSE docs RELATIVE ${ROOT} ${ROOT}/docs/*.md)
foreach(f IN LISTS docs)
  if(f MATCHES "^docs/results/runs/")
    continue()
  endif()
  if(f MATCHES "^docs/conformance/[^/]+[.]md$" AND NOT f MATCHES "/(README|mutations)[.]md$")
    continue()
  endif()
  list(APPEND whole_files ${f})
endforeach()
file(GLOB scripts LIST_DIRECTORIES false RELATIVE ${ROOT} ${ROOT}/scripts/*)
list(APPEND whole_files ${scripts})
file(GLOB_RECURSE gpu_check_steps LIST_DIRECTORIES false RELATIVE ${ROOT} ${ROOT}/scripts/gpu-check.d/*)
list(APPEND whole_files ${gpu_check_steps})
foreach(dir IN LISTS code_dirs)
  file(GLOB_RECURSE found RELATIVE ${ROOT} ${ROOT}/${dir}/*)
  foreach(f IN LISTS found)
    if(f STREQUAL self)
      continue()
    endif()
    get_filename_component(name ${f} NAME)
    string(REGEX MATCH "[^.]+$" ext "${name}")
    if(ext IN_LIST c_extensions)
      list(APPEND comment_files ${f})
    elseif(name STREQUAL "CMakeLists.txt" OR ext MATCHES "^(cmake|py|sh|md)$")
      list(APPEND whole_files ${f})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES whole_files)

string(ASCII 1 semicolon)
string(ASCII 2 open_bracket)
string(ASCII 3 close_bracket)
string(ASCII 4 backslash)

set(hits 0)
set(report "")
set(summary "")
# scan(<file> <comments only>)
function(scan f comments_only)
  if(NOT EXISTS ${ROOT}/${f} OR IS_DIRECTORY ${ROOT}/${f})
    return()
  endif()
  file(READ ${ROOT}/${f} text)
  if(NOT text MATCHES "${any_pattern}" AND NOT text MATCHES "${doc_reference}")
    return()  # the common case, without looking at the lines
  endif()
  string(REPLACE "\\" "${backslash}" text "${text}")
  string(REPLACE ";" "${semicolon}" text "${text}")
  string(REPLACE "[" "${open_bracket}" text "${text}")
  string(REPLACE "]" "${close_bracket}" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(number 0)
  set(in_block FALSE)  # inside a /* */ comment
  set(count 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    set(searched "${line}")
    if(comments_only)
      # The comment parts of the line: after //, inside /* */ (string
      # literals are not told apart: a "//" in one starts a comment here).
      set(searched "")
      set(rest "${line}")
      while(NOT rest STREQUAL "")
        if(in_block)
          string(FIND "${rest}" "*/" end)
          if(end LESS 0)
            string(APPEND searched " ${rest}")
            set(rest "")
          else()
            string(SUBSTRING "${rest}" 0 ${end} part)
            string(APPEND searched " ${part}")
            math(EXPR end "${end} + 2")
            string(SUBSTRING "${rest}" ${end} -1 rest)
            set(in_block FALSE)
          endif()
        else()
          string(FIND "${rest}" "//" line_comment)
          string(FIND "${rest}" "/*" block_comment)
          if(line_comment GREATER_EQUAL 0 AND (block_comment LESS 0 OR line_comment LESS block_comment))
            string(SUBSTRING "${rest}" ${line_comment} -1 part)
            string(APPEND searched " ${part}")
            set(rest "")
          elseif(block_comment GREATER_EQUAL 0)
            math(EXPR start "${block_comment} + 2")
            string(SUBSTRING "${rest}" ${start} -1 rest)
            set(in_block TRUE)
          else()
            set(rest "")
          endif()
        endif()
      endwhile()
    endif()
    if(NOT searched MATCHES "${any_pattern}" AND NOT searched MATCHES "${doc_reference}")
      continue()
    endif()
    set(what "")
    set(i 0)
    foreach(p IN LISTS patterns)
      if(searched MATCHES "${p}")
        list(GET pattern_names ${i} name)
        list(APPEND what "${name} '${CMAKE_MATCH_0}'")
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
    string(REGEX MATCHALL "${doc_reference}" references "${searched}")
    foreach(reference IN LISTS references)
      string(FIND "${reference}" "docs/" start)
      string(SUBSTRING "${reference}" ${start} -1 reference)
      if(NOT EXISTS ${ROOT}/${reference})
        list(APPEND what "no such file '${reference}'")
      endif()
    endforeach()
    if(what STREQUAL "")
      continue()  # every doc it names exists
    endif()
    list(JOIN what ", " what)
    string(STRIP "${line}" shown)
    string(REPLACE "${semicolon}" ";" shown "${shown}")
    string(REPLACE "${open_bracket}" "[" shown "${shown}")
    string(REPLACE "${close_bracket}" "]" shown "${shown}")
    string(REPLACE "${backslash}" "\\" shown "${shown}")
    string(LENGTH "${shown}" length)
    if(length GREATER 160)
      string(SUBSTRING "${shown}" 0 157 shown)
      string(APPEND shown "...")
    endif()
    string(APPEND report "${f}:${number}: ${what}: ${shown}\n")
    math(EXPR count "${count} + 1")
  endforeach()
  if(count GREATER 0)
    math(EXPR total "${hits} + ${count}")
    set(hits ${total} PARENT_SCOPE)
    set(report "${report}" PARENT_SCOPE)
    set(summary "${summary}  ${count} ${f}\n" PARENT_SCOPE)
  endif()
endfunction()

foreach(f IN LISTS whole_files)
  scan(${f} FALSE)
endforeach()
foreach(f IN LISTS comment_files)
  scan(${f} TRUE)
endforeach()

list(LENGTH whole_files n_whole)
list(LENGTH comment_files n_comment)
math(EXPR scanned "${n_whole} + ${n_comment}")
if(hits EQUAL 0)
  message(STATUS "no_history_references: ${scanned} files scanned, no hit")
  return()
endif()
message("${report}")
message("hits per file:\n${summary}")
message(FATAL_ERROR "no_history_references: ${hits} hit(s) in ${scanned} files scanned: "
                    "say what is true today, without the ticket or the outside file, "
                    "and name the doc that holds it now")
