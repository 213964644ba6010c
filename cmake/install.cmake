# `cmake --install`: headers, the runtime (shared and static, every kernel inside), the generators
# and their declaration headers, and the CMake package find_package(posattn CONFIG) reads
# (cmake/posattnConfig.cmake.in). Included by CMakeLists.txt.
include(CMakePackageConfigHelpers)
set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/posattn)

# The Python package: the posattn folder with the module and, beside it, the runtime it links. In
# a wheel (pip install ., scikit-build-core: pyproject.toml) nothing else; otherwise under
# <prefix>/lib/pythonX.Y/site-packages, the runtime being the one in <prefix>/lib.
if (POSATTN_PYTHON AND NOT CMAKE_CROSSCOMPILING)
  if (SKBUILD)
    set(python_dir posattn)
    install(TARGETS posattn LIBRARY DESTINATION ${python_dir})
  else ()
    set(python_dir ${CMAKE_INSTALL_LIBDIR}/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/site-packages/posattn)
  endif ()
  set_target_properties(_posattn PROPERTIES INSTALL_RPATH "$ORIGIN:$ORIGIN/../../..")
  install(TARGETS _posattn LIBRARY DESTINATION ${python_dir})
  install(DIRECTORY bindings/python/posattn/ DESTINATION ${python_dir} PATTERN __pycache__ EXCLUDE)
endif ()
if (SKBUILD)
  return ()
endif ()

install(DIRECTORY runtime/include/posattn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set_target_properties(posattn PROPERTIES EXPORT_NAME runtime)
install(TARGETS posattn EXPORT posattn_targets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${posattn_static} ${posattn_embed} DESTINATION ${CMAKE_INSTALL_LIBDIR})

if (TARGET posattn_generators)
  # The generators link the Halide they were built with (libHalide, by its absolute path).
  get_target_property(halide_library Halide::Halide LOCATION)
  get_filename_component(halide_library_dir ${halide_library} DIRECTORY)
  # (Its export name stays: a cross build imports it by that name from the host build's export.)
  set_target_properties(posattn_generators PROPERTIES INSTALL_RPATH ${halide_library_dir})
  install(TARGETS posattn_generators EXPORT posattn_targets RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/posattn)
  # The declaration API (generators/*.h) and the schedules, for variants declared out of tree.
  install(DIRECTORY generators schedules DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/posattn/halide
    FILES_MATCHING PATTERN "*.h")
  set(POSATTN_HALIDE_DIR ${Halide_DIR})
endif ()

install(EXPORT posattn_targets NAMESPACE posattn:: FILE posattnTargets.cmake DESTINATION ${package_dir})
configure_package_config_file(cmake/posattnConfig.cmake.in ${PROJECT_BINARY_DIR}/cmake/posattnConfig.cmake
  INSTALL_DESTINATION ${package_dir} PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/posattnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/posattnConfig.cmake ${PROJECT_BINARY_DIR}/cmake/posattnConfigVersion.cmake
  DESTINATION ${package_dir})
