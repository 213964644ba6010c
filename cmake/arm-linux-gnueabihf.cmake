# Cross-compiling for 32-bit ARM Linux (armv7-a, hard float: Android armeabi-v7a's stand-in) with
# Debian's armhf cross g++ (scripts/build_arm.sh); the generators run from the host build.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7-a)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_C_FLAGS_INIT "-mfp16-format=ieee")  # (_Float16 in C: examples/embed/)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm-static -L /usr/arm-linux-gnueabihf)
