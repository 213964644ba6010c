/* The ARM leg's Python: CPython's own main, linked against Debian's arm64 libpython3.11, so
 * that the harness runs on AArch64 under qemu (scripts/test_arm.sh). */
#include <Python.h>

int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }
