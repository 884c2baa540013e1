# SPDX-License-Identifier: MIT
# What include paths cannot forbid: a relative climb out of a layer ("../"), and the simulator's
# own public API (fabric, harness, test helpers, workloads) used from inside the model or the
# provider, which sim implements on top of them. Run with -DNDKSIM_SOURCE_DIR=<source dir>.
set(problems "")
foreach(layer common hwmodel provider)
  file(GLOB_RECURSE files ${NDKSIM_SOURCE_DIR}/src/${layer}/*.h ${NDKSIM_SOURCE_DIR}/src/${layer}/*.cc)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^#include \"")
    foreach(line IN LISTS includes)
      if(line MATCHES "\\.\\./" OR line MATCHES "\"sim/"
         OR line MATCHES "\"ndksim/(fabric|harness|testing|workload|swarm|benchmark)\\.h\"")
        string(APPEND problems "\n  ${file}: ${line}")
      endif()
      if(NOT layer STREQUAL "provider" AND line MATCHES "\"(provider/|ndkpi\\.h|ndkinfo\\.h)")
        string(APPEND problems "\n  ${file}: ${line} (only the provider speaks NDK)")
      endif()
    endforeach()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "includes against the layers:${problems}")
endif()
message(STATUS "every include of src/common, src/hwmodel and src/provider goes down the layers")
