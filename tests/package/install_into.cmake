# cmake -DBUILD_DIR=<sluice build tree> -DPREFIX=<empty prefix> [-DCONFIG=<config>] -P install_into.cmake
# Installs sluice into a fresh prefix (the fixture of the find_package test).
file(REMOVE_RECURSE "${PREFIX}")
set(config_option "")
if(CONFIG)
  set(config_option --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                        ${config_option}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${status})")
endif()
