# Builds the Rust library with cargo and gives it to CMake as two imported targets:
#   mcpc::mcpc         the shared library (Linux: libmcpc.so.X; macOS: libmcpc.X.dylib;
#                      Windows: mcpc.dll and its import library)
#   mcpc::mcpc_static  the static library, with the system libraries it needs
# Included by the top-level CMakeLists.txt (for add_subdirectory and FetchContent) and by the
# examples' project (examples-c/CMakeLists.txt). `cmake --build` always runs cargo (a no-op when
# the library is up to date): cargo knows better than CMake whether the Rust sources changed.
#
# Cache variables:
#   MCPC_RUST_TARGET        Rust target triple when cross-building (cmake/mingw-w64.cmake sets it)
#   MCPC_CARGO_TARGET_DIR   cargo's output directory (default $CARGO_TARGET_DIR, else <repo>/target)
#   MCPC_CARGO_ARGS         more arguments for `cargo build`, e.g. --no-default-features
#   MCPC_BUILD_TEST_SERVER  also build mcpc-test-server (the examples' tests need it)
# Sets: MCPC_REPO_DIR, MCPC_VERSION, MCPC_VERSION_MAJOR, MCPC_INCLUDE_DIR, MCPC_LIBRARY (cargo's
# output), MCPC_IMPORT_LIBRARY (Windows), MCPC_STATIC_LIBRARY, MCPC_SONAME, MCPC_RUNTIME_DIR
# (where the library sits under the name programs load), MCPC_TEST_SERVER,
# MCPC_STATIC_SYSTEM_LIBS, MCPC_PC_LIBS_PRIVATE, MCPC_CARGO_TARGET_DIR.
if(TARGET mcpc::mcpc)
  return()
endif()

