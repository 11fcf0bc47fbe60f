# find_package(torchferry) for a plugin build. A plugin links nothing of
# torchferry's: the target carries the header's folder, hidden visibility and
# a version script (share/torchferry/plugin.map), so that a plugin exports its
# entry symbol alone, marked TF_PLUGIN_EXPORT, and nothing of the C++ runtime.
#
#   find_package(torchferry REQUIRED)   # -Dtorchferry_DIR=$(python -m torchferry config --cmake-dir)
#   add_library(torchferry_mine MODULE mine.cc)
#   set_target_properties(torchferry_mine PROPERTIES PREFIX "")
#   target_link_libraries(torchferry_mine PRIVATE torchferry::plugin)
#
# Sets torchferry_INCLUDE_DIR and torchferry_PLUGIN_DIR (the package's own
# plugin folder). Paths are relative to this file: the package may be
# installed anywhere.
get_filename_component(_torchferry_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(torchferry_INCLUDE_DIR "${_torchferry_prefix}/include")
set(torchferry_PLUGIN_DIR "${_torchferry_prefix}/plugins")
if(NOT EXISTS "${torchferry_INCLUDE_DIR}/torchferry.h")
  set(torchferry_FOUND FALSE)
  set(torchferry_NOT_FOUND_MESSAGE
      "expected ${torchferry_INCLUDE_DIR}/torchferry.h beside this file; found none: reinstall torchferry")
  return()
endif()
if(NOT TARGET torchferry::plugin)
  add_library(torchferry::plugin INTERFACE IMPORTED)
  set_target_properties(torchferry::plugin PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${torchferry_INCLUDE_DIR}"
    INTERFACE_COMPILE_OPTIONS "-fvisibility=hidden;$<$<COMPILE_LANGUAGE:CXX>:-fvisibility-inlines-hidden>"
    INTERFACE_LINK_OPTIONS "-Wl,--version-script=${_torchferry_prefix}/share/torchferry/plugin.map")
endif()
unset(_torchferry_prefix)
