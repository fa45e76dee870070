# ctest sim.bench.p2p.png: `sluice bench p2p --csv` against the simulated
# runtime, then scripts/p2p-plot: both PNGs are PNGs.
#   cmake -DSLUICE=<sluice> -DPLOT=<scripts/p2p-plot> -DOUT=<dir> -P p2p_png.cmake
set(csv "${OUT}/p2p-sim.csv")
set(prefix "${OUT}/p2p-sim")
file(REMOVE "${csv}" "${prefix}-bandwidth.png" "${prefix}-matrix.png")
execute_process(COMMAND "${SLUICE}" --backend cuda bench p2p --max-mib=4 --trials=1 "--csv=${csv}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS "${csv}")
  message(FATAL_ERROR "sluice bench p2p failed (${rc}) or wrote no CSV:\n${out}\n${err}")
endif()
execute_process(COMMAND bash "${PLOT}" "${csv}" "${prefix}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scripts/p2p-plot failed (${rc}):\n${out}\n${err}")
endif()
foreach(png "${prefix}-bandwidth.png" "${prefix}-matrix.png")
  file(READ "${png}" magic LIMIT 8 HEX)
  if(NOT magic STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "${png} is not a PNG (starts with ${magic})")
  endif()
endforeach()
