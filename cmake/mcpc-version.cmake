# MCPC_VERSION (X.Y.Z) and MCPC_VERSION_MAJOR, read from Cargo.toml: the one place the version
# is written. The header (build.rs), pkg-config and CMake package files all take it from there.
# Usable before project().
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../Cargo.toml" mcpc_version_line
     REGEX "^version = \"[0-9]+\\.[0-9]+\\.[0-9]+\"" LIMIT_COUNT 1)
string(REGEX REPLACE "^version = \"([0-9]+\\.[0-9]+\\.[0-9]+)\".*" "\\1" MCPC_VERSION
       "${mcpc_version_line}")
if(NOT MCPC_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "no [package] version in ${CMAKE_CURRENT_LIST_DIR}/../Cargo.toml")
endif()
string(REGEX MATCH "^[0-9]+" MCPC_VERSION_MAJOR "${MCPC_VERSION}")
