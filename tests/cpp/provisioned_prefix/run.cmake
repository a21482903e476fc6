# cmake -P: a fresh XDG_CACHE_HOME whose npu-sycl-bridge/prefix links to PREFIX (the runtime prefix this build
# uses), then configure ./CMakeLists.txt there; the caller's environment has XDG_CACHE_HOME set and
# NPU_SYCL_BRIDGE_HOME, SYCL_ROOT, CMPLR_ROOT unset.
file(REMOVE_RECURSE ${XDG} ${BINARY})
file(MAKE_DIRECTORY ${XDG}/npu-sycl-bridge)
file(CREATE_LINK ${PREFIX} ${XDG}/npu-sycl-bridge/prefix SYMBOLIC)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${BINARY}
                        -DNPU_SYCL_BRIDGE_SOURCE=${SOURCE} -DEXPECTED_PREFIX=${XDG}/npu-sycl-bridge/prefix
                RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "the XDG_CACHE_HOME prefix was not used: ${r}")
endif()
