# cmake -P: configure the project as a user would (no CMAKE_BUILD_TYPE) and check that what it builds and
# installs is a release build, cargo's included.
file(REMOVE_RECURSE ${BINARY})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}"
                        -DNPU_SYCL_BRIDGE_BUILD_TESTS=OFF
                OUTPUT_QUIET RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "configuring the project failed: ${r}")
endif()
file(STRINGS ${BINARY}/CMakeCache.txt build_type REGEX "^CMAKE_BUILD_TYPE:")
if(NOT build_type MATCHES "=Release$")
  message(FATAL_ERROR "a build with no CMAKE_BUILD_TYPE is not a release build: ${build_type}")
endif()
file(GLOB_RECURSE rules ${BINARY}/CMakeFiles/npu_sycl_bridge_rust.dir/build.make)
file(READ "${rules}" text)
if(NOT text MATCHES "npu-sycl-bridge-cpp --release")
  message(FATAL_ERROR "cargo does not build the library in release (${rules})")
endif()
message(STATUS "no CMAKE_BUILD_TYPE: ${build_type}, cargo --release")
