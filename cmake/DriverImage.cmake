# SPDX-License-Identifier: MIT
# ndksim_add_driver_image(<target> <sources>...): a Windows kernel-style driver built as a shared
# object for Environment::LoadDriverImage, which loads a copy of it per machine. The image is
# compiled with the stand-in WDK headers (ndksim::kernel_headers) and links nothing of ndksim: its
# kernel services are bound, when it is loaded, to those of the program that loads it (a program
# linked with ndksim::kernel exports them).
function(ndksim_add_driver_image target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE ndksim::kernel_headers)
  set_target_properties(${target} PROPERTIES PREFIX "" C_STANDARD 11 C_STANDARD_REQUIRED ON)
endfunction()
