# cmake -P: the consumer on a user's own installs of OpenVINO and the SYCL runtime, somewhere else than the
# runtimes the bridge was built with (copies, hard-linked where the file system allows), found the way
# setupvars.sh / setvars.sh set them up (OpenVINO_DIR, SYCL_ROOT, LD_LIBRARY_PATH), with the provisioned
# prefix out of reach (HOME, XDG_CACHE_HOME and NPU_SYCL_BRIDGE_HOME point elsewhere). Fails when the
# installed library's RUNPATH names a directory of the build's runtimes, or when the running consumer has
# mapped a file of them.
#   -DSOURCE -DBINARY -DPREFIX_PATH (the bridge's install) -DVL0_DIR
#   -DOPENVINO_PACKAGE (a directory holding cmake/, libs/, include/: pip's openvino package)
#   -DSYCL_PREFIX (a directory holding include/sycl and lib/libsycl.so*)
file(REMOVE_RECURSE ${BINARY})
set(user ${BINARY}/user)
file(MAKE_DIRECTORY ${user}/openvino ${user}/oneapi/lib ${user}/home)

# Hard links when source and copy share a file system, else a plain copy: either way, other paths.
function(replicate from to)
  execute_process(COMMAND cp -al ${from} ${to} RESULT_VARIABLE r ERROR_QUIET)
  if(r)
    execute_process(COMMAND cp -a ${from} ${to} RESULT_VARIABLE r)
    if(r)
      message(FATAL_ERROR "copying ${from} to ${to} failed: ${r}")
    endif()
  endif()
endfunction()
foreach(part cmake libs include)
  replicate(${OPENVINO_PACKAGE}/${part} ${user}/openvino/${part})
endforeach()
# The dynamic linker takes a hard link of a loaded file for that file. OpenVINO's C library is the one
# runtime opened by path (dlopen), so it is a real copy: a dlopen of the build's copy then shows up.
file(GLOB ov_c "${user}/openvino/libs/libopenvino_c.so*")
foreach(f IN LISTS ov_c)
  file(REMOVE ${f})
  get_filename_component(name ${f} NAME)
  file(COPY_FILE ${OPENVINO_PACKAGE}/libs/${name} ${f})
endforeach()
replicate(${SYCL_PREFIX}/include ${user}/oneapi/include)
file(GLOB sycl_libs LIST_DIRECTORIES false "${SYCL_PREFIX}/lib/*.so*")
foreach(f IN LISTS sycl_libs)
  replicate(${f} ${user}/oneapi/lib/)
endforeach()

file(GLOB library "${PREFIX_PATH}/lib*/libnpu_sycl_bridge.so.*.*")
if(NOT library)
  message(FATAL_ERROR "no installed libnpu_sycl_bridge.so under ${PREFIX_PATH}")
endif()
file(READ_ELF ${library} RUNPATH runpath)
foreach(dir ${OPENVINO_PACKAGE} ${SYCL_PREFIX})
  string(FIND "${runpath}" "${dir}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the installed library's RUNPATH (${runpath}) names ${dir}, a runtime of the build machine")
  endif()
endforeach()
message(STATUS "installed library RUNPATH: ${runpath}")

set(env ${CMAKE_COMMAND} -E env --unset=NPU_SYCL_BRIDGE_HOME --unset=CMPLR_ROOT --unset=NPU_SYCL_BRIDGE_OPENVINO_C
  HOME=${user}/home XDG_CACHE_HOME=${user}/home/.cache SYCL_ROOT=${user}/oneapi)
execute_process(COMMAND ${env} ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY}/build
  "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}" "-DOpenVINO_DIR=${user}/openvino/cmake" RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "configuring the consumer failed: ${r}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY}/build RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "building the consumer failed: ${r}")
endif()
execute_process(COMMAND ${env} "LD_LIBRARY_PATH=${VL0_DIR}:${user}/openvino/libs:${user}/oneapi/lib"
  ${BINARY}/build/consumer --not-from ${OPENVINO_PACKAGE} --not-from ${SYCL_PREFIX} RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "running the consumer on the user's installs failed: ${r}")
endif()
