# googletest: GoogleTest from the system when CMake finds it, else built from
# .deps/googletest (scripts/gpu-check-prepare copies Debian's source there on
# a machine that has it; the GPU machines have no package registry); with the
# header-only CLI11 and nlohmann-json and Debian's simdjson of .deps/prefix.
# Sets prefix_path, the configure's -DCMAKE_PREFIX_PATH.
step "GoogleTest"
prefix_path=()
# CLI11 and nlohmann-json copied by scripts/gpu-check-prepare (header-only).
deps_prefix=""
[[ -d .deps/prefix ]] && deps_prefix="$root/.deps/prefix"
if [[ -d .deps/googletest ]] && ! ls /usr/lib/*/cmake/GTest /usr/lib/cmake/GTest /usr/local/lib/cmake/GTest >/dev/null 2>&1; then
  run cmake -S .deps/googletest -B build-gpu/gtest -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF \
        -DCMAKE_INSTALL_PREFIX="$root/build-gpu/deps" >/dev/null &&
  run cmake --build build-gpu/gtest -j "$jobs" >/dev/null && run cmake --install build-gpu/gtest >/dev/null &&
  prefix_path=(-DCMAKE_PREFIX_PATH="$root/build-gpu/deps${deps_prefix:+;$deps_prefix}") && echo "built from .deps/googletest"
else
  [[ -n $deps_prefix ]] && prefix_path=(-DCMAKE_PREFIX_PATH="$deps_prefix")
  echo "system GoogleTest (or none: configure will say)"
fi
