# Install rules and the CMake package: find_package(sluice [version] COMPONENTS host|cuda|hip).
#
# Layout (under <prefix>/${CMAKE_INSTALL_LIBDIR}/cmake/sluice):
#   sluiceConfig.cmake, sluiceConfigVersion.cmake  the package and its version (SameMajorVersion)
#   sluiceTargets.cmake                            sluice::headers
#   sluice-<backend>-targets.cmake                 sluice::<backend>, one file per built backend
# One targets file per backend lets a later build add a backend to the same
# prefix, and lets find_package load only the dependencies (Threads, CUDA,
# HIP) of the components asked for. The build tree gets the same files
# (export()), so a consumer may also point sluice_DIR at a build directory.
include(CMakePackageConfigHelpers)

set(SLUICE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/sluice
    CACHE STRING "Where the sluice CMake package files are installed (relative to the prefix)")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sluice DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(TARGETS sluice_headers EXPORT sluiceTargets)
install(EXPORT sluiceTargets NAMESPACE sluice:: FILE sluiceTargets.cmake
        DESTINATION ${SLUICE_INSTALL_CMAKEDIR})
export(EXPORT sluiceTargets NAMESPACE sluice:: FILE ${PROJECT_BINARY_DIR}/sluiceTargets.cmake)

foreach(backend IN LISTS SLUICE_BACKENDS)
  install(TARGETS sluice_${backend} EXPORT sluice-${backend}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT sluice-${backend}-targets NAMESPACE sluice:: FILE sluice-${backend}-targets.cmake
          DESTINATION ${SLUICE_INSTALL_CMAKEDIR})
  export(EXPORT sluice-${backend}-targets NAMESPACE sluice::
         FILE ${PROJECT_BINARY_DIR}/sluice-${backend}-targets.cmake)
endforeach()

# sluice::kokkos (component kokkos): its targets file, the backend it goes
# with, and how it reaches Kokkos (sluiceKokkosDependency.cmake: the repair of
# Debian's Kokkos package), beside the backends'.
if(TARGET sluice_kokkos)
  install(TARGETS sluice_kokkos EXPORT sluice-kokkos-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT sluice-kokkos-targets NAMESPACE sluice:: FILE sluice-kokkos-targets.cmake
          DESTINATION ${SLUICE_INSTALL_CMAKEDIR})
  export(EXPORT sluice-kokkos-targets NAMESPACE sluice::
         FILE ${PROJECT_BINARY_DIR}/sluice-kokkos-targets.cmake)
  file(WRITE ${PROJECT_BINARY_DIR}/sluice-kokkos-backend.cmake
       "set(_sluice_kokkos_backend ${SLUICE_KOKKOS_BACKEND})\n")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/sluiceKokkosDependency.cmake
                 ${PROJECT_BINARY_DIR}/sluiceKokkosDependency.cmake COPYONLY)
  install(FILES ${PROJECT_BINARY_DIR}/sluice-kokkos-backend.cmake
                ${PROJECT_SOURCE_DIR}/cmake/sluiceKokkosDependency.cmake
          DESTINATION ${SLUICE_INSTALL_CMAKEDIR})
endif()

# sluice::comm (component comm): one targets file per backend it was built
# for (sluice::comm_<backend>); the config makes sluice::comm of the backend asked for.
foreach(backend IN LISTS SLUICE_COMM_BACKENDS)
  install(TARGETS sluice_comm_${backend} EXPORT sluice-comm-${backend}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT sluice-comm-${backend}-targets NAMESPACE sluice::
          FILE sluice-comm-${backend}-targets.cmake DESTINATION ${SLUICE_INSTALL_CMAKEDIR})
  export(EXPORT sluice-comm-${backend}-targets NAMESPACE sluice::
         FILE ${PROJECT_BINARY_DIR}/sluice-comm-${backend}-targets.cmake)
endforeach()

# The same config file serves the install and the build tree: it finds its
# targets files next to itself.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sluiceConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/sluiceConfig.cmake
                              INSTALL_DESTINATION ${SLUICE_INSTALL_CMAKEDIR}
                              NO_SET_AND_CHECK_MACRO)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sluiceConfig.cmake ${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake
        DESTINATION ${SLUICE_INSTALL_CMAKEDIR})

# The sluice command: the dispatcher and one program per backend, side by side.
if(TARGET sluice_dispatcher)
  install(TARGETS sluice_dispatcher ${SLUICE_TOOL_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The documentation: README.md and all of docs/ beside it, so the README's
# links (docs/tool.md, ...) hold in <prefix>/${CMAKE_INSTALL_DOCDIR} too. Every
# file of docs/ is installed, the conformance reports, P2P results and traces
# included: the largest, docs/traces/*.trace.json (about 200 KB together), are
# the traces that docs/traces/README.md and the reports next to them describe.
# tests/package (package.installed_docs) checks that nothing is missing.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} OPTIONAL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
