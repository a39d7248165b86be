# CMake toolchain file: cross-builds for 64-bit Windows with mingw-w64 (Debian's `mingw-w64`
# package), and runs what it builds under Wine (`wine`), e.g. for ctest:
#
#   cmake -S examples-c -B build/windows -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake
#
# The examples' project then builds the library with `cargo build --target
# x86_64-pc-windows-gnu` (mcpc.dll, its import library libmcpc.dll.a, and libmcpc.a).
# scripts/windows-checks.sh does all of this and runs the Windows tests.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(MCPC_MINGW_PREFIX x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${MCPC_MINGW_PREFIX}-gcc)
set(CMAKE_CXX_COMPILER ${MCPC_MINGW_PREFIX}-g++)
set(CMAKE_RC_COMPILER ${MCPC_MINGW_PREFIX}-windres)

# Headers and libraries of the target come from mingw's sysroot only; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${MCPC_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The Rust target that matches, for the examples' project.
set(MCPC_RUST_TARGET x86_64-pc-windows-gnu)

# ctest (and try_run) run the Windows programs through Wine: scripts/windows/wine-run.sh turns
# their CRLF line ends into LF so that the tests' checks read the same on both systems.
set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/../scripts/windows/wine-run.sh")
