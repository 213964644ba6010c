/* Links every arm-64-android kernel library, the Android Halide runtime and posattn's runtime into
 * one shared object with -Wl,--no-undefined (cmake/tests.cmake), so a missing symbol fails the ARM build. Only Bionic's
 * log function, which glibc lacks, is stood in for here; on a device liblog provides it. */
int __android_log_print(int priority, const char *tag, const char *format, ...) {
    (void)priority, (void)tag, (void)format;
    return 0;
}
