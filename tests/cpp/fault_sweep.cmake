# Fails every Level Zero call of PROGRAM in turn (issue 14's fault sweep, for a C++ program):
# cmake -DPROGRAM=<path> -DREPORT=<file.md> -P fault_sweep.cmake, with the virtual platform on
# LD_LIBRARY_PATH and the DPC++ adapter chosen by SYCL_UR_USE_LEVEL_ZERO_V2 (ctest runs it under both).
# One run with VL0_TRACE=1 lists the calls; then one run per call with that call failed
# (VL0_FAULTS=<function>:<n>:<code>, the n-th call from the start). Every run must end by itself:
# exit 0, or an error exit with a message. Killed by a signal (a crash, an abort) or hung (still
# running after RUN_TIMEOUT seconds: killed and recorded) is a failure, except where the runtime is
# known to end so (RUNTIME_ENDS below, each with the reason). The report (calls x outcomes) is
# written to REPORT, with -<VL0_PROFILE> before .md when a profile is set.
#
# Every call is swept, not a sample: a run takes about 0.1 s, so the whole sweep takes 30-40 s per
# profile under adapter v1 (350 calls) and 80-95 s under v2 (730-920 calls) on two cores.

cmake_policy(SET CMP0007 NEW)  # list(GET) keeps the empty fields of RUNTIME_ENDS

# A run takes well under a second; one still going after this is hung. It bounds the sweep too: a
# hang costs this much, and every hang not listed below fails the test.
set(RUN_TIMEOUT 20)

# Ends inside the unmodified runtimes that the program cannot catch, allowed only here, one entry
# per kind: "function|n (or *)|ABORT or HANG|what stderr shows (regex, or empty)|why". No ';' or
# square bracket in an entry (CMake list syntax). A HANG entry says where the runtime waits.
set(RUNTIME_ENDS
  "zeCommandQueueCreate|*|ABORT|ur_die|DPC++'s Level Zero adapter v1 aborts when the driver refuses a command queue (ur_die in getZeQueue)"
  "zeCommandListCreate|1|ABORT||DPC++'s Level Zero adapter v1 crashes (SIGSEGV) in ur_context_handle_t_::getAvailableCommandList under urEnqueueUSMMemcpy, the queue's first copy, when the driver refuses its first command list (Meteor Lake, adapter v1, seen with gdb)"
  "zeFenceCreate|1|ABORT||DPC++'s Level Zero adapter v1 crashes (SIGSEGV) in ur_context_handle_t_::getAvailableCommandList under urEnqueueUSMMemcpy when the driver refuses the fence of the queue's first command list (Meteor Lake, adapter v1, seen with gdb)"
)

set(profile "$ENV{VL0_PROFILE}")
if(profile STREQUAL "")
  set(profile "lnl (default)")
else()
  string(REGEX REPLACE "\\.md$" "-${profile}.md" REPORT "${REPORT}")
endif()
if("$ENV{SYCL_UR_USE_LEVEL_ZERO_V2}" STREQUAL "0")
  set(adapter "v1 (SYCL_UR_USE_LEVEL_ZERO_V2=0)")
elseif("$ENV{SYCL_UR_USE_LEVEL_ZERO_V2}" STREQUAL "1")
  set(adapter "v2 (SYCL_UR_USE_LEVEL_ZERO_V2=1)")
else()
  set(adapter "the one DPC++ picks for the profile's GPU")
endif()
string(TIMESTAMP started "%s")

# The program runs as this script's own child, its environment set here: `cmake -E env` would run it
# as a grandchild and turn its death by a signal into exit 1 ("Subprocess aborted" on stderr),
# hiding crashes and aborts from the sweep.
unset(ENV{VL0_FAULTS})
set(ENV{VL0_TRACE} 1)
execute_process(COMMAND "${PROGRAM}"
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE trace TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the traced run of ${PROGRAM} failed: ${rc}")
endif()
# Calls are "[vl0 <pid>] zeName(...)": match " zeName(" (a bracket in a list element would keep CMake
# from splitting the list).
unset(ENV{VL0_TRACE})
string(REGEX MATCHALL " ze[A-Z][A-Za-z0-9]*\\(" calls "${trace}")
list(LENGTH calls total)
if(total EQUAL 0)
  message(FATAL_ERROR "no Level Zero call in the trace of ${PROGRAM}")
endif()

set(rows "")
set(bad "")
set(n_ok 0)
set(n_error 0)
set(n_runtime 0)
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
  set(ENV{VL0_FAULTS} "${fn}:${n}:${code}")
  execute_process(COMMAND "${PROGRAM}"
    RESULT_VARIABLE r OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT ${RUN_TIMEOUT})
  if(r MATCHES "^[0-9]+$")
    string(STRIP "${err}" message)
    if(r EQUAL 0)
      set(outcome "ok")
      math(EXPR n_ok "${n_ok} + 1")
    elseif(message STREQUAL "")
      set(outcome "ERROR EXIT ${r} without a message")
      string(APPEND bad "${fn} call ${n}: exit ${r} and nothing on stderr\n")
    else()
      set(outcome "error exit ${r}")
      math(EXPR n_error "${n_error} + 1")
    endif()
  else()
    if(r MATCHES "timeout")
      set(end "HANG")
      set(what "HANG: killed after ${RUN_TIMEOUT} s")
    else()
      set(end "ABORT")
      set(what "KILLED: ${r}")
    endif()
    set(reason "")
    foreach(entry IN LISTS RUNTIME_ENDS)
      string(REPLACE "|" ";" field "${entry}")
      list(GET field 0 e_fn)
      list(GET field 1 e_n)
      list(GET field 2 e_end)
      list(GET field 3 e_stderr)
      list(GET field 4 e_why)
      if(fn STREQUAL e_fn AND (e_n STREQUAL "*" OR n EQUAL e_n) AND end STREQUAL e_end
         AND (e_stderr STREQUAL "" OR err MATCHES "${e_stderr}"))
        set(reason "${e_why}")
      endif()
    endforeach()
    if(reason STREQUAL "")
      set(outcome "${what}")
      string(APPEND bad "${fn} call ${n}: ${what}\n")
    else()
      set(outcome "${what}, inside the runtime: ${reason}")
      math(EXPR n_runtime "${n_runtime} + 1")
    endif()
  endif()
  string(APPEND rows "| ${fn} | ${n} | ${outcome} |\n")
endforeach()

string(TIMESTAMP finished "%s")
math(EXPR seconds "${finished} - ${started}")
set(report "# Fault sweep: ${PROGRAM}\n\nProfile ${profile}, DPC++ Level Zero adapter ${adapter}.\n\n")
string(APPEND report "${total} Level Zero calls, each failed in its own process (a run still going after "
  "${RUN_TIMEOUT} s is killed as hung), in ${seconds} s: ${n_ok} ok, ${n_error} error exits with a message, "
  "${n_runtime} ends inside the runtime (allowed, with the reason).\n")
if(NOT bad STREQUAL "")
  string(APPEND report "\nFailures:\n\n```\n${bad}```\n")
endif()
string(APPEND report "\n| call | n | outcome |\n|---|---|---|\n${rows}")
file(WRITE "${REPORT}" "${report}")
message(STATUS "${total} calls swept in ${seconds} s (adapter ${adapter}, profile ${profile}); report: ${REPORT}")
if(NOT bad STREQUAL "")
  message(FATAL_ERROR "injected failures that killed, hung or silently failed ${PROGRAM}:\n${bad}")
endif()
