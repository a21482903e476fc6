# cmake -P: configure, build and run the consumer project against the installed package.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}"
                        -DOpenVINO_DIR=${OpenVINO_DIR} RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "configuring the consumer failed: ${r}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY} RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "building the consumer failed: ${r}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH= ${BINARY}/consumer RESULT_VARIABLE r)
if(r)
  message(FATAL_ERROR "running the consumer failed: ${r}")
endif()
