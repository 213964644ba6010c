# The programs the tests and benchmarks run (POSATTN_TESTS; included by CMakeLists.txt).

# ---- The same runtime with ASan + UBSan --------------------------------------------------------
# The runtime, the Python module and the C smoke test again in build/sanitized/, instrumented,
# over the same kernel objects (no kernel is compiled twice): scripts/test_sanitized.sh runs the
# C ABI's tests, the error cases and a fuzz slice on them.
if (NOT CMAKE_CROSSCOMPILING AND POSATTN_PYTHON)
  set(sanitize -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  set(sanitized ${PROJECT_BINARY_DIR}/sanitized)
  posattn_runtime(posattn_sanitized SHARED)
  pybind11_add_module(_posattn_sanitized MODULE bindings/python/module.cpp)
  target_link_libraries(_posattn_sanitized PRIVATE posattn_sanitized)
  add_executable(c_api_smoke_sanitized tests/c_api_smoke.c)
  target_link_libraries(c_api_smoke_sanitized PRIVATE posattn_sanitized)
  foreach (target IN ITEMS posattn_sanitized _posattn_sanitized c_api_smoke_sanitized)
    target_compile_options(${target} PRIVATE ${sanitize})
    target_link_options(${target} PRIVATE ${sanitize})
  endforeach ()
  set_target_properties(posattn_sanitized PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${sanitized} OUTPUT_NAME posattn)
  set_target_properties(_posattn_sanitized PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${sanitized}/python/posattn
    OUTPUT_NAME _posattn BUILD_RPATH "$ORIGIN/../..")
  set_target_properties(c_api_smoke_sanitized PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${sanitized} OUTPUT_NAME c_api_smoke)
  add_custom_target(posattn_python_files_sanitized ALL
    COMMAND ${CMAKE_COMMAND} -E copy_directory_if_different ${PROJECT_SOURCE_DIR}/bindings/python/posattn ${sanitized}/python/posattn
    DEPENDS _posattn_sanitized)
endif ()

# Machine probes for the benchmarks (FMA peak, copy bandwidth); built for this machine.
if (NOT CMAKE_CROSSCOMPILING AND POSATTN_PYTHON)
  pybind11_add_module(_probes MODULE bench/probes.cpp)
  target_compile_options(_probes PRIVATE -O3 -march=native)
  set_target_properties(_probes PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${python_package})
endif ()

# ---- GoogleTest: the C++ runtime and the C ABI (ctest), also over the sanitized runtime ----------
if (NOT CMAKE_CROSSCOMPILING)
  find_package(GTest REQUIRED)
  include(GoogleTest)
  enable_testing()
  add_executable(posattn_runtime_tests tests/cpp/runtime_test.cpp)
  target_link_libraries(posattn_runtime_tests PRIVATE posattn GTest::gtest_main)
  gtest_discover_tests(posattn_runtime_tests TEST_PREFIX "runtime.")
  if (TARGET posattn_sanitized)
    add_executable(posattn_runtime_tests_sanitized tests/cpp/runtime_test.cpp)
    target_link_libraries(posattn_runtime_tests_sanitized PRIVATE posattn_sanitized GTest::gtest_main)
    target_compile_options(posattn_runtime_tests_sanitized PRIVATE ${sanitize})
    target_link_options(posattn_runtime_tests_sanitized PRIVATE ${sanitize})
    # (its posattn::jit finds no generators beside build/sanitized/libposattn.so: it is told them)
    gtest_discover_tests(posattn_runtime_tests_sanitized TEST_PREFIX "sanitized."
      PROPERTIES ENVIRONMENT "POSATTN_GENERATORS=${PROJECT_BINARY_DIR}/posattn_generators")
  endif ()
endif ()

# ---- The C ABI from C --------------------------------------------------------------------------
add_executable(c_api_smoke tests/c_api_smoke.c)
target_link_libraries(c_api_smoke PRIVATE posattn)
if (TARGET posattn_attn_plain_f32_decode1)
  add_executable(c_call_overhead bench/c_call_overhead.c)  # (a benchmark: make bench)
  # (It also calls the decode kernel bare, libposattn's exported symbol, through its generated header.)
  target_link_libraries(c_call_overhead PRIVATE posattn Halide::Runtime m)
  target_include_directories(c_call_overhead PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
  add_dependencies(c_call_overhead posattn_attn_plain_f32_decode1)
endif ()
# The embedding example (examples/embed/): a C program on libposattn_embed.a alone, run by
# tests/test_embed.py (under qemu in the ARM leg).
if (TARGET posattn_linear_f16 AND TARGET posattn_rope_f16 AND TARGET posattn_attn_plain_f16_decode)
  add_executable(embed_decode_step examples/embed/decode_step.c)
  target_link_libraries(embed_decode_step PRIVATE posattn::embed)
endif ()
if (android_libs)
  # Every Android kernel, the Android Halide runtime and posattn's runtime and C ABI (compiled by
  # the Linux cross g++, standing in for the NDK's), whole, in one shared object with no undefined
  # symbol left beyond the C and C++ libraries' (the one Android-only function, the log, is
  # stubbed there): the runtime's registry binds the Android kernels, and every Halide runtime
  # function it calls is in the Android runtime.
  add_library(posattn_android_link_check SHARED tests/android_link_check.c)
  target_link_libraries(posattn_android_link_check PRIVATE
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,posattn_runtime_objects,${android_libs},posattn_android_runtime>" m -Wl,--no-undefined)
endif ()
if (CMAKE_CROSSCOMPILING AND POSATTN_PYTHON)
  add_executable(python3.11 tests/python_main.c)
  target_include_directories(python3.11 SYSTEM PRIVATE /usr/include/python3.11)
  target_compile_options(python3.11 PRIVATE -idirafter /usr/include)
  target_link_libraries(python3.11 PRIVATE /usr/lib/aarch64-linux-gnu/libpython3.11.so)
endif ()
