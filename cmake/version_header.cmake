# Writes OUT with the version and the source tree's git commit (with -dirty
# when it has uncommitted changes); leaves OUT untouched when nothing changed,
# so the build does not recompile for nothing.
execute_process(COMMAND git -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#pragma once\n#define QINFER_VERSION \"${VERSION}\"\n#define QINFER_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
