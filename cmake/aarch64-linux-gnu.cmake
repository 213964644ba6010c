# Cross-compiling the kernels, runtime and Python module for AArch64 Linux with Debian's cross g++
# (scripts/build_arm.sh); the generators run from the host build.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Run the project's own ARM executables (tests) under qemu.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
