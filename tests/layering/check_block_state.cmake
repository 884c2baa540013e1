# SPDX-License-Identifier: MIT
# Each hardware block changes only its own part of a QP context (src/hwmodel/contexts.h): the
# doorbell unit its DoorbellState, WQE fetch its FetchState, the requester, responder and
# completer theirs. Any other block may read a part, never write it. This scan rejects, in every
# source of the directory it is given, a write to another block's part (an assignment, an
# increment, a member function call) and a non-const reference or pointer to one.
# Run with -DNDKSIM_BLOCK_DIR=<directory of the block sources>.
set(parts doorbell fetch requester responder completer)
set(types Doorbell Fetch Requester Responder Completer)
set(owners doorbell_unit wqe_fetch requester responder completer)

file(GLOB files ${NDKSIM_BLOCK_DIR}/*.h ${NDKSIM_BLOCK_DIR}/*.cc)
set(problems "")
foreach(file IN LISTS files)
  get_filename_component(stem ${file} NAME_WE)
  if(stem STREQUAL "contexts")
    continue()  # where the parts are defined
  endif()
  file(STRINGS ${file} lines)
  foreach(i RANGE 4)
    list(GET parts ${i} part)
    list(GET types ${i} type)
    list(GET owners ${i} owner)
    if(stem STREQUAL owner)
      continue()
    endif()
    set(member "(\\.|->)${part}\\.[A-Za-z_]+(\\[[^]]*\\])?")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "//.*" "" code "${line}")
      set(why "")
      if(code MATCHES "${member}(\\.[A-Za-z_]+(\\[[^]]*\\])?)*[ ]*(=[^=]|\\+\\+|--|[-+*/%^|&]=|<<=|>>=)"
         OR code MATCHES "(\\+\\+|--)[A-Za-z_]+${member}"
         OR code MATCHES "(\\.|->)${part}[ ]*=[^=]")
        set(why "writes the ${part} part")
      elseif(code MATCHES "&[A-Za-z_]+(\\.|->)${part}([^A-Za-z_]|$)" OR code MATCHES "&[A-Za-z_]+${member}")
        set(why "takes the address of the ${part} part")
      elseif(code MATCHES "auto[ ]*[&*][ ]*[A-Za-z_]+[ ]*=[ ]*&?[A-Za-z_]+(\\.|->)${part}[ ;]"
             AND NOT code MATCHES "const auto")
        set(why "holds the ${part} part by non-const auto reference")
      elseif(code MATCHES "(\\.|->)${part}\\.[A-Za-z_]+\\(")
        set(why "calls a member function of the ${part} part")
      elseif(code MATCHES "${type}State[ ]*[&*]" AND NOT code MATCHES "const ${type}State")
        set(why "holds the ${part} part by non-const reference")
      endif()
      if(why)
        string(STRIP "${line}" shown)
        string(APPEND problems "\n  ${stem}: ${why}, owned by ${owner}: ${shown}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "a block changes another block's state:${problems}")
endif()
message(STATUS "every block changes only its own part of a QP context")
