# ctest comm.<backend>.trace: runs sluice-comm-trace under mpirun with
# SLUICE_TRACE=<DIR>/t.json and checks (a) one file per rank, t.rank0.json and
# t.rank1.json, and nothing else in DIR; (b) in each, the rank in the trace's
# metadata and every comm operation of the program as a "comm" span on the
# "halo" stream's track with engine, peer (or root, or the group's peers),
# bytes, the rank and size, and the match number of a send or receive; (c)
# `sluice trace report a b` puts both ranks' tracks on one timeline (r0/...,
# r1/...), with overlap per rank and the communication table, and draws the
# PNG. Under SLUICE_TEST_MUTATION=comm.untraced (comm operations leave no
# span) it must fail (comm.<backend>.trace.mutation).
#   cmake -DMPIEXEC=... -DPROGRAM=... -DSLUICE=... -DDIR=... -P trace_check.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
execute_process(
  COMMAND ${MPIEXEC} --allow-run-as-root --oversubscribe -np 2 -x SLUICE_TRACE=${DIR}/t.json
          ${PROGRAM}
  TIMEOUT 300 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("--- program (exit ${rc})\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the program failed (exit ${rc})")
endif()

# (a) one file per rank, nothing else.
file(GLOB written RELATIVE ${DIR} ${DIR}/*)
list(SORT written)
if(NOT written STREQUAL "t.rank0.json;t.rank1.json")
  message(FATAL_ERROR "expected t.rank0.json and t.rank1.json in ${DIR}, found: ${written}")
endif()

function(check_rank rank other)
  set(f ${DIR}/t.rank${rank}.json)
  file(READ ${f} json)
  string(JSON n LENGTH "${json}" traceEvents)
  math(EXPR last "${n} - 1")
  set(halo_tids "")
  set(found "")
  set(meta_rank "")
  foreach(i RANGE ${last})
    string(JSON e GET "${json}" traceEvents ${i})
    string(JSON name GET "${e}" name)
    string(JSON ph GET "${e}" ph)
    string(JSON cat ERROR_VARIABLE no_cat GET "${e}" cat)
    if(ph STREQUAL "M" AND name STREQUAL "sluice_trace")
      string(JSON meta_rank GET "${e}" args rank)
      string(JSON meta_ranks GET "${e}" args ranks)
      if(NOT meta_ranks EQUAL 2)
        message(FATAL_ERROR "${f}: the metadata says ${meta_ranks} ranks, not 2")
      endif()
      # The clock offset against rank 0, measured by ping-pong at communicator
      # creation: on one host the clocks are one (offset 0), so what was
      # measured must lie within its stated error (half the round trip).
      string(JSON measured GET "${e}" args clock_offset_measured_ns)
      string(JSON bound GET "${e}" args clock_offset_measured_error_ns)
      string(JSON same GET "${e}" args clock_same_host)
      if(measured LESS 0)
        math(EXPR measured "0 - ${measured}")
      endif()
      if(NOT same STREQUAL "ON" OR measured GREATER bound OR (rank EQUAL 1 AND NOT bound GREATER 0))
        message(FATAL_ERROR "${f}: clock: same host ${same}, |measured offset| ${measured} ns, "
                            "error bound ${bound} ns")
      endif()
      message("${f}: clock offset measured within +-${bound} ns: |${measured}| ns (one host: 0)")
    elseif(ph STREQUAL "M" AND name STREQUAL "thread_name")
      string(JSON sn ERROR_VARIABLE no_name GET "${e}" args stream_name)
      if(sn STREQUAL "halo")
        string(JSON tid GET "${e}" tid)
        list(APPEND halo_tids ${tid})
      endif()
    elseif(cat STREQUAL "comm")
      string(JSON tid GET "${e}" tid)
      list(APPEND comm_tids ${tid})
      string(JSON dur GET "${e}" dur)
      string(JSON engine GET "${e}" args engine)
      string(JSON bytes GET "${e}" args bytes)
      string(JSON r GET "${e}" args rank)
      string(JSON size GET "${e}" args ranks)
      if(NOT engine MATCHES "^(mpi|nccl)$" OR NOT bytes GREATER 0 OR NOT r EQUAL ${rank}
         OR NOT size EQUAL 2 OR dur LESS 0)
        message(FATAL_ERROR "${f}: comm span ${name}: engine ${engine}, bytes ${bytes}, rank ${r}, "
                            "ranks ${size}, dur ${dur}: ${e}")
      endif()
      if(name STREQUAL "send" OR name STREQUAL "recv")
        # Which path the message took (no silent slow path): its device
        # buffers are staged through pinned memory under the mpi engine on a
        # GPU backend (-DGPU_BACKEND=1), direct everywhere else.
        string(JSON staged ERROR_VARIABLE no_staged GET "${e}" args staged)
        set(is_staged FALSE)
        if(NOT no_staged AND staged)  # JSON true reads as ON
          set(is_staged TRUE)
        endif()
        set(want_staged FALSE)
        if(GPU_BACKEND AND engine STREQUAL "mpi")
          set(want_staged TRUE)
        endif()
        if(NOT is_staged STREQUAL want_staged)
          message(FATAL_ERROR "${f}: ${name} under ${engine}: staged ${is_staged}, expected ${want_staged}: ${e}")
        endif()
        string(JSON peer GET "${e}" args peer)
        string(JSON match GET "${e}" args match)
        if(NOT peer EQUAL ${other} OR NOT bytes EQUAL 4096 OR NOT match EQUAL 0)
          message(FATAL_ERROR "${f}: ${name}: peer ${peer}, bytes ${bytes}, match ${match}: ${e}")
        endif()
      elseif(name STREQUAL "broadcast")
        string(JSON root GET "${e}" args root)
        if(NOT root EQUAL 0 OR NOT bytes EQUAL 256)
          message(FATAL_ERROR "${f}: broadcast: root ${root}, bytes ${bytes}: ${e}")
        endif()
      elseif(name STREQUAL "group")
        string(JSON peers GET "${e}" args peers)
        string(JSON m LENGTH "${e}" args messages)
        if(NOT peers STREQUAL "[ ${other}, ${other} ]" OR NOT m EQUAL 2 OR NOT bytes EQUAL 2048)
          message(FATAL_ERROR "${f}: group: peers ${peers}, ${m} messages, bytes ${bytes}: ${e}")
        endif()
      else()
        string(JSON peer GET "${e}" args peer)
        if(NOT peer STREQUAL "all")
          message(FATAL_ERROR "${f}: ${name}: peer ${peer}, not all: ${e}")
        endif()
      endif()
      list(APPEND found ${name})
    endif()
  endforeach()
  if(NOT meta_rank STREQUAL "${rank}")
    message(FATAL_ERROR "${f}: the metadata's rank is '${meta_rank}', not ${rank}")
  endif()
  if(rank EQUAL 0)
    set(expected all_gather all_reduce broadcast group send)
  else()
    set(expected all_gather all_reduce broadcast group recv)
  endif()
  list(SORT found)
  if(NOT found STREQUAL "${expected}")
    # One unwrapped line for ctest's PASS_REGULAR_EXPRESSION (the mutation test).
    message("check failed: rank ${rank}: comm spans [${found}]")
    message(FATAL_ERROR "${f}: comm spans ${found}, expected ${expected}")
  endif()
  list(REMOVE_DUPLICATES comm_tids)
  if(NOT comm_tids STREQUAL halo_tids)
    message(FATAL_ERROR "${f}: comm spans on tracks ${comm_tids}, the halo stream is ${halo_tids}")
  endif()
  message("${f}: rank ${rank}: comm spans ${found} on the halo stream's track")
endfunction()
check_rank(0 1)
check_rank(1 0)

# (c) one timeline (with its PNG where gnuplot is: the GPU machines lack it).
find_program(GNUPLOT gnuplot)
set(png_args)
if(GNUPLOT)
  set(png_args --png ${DIR}/timeline.png)
else()
  message("gnuplot not found: the report is checked without its PNG")
endif()
execute_process(
  COMMAND ${SLUICE} trace report ${DIR}/t.rank0.json ${DIR}/t.rank1.json ${png_args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE report ERROR_VARIABLE err)
message("--- sluice trace report (exit ${rc})\n${report}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sluice trace report failed (exit ${rc})")
endif()
foreach(expect "trace: 2 files" "r0: .*t.rank0.json: reference clock"
        "r1: .*t.rank1.json: same host as the reference"
        "  r0/d[0-9]+/s[0-9]+ halo" "  r1/d[0-9]+/s[0-9]+ halo" "  r0/d[0-9]+/s[0-9]+ compute" "  r1/d[0-9]+/s[0-9]+ compute"
        "overlap on rank 0" "overlap on rank 1"
        "r0/d[0-9]+/s[0-9]+ halo: send \\((mpi|nccl)\\) 1 operation, 4096 bytes"
        "r1/d[0-9]+/s[0-9]+ halo: recv \\((mpi|nccl)\\) 1 operation, 4096 bytes"
        "rank 0: communication in flight" "rank 1: communication in flight")
  if(NOT report MATCHES "${expect}")
    message(FATAL_ERROR "the report lacks '${expect}'")
  endif()
endforeach()
if(report MATCHES "overlap on rank 0[^\n]*\n[^o]*r1/")
  message(FATAL_ERROR "rank 0's overlap lists a stream of rank 1")
endif()
if(GNUPLOT AND NOT EXISTS ${DIR}/timeline.png)
  message(FATAL_ERROR "no timeline.png")
endif()
message("one timeline of both ranks: passed")
