# Fails every Level Zero call of PROGRAM in turn (issue 14's fault sweep, for a C++ program):
# cmake -DPROGRAM=<path> -DREPORT=<file> -P fault_sweep.cmake, with the virtual platform on
# LD_LIBRARY_PATH. One run with VL0_TRACE=1 lists the calls; then one run per call with that call
# failed (VL0_FAULTS=<function>:<n>:<code>, the n-th call from the start). Every run must end by
# itself: exit 0, or an error exit with a message. Killed by a signal (a crash, an abort) or hung
# is a failure, except where the runtime is known to abort (listed below with the reason).
execute_process(COMMAND "${CMAKE_COMMAND}" -E env VL0_TRACE=1 "${PROGRAM}"
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE trace TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the traced run of ${PROGRAM} failed: ${rc}")
endif()
# Calls are "[vl0 <pid>] zeName(...)": match " zeName(" (a bracket in a list element would keep CMake
# from splitting the list).
string(REGEX MATCHALL " ze[A-Z][A-Za-z0-9]*\\(" calls "${trace}")
list(LENGTH calls total)
if(total EQUAL 0)
  message(FATAL_ERROR "no Level Zero call in the trace of ${PROGRAM}")
endif()
set(report "# Fault sweep: ${PROGRAM}\n\n${total} Level Zero calls, each failed in turn.\n\n| call | n | outcome |\n|---|---|---|\n")
set(bad "")
foreach(call IN LISTS calls)
  string(REGEX REPLACE "^ (ze[A-Za-z0-9]+)\\($" "\\1" fn "${call}")
  if(NOT DEFINED count_${fn})
    set(count_${fn} 0)
  endif()
  math(EXPR count_${fn} "${count_${fn}} + 1")
  set(n ${count_${fn}})
  # What the real drivers return there: out of memory for allocations, else an unknown error.
  set(code 0x7ffffffe)
  if(fn MATCHES "^zeMemAlloc")
    set(code 0x70000003)
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "VL0_FAULTS=${fn}:${n}:${code}" "${PROGRAM}"
    RESULT_VARIABLE r OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 30)
  if(r MATCHES "^[0-9]+$")
    if(r EQUAL 0)
      set(outcome "ok")
    else()
      set(outcome "error exit ${r}")
    endif()
  elseif(fn STREQUAL "zeCommandQueueCreate" AND err MATCHES "ur_die")
    # DPC++'s Level Zero adapter v1 aborts when the driver refuses a command queue (getZeQueue).
    set(outcome "ABORT inside DPC++ (ur_die: getZeQueue), not the bridge")
  else()
    set(outcome "KILLED: ${r}")
    string(APPEND bad "${fn} call ${n}: ${r}\n")
  endif()
  string(APPEND report "| ${fn} | ${n} | ${outcome} |\n")
endforeach()
file(WRITE "${REPORT}" "${report}")
message(STATUS "${total} calls swept; report: ${REPORT}")
if(NOT bad STREQUAL "")
  message(FATAL_ERROR "injected failures that killed ${PROGRAM}:\n${bad}")
endif()
