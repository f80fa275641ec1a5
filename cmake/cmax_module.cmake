# cmax_module(NAME SOURCES... [DEPS ...]) defines the static library cmax_<NAME> for src/<NAME>,
# with include root src/. Dependencies point down only (core -> store -> audit -> report -> apps);
# target_link_libraries is where that is enforced.
function(cmax_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(cmax_${name} STATIC ${M_SOURCES})
  target_include_directories(cmax_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(cmax_${name} PUBLIC ${M_DEPS})
  add_library(cmax::${name} ALIAS cmax_${name})
endfunction()
