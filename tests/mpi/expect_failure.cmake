# Runs a command that must fail: passes when it exits with EXPECT_CODE and its output (stdout and
# stderr) matches EXPECT_OUTPUT, and fails otherwise -- on exit code 0, on another code (mpirun's
# --timeout ending a hang gives one), or on a missing message.
#
#   cmake -DEXPECT_CODE=<n> -DEXPECT_OUTPUT=<regex> -P expect_failure.cmake -- <command> <args>...
#
# (ctest's PASS_REGULAR_EXPRESSION alone ignores the exit code, hence this script.)
set(command "")
set(seen_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(k RANGE ${last})
  if(seen_separator)
    list(APPEND command "${CMAKE_ARGV${k}}")
  elseif(CMAKE_ARGV${k} STREQUAL "--")
    set(seen_separator TRUE)
  endif()
endforeach()
if(NOT command OR NOT DEFINED EXPECT_CODE OR NOT DEFINED EXPECT_OUTPUT)
  message(FATAL_ERROR "usage: cmake -DEXPECT_CODE=<n> -DEXPECT_OUTPUT=<regex> -P "
                      "expect_failure.cmake -- <command>...")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE output
                ERROR_VARIABLE output)
message("${output}")
if(NOT code STREQUAL "${EXPECT_CODE}")
  message(FATAL_ERROR "expected exit code ${EXPECT_CODE}, got '${code}'")
endif()
if(NOT output MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "the output does not match '${EXPECT_OUTPUT}'")
endif()
message("exit code ${code} and the expected message: the failure ended the job")