include("${CMAKE_CURRENT_LIST_DIR}/mcpc-version.cmake")
get_filename_component(MCPC_REPO_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(MCPC_INCLUDE_DIR "${MCPC_REPO_DIR}/include")

# Cargo's output directory: $CARGO_TARGET_DIR if set (a relative one is relative to the
# repository root, where cargo runs), else <repo>/target.
if(DEFINED ENV{CARGO_TARGET_DIR} AND NOT "$ENV{CARGO_TARGET_DIR}" STREQUAL "")
  get_filename_component(mcpc_default_target_dir "$ENV{CARGO_TARGET_DIR}" ABSOLUTE
                         BASE_DIR "${MCPC_REPO_DIR}")
else()
  set(mcpc_default_target_dir "${MCPC_REPO_DIR}/target")
endif()
set(MCPC_CARGO_TARGET_DIR "${mcpc_default_target_dir}" CACHE PATH "cargo's output directory")
set(MCPC_CARGO_ARGS "" CACHE STRING "More arguments for cargo build (e.g. --no-default-features)")
option(MCPC_BUILD_TEST_SERVER "Also build mcpc-test-server" OFF)

# The Rust target: the host's, or MCPC_RUST_TARGET when cross-building, whose output cargo
# writes under <target dir>/<triple>/.
set(MCPC_RUST_TARGET "${MCPC_RUST_TARGET}" CACHE STRING "Rust target triple (empty: the host)")
if(MCPC_RUST_TARGET)
  set(mcpc_cargo_out "${MCPC_CARGO_TARGET_DIR}/${MCPC_RUST_TARGET}/release")
  set(mcpc_cargo_target_args --target "${MCPC_RUST_TARGET}")
else()
  set(mcpc_cargo_out "${MCPC_CARGO_TARGET_DIR}/release")
  set(mcpc_cargo_target_args "")
endif()
set(MCPC_STATIC_LIBRARY "${mcpc_cargo_out}/libmcpc.a")
set(MCPC_RUNTIME_DIR "${CMAKE_BINARY_DIR}/mcpc-runtime")
set(MCPC_IMPORT_LIBRARY "")

if(WIN32)
  # mcpc.dll and its import library. Windows finds a DLL beside the program that loads it, so
  # it is copied to the build's top directory, beside the programs built there.
  set(MCPC_LIBRARY "${mcpc_cargo_out}/mcpc.dll")
  set(MCPC_IMPORT_LIBRARY "${mcpc_cargo_out}/libmcpc.dll.a")
  set(MCPC_TEST_SERVER "${mcpc_cargo_out}/mcpc-test-server.exe")
  set(MCPC_SONAME "mcpc.dll")
  set(MCPC_RUNTIME_DIR "${CMAKE_BINARY_DIR}")
  set(mcpc_runtime_link copy_if_different)
  # What Rust's standard library and the TLS code need from Windows (rustc's
  # --print native-static-libs), for a static link.
  set(MCPC_PC_LIBS_PRIVATE "-lws2_32 -lbcrypt -ladvapi32 -luserenv -lntdll -lkernel32")
  set(MCPC_STATIC_SYSTEM_LIBS "ws2_32;bcrypt;advapi32;userenv;ntdll;kernel32")
elseif(APPLE)
  # macOS's soname is the install name, @rpath/libmcpc.X.dylib (build.rs); cargo writes
  # libmcpc.dylib, so a link of that name in MCPC_RUNTIME_DIR stands for it, as on Linux.
  set(MCPC_LIBRARY "${mcpc_cargo_out}/libmcpc.dylib")
  set(MCPC_TEST_SERVER "${mcpc_cargo_out}/mcpc-test-server")
  set(MCPC_SONAME "libmcpc.${MCPC_VERSION_MAJOR}.dylib")
  set(mcpc_runtime_link create_symlink)
  # The system trust store (rustls-native-certs) is the Security framework's.
  set(MCPC_PC_LIBS_PRIVATE "-framework Security -framework CoreFoundation -lpthread -lm")
  set(MCPC_STATIC_SYSTEM_LIBS "-framework Security;-framework CoreFoundation;m")
else()
  # The library's soname is libmcpc.so.X (build.rs), the name programs ask the loader for; but
  # cargo only writes libmcpc.so. A link named after the soname, in a directory of our own
  # (MCPC_RUNTIME_DIR, on the programs' build RPATH), lets them run from the build tree
  # without touching cargo's output directory.
  set(MCPC_LIBRARY "${mcpc_cargo_out}/libmcpc.so")
  set(MCPC_TEST_SERVER "${mcpc_cargo_out}/mcpc-test-server")
  set(MCPC_SONAME "libmcpc.so.${MCPC_VERSION_MAJOR}")
  set(mcpc_runtime_link create_symlink)
  set(MCPC_PC_LIBS_PRIVATE "-lpthread -ldl -lm")
  set(MCPC_STATIC_SYSTEM_LIBS "${CMAKE_DL_LIBS};m")
endif()

find_program(CARGO cargo HINTS "$ENV{CARGO_HOME}/bin" "$ENV{HOME}/.cargo/bin" REQUIRED)
find_package(Threads REQUIRED)

if(MCPC_BUILD_TEST_SERVER)
  set(mcpc_cargo_packages "") # the workspace's default members: the library and the server
  set(mcpc_test_server_byproduct "${MCPC_TEST_SERVER}")
else()
  set(mcpc_cargo_packages -p mcpc --lib)
  set(mcpc_test_server_byproduct "")
endif()
separate_arguments(mcpc_cargo_args UNIX_COMMAND "${MCPC_CARGO_ARGS}")
string(REPLACE ";" " " mcpc_cargo_comment
       "cargo build --release;${mcpc_cargo_packages};${mcpc_cargo_target_args};${mcpc_cargo_args}")

# The explicit CARGO_TARGET_DIR keeps cargo writing where this configure step looked.
add_custom_target(mcpc_cargo_build ALL
  COMMAND "${CMAKE_COMMAND}" -E env "CARGO_TARGET_DIR=${MCPC_CARGO_TARGET_DIR}"
          "${CARGO}" build --release ${mcpc_cargo_packages} ${mcpc_cargo_target_args} ${mcpc_cargo_args}
  COMMAND "${CMAKE_COMMAND}" -E make_directory "${MCPC_RUNTIME_DIR}"
  COMMAND "${CMAKE_COMMAND}" -E ${mcpc_runtime_link} "${MCPC_LIBRARY}" "${MCPC_RUNTIME_DIR}/${MCPC_SONAME}"
  WORKING_DIRECTORY "${MCPC_REPO_DIR}"
  BYPRODUCTS "${MCPC_LIBRARY}" "${MCPC_STATIC_LIBRARY}" "${MCPC_RUNTIME_DIR}/${MCPC_SONAME}"
             ${MCPC_IMPORT_LIBRARY} ${mcpc_test_server_byproduct}
  COMMENT "${mcpc_cargo_comment}"
  USES_TERMINAL
  VERBATIM)

# GLOBAL: a project that adds mcpc with add_subdirectory or FetchContent sees the targets in
# every directory. The shared library is linked under the name programs load (the link in
# MCPC_RUNTIME_DIR), so CMake puts that directory on the programs' build RPATH.
add_library(mcpc::mcpc SHARED IMPORTED GLOBAL)
set_target_properties(mcpc::mcpc PROPERTIES
  IMPORTED_LOCATION "${MCPC_RUNTIME_DIR}/${MCPC_SONAME}"
  INTERFACE_INCLUDE_DIRECTORIES "${MCPC_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES Threads::Threads)
if(WIN32)
  set_target_properties(mcpc::mcpc PROPERTIES IMPORTED_IMPLIB "${MCPC_IMPORT_LIBRARY}")
elseif(APPLE)
  set_target_properties(mcpc::mcpc PROPERTIES IMPORTED_SONAME "@rpath/${MCPC_SONAME}")
else()
  set_target_properties(mcpc::mcpc PROPERTIES IMPORTED_SONAME "${MCPC_SONAME}")
endif()
add_dependencies(mcpc::mcpc mcpc_cargo_build)

add_library(mcpc::mcpc_static STATIC IMPORTED GLOBAL)
set_target_properties(mcpc::mcpc_static PROPERTIES
  IMPORTED_LOCATION "${MCPC_STATIC_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${MCPC_INCLUDE_DIR}"
  INTERFACE_COMPILE_DEFINITIONS $<$<PLATFORM_ID:Windows>:MCPC_STATIC>
  INTERFACE_LINK_LIBRARIES "Threads::Threads;${MCPC_STATIC_SYSTEM_LIBS}")
add_dependencies(mcpc::mcpc_static mcpc_cargo_build)
