# sluice::kokkos_dependency: how sluice::kokkos reaches the Kokkos that
# find_package(Kokkos) found. Used by the build (cmake/SluiceKokkos.cmake) and
# by the installed package (sluiceConfig.cmake, component kokkos), so that both
# repair Debian's Kokkos the same way.
#
# Debian 12's libtrilinos-kokkos-dev (Kokkos 3.4.1, Serial) ships a package
# whose imported target Kokkos::kokkos names a non-existent include directory
# (/usr/lib/include): its variables Kokkos_INCLUDE_DIRS, Kokkos_LIBRARY_DIRS
# and Kokkos_LIBRARIES are right, so they are used whenever the target's
# directories do not exist (../shared/reference/toolchains.md).
if(TARGET sluice::kokkos_dependency)
  return()
endif()
add_library(sluice::kokkos_dependency INTERFACE IMPORTED GLOBAL)
set(_sluice_kokkos_target_ok FALSE)
if(TARGET Kokkos::kokkos)
  get_target_property(_sluice_kokkos_includes Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_sluice_kokkos_target_ok TRUE)
  foreach(_sluice_dir IN LISTS _sluice_kokkos_includes)
    if(NOT _sluice_dir MATCHES "^\\$<" AND NOT EXISTS "${_sluice_dir}")
      set(_sluice_kokkos_target_ok FALSE)
    endif()
  endforeach()
endif()
if(_sluice_kokkos_target_ok)
  set_property(TARGET sluice::kokkos_dependency PROPERTY INTERFACE_LINK_LIBRARIES Kokkos::kokkos)
else()
  set(_sluice_kokkos_libs "")
  foreach(_sluice_lib IN LISTS Kokkos_LIBRARIES)
    find_library(_sluice_kokkos_lib_${_sluice_lib} NAMES ${_sluice_lib} HINTS ${Kokkos_LIBRARY_DIRS}
                 NO_DEFAULT_PATH)
    if(NOT _sluice_kokkos_lib_${_sluice_lib})
      message(FATAL_ERROR "sluice::kokkos: Kokkos library ${_sluice_lib} not found in "
                          "${Kokkos_LIBRARY_DIRS} (Kokkos_DIR=${Kokkos_DIR})")
    endif()
    list(APPEND _sluice_kokkos_libs ${_sluice_kokkos_lib_${_sluice_lib}})
  endforeach()
  set_target_properties(sluice::kokkos_dependency PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${_sluice_kokkos_libs};${CMAKE_DL_LIBS}")
endif()
unset(_sluice_kokkos_target_ok)
unset(_sluice_kokkos_includes)
unset(_sluice_kokkos_libs)
