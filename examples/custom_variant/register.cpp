// Adds this library's kernels to posattn's runtime, for a program that links it (C++:
// custom_attention_register(); Python can also add them by symbol: posattn.load_kernel).
#include "fire_attention.h"
#include "kerple_attention.h"
#include "posattn/posattn.hpp"

extern "C" void custom_attention_register() {
    posattn::add_kernel("kerple_attention", kerple_attention_argv, kerple_attention_metadata);
    posattn::add_kernel("fire_attention", fire_attention_argv, fire_attention_metadata);
}
