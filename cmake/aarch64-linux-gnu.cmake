# Cross-compiling for 64-bit ARM with Debian's aarch64-linux-gnu toolchain and
# the arm64 libraries of multiarch (libhwy-dev:arm64, libgtest-dev:arm64):
# scripts/test_kernels_arm64.sh builds the kernels with it and runs their
# tests under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# The arm64 packages' files: libraries in /usr/lib/aarch64-linux-gnu, the
# headers (shared by every architecture) in /usr/include.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
