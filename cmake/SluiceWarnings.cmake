# sluice_set_warnings(<target>): the warning set every sluice target compiles with.
function(sluice_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion -Wnon-virtual-dtor)
  if(SLUICE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
