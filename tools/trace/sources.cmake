# The sources of `sluice trace report` but its command line: the reader, the
# analysis, the text report and the timeline. The tools' library
# sluice_trace_report and the fuzz target compile them (tools/CMakeLists.txt);
# they read JSON with simdjson (docs/design.md, "Libraries").
set(SLUICE_TRACE_REPORT_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/framing_scanner.cpp  # where each event of the document ends
  ${CMAKE_CURRENT_LIST_DIR}/reader.cpp           # what each event says, to a trace_sink
  ${CMAKE_CURRENT_LIST_DIR}/stream_ids.cpp       # merged streams' ids and their labels
  ${CMAKE_CURRENT_LIST_DIR}/spill_file.cpp       # the analysis's temporary file
  ${CMAKE_CURRENT_LIST_DIR}/intervals.cpp        # unions and intersections of intervals
  ${CMAKE_CURRENT_LIST_DIR}/rank_alignment.cpp   # several ranks' files on one timeline
  ${CMAKE_CURRENT_LIST_DIR}/analyzer.cpp         # the analysis, an event at a time
  ${CMAKE_CURRENT_LIST_DIR}/in_flight.cpp        # in-flight time per stream
  ${CMAKE_CURRENT_LIST_DIR}/report.cpp           # the text report
  ${CMAKE_CURRENT_LIST_DIR}/timeline.cpp)        # the gnuplot timeline
