# Helpers every CMakeLists.txt of the project uses: one way to declare a
# library, a program, a test binary and generated protobuf/gRPC code.

# inferd_library(<name> <sources>...): a static, position-independent library
# of our own code (warnings as errors). Includes are rooted at src/ and
# include/; RapidJSON is a system include (it is header-only and warns).
function(inferd_library name)
  add_library(${name} STATIC ${ARGN})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_include_directories(${name} SYSTEM PUBLIC ${RAPIDJSON_INCLUDE_DIR})
  target_compile_options(${name} PRIVATE ${INFERD_WARNINGS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# inferd_program(<name> <sources>...): an executable of our own code, into
# <build>/bin like an installed program.
function(inferd_program name)
  add_executable(${name} ${ARGN})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${INFERD_WARNINGS})
endfunction()

# inferd_gtest(<name> PREFIX <ctest prefix> SOURCES <files>... LIBS <targets>...
#              [TIMEOUT <s>] [ENVIRONMENT <k=v;...>])
# A GoogleTest binary whose tests ctest discovers one by one.
function(inferd_gtest name)
  cmake_parse_arguments(T "" "PREFIX;TIMEOUT" "SOURCES;LIBS;ENVIRONMENT" ${ARGN})
  inferd_program(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(props TIMEOUT ${T_TIMEOUT})
  if(T_ENVIRONMENT)
    list(APPEND props ENVIRONMENT "${T_ENVIRONMENT}")
  endif()
  gtest_discover_tests(${name} TEST_PREFIX "${T_PREFIX}" DISCOVERY_TIMEOUT 60
                       PROPERTIES ${props})
endfunction()

# inferd_proto_library(<target> PROTOS <file.proto>... [GRPC] [PROTO_PATH <dir>]
#                      [DEPENDS <file.proto>...] [LIBS <targets>...])
# Runs protoc (and grpc_cpp_plugin with GRPC) on each proto into
# <build>/generated and compiles the result into a static library, without
# our warning flags. PROTO_PATH (default: proto/) is protoc's import root;
# DEPENDS lists the imported protos (rebuild triggers); LIBS are linked
# publicly (another proto library this one imports).
function(inferd_proto_library target)
  cmake_parse_arguments(P "GRPC" "PROTO_PATH" "PROTOS;DEPENDS;LIBS" ${ARGN})
  if(NOT P_PROTO_PATH)
    set(P_PROTO_PATH ${PROJECT_SOURCE_DIR}/proto)
  endif()
  set(out_dir ${PROJECT_BINARY_DIR}/generated)
  file(MAKE_DIRECTORY ${out_dir})
  set(sources)
  foreach(proto ${P_PROTOS})
    get_filename_component(stem ${proto} NAME_WE)
    set(outputs ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.pb.h)
    set(args --proto_path=${P_PROTO_PATH} --cpp_out=${out_dir})
    set(deps ${proto} ${P_DEPENDS})
    if(P_GRPC)
      list(APPEND outputs ${out_dir}/${stem}.grpc.pb.cc ${out_dir}/${stem}.grpc.pb.h)
      list(APPEND args --grpc_out=${out_dir} --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN})
      list(APPEND deps ${GRPC_CPP_PLUGIN})
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND protobuf::protoc ${args} ${proto}
      DEPENDS ${deps}
      COMMENT "protoc ${stem}.proto")
    list(APPEND sources ${out_dir}/${stem}.pb.cc)
    if(P_GRPC)
      list(APPEND sources ${out_dir}/${stem}.grpc.pb.cc)
    endif()
  endforeach()
  add_library(${target} STATIC ${sources})
  target_include_directories(${target} SYSTEM PUBLIC ${out_dir})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf ${P_LIBS})
  if(P_GRPC)
    target_link_libraries(${target} PUBLIC gRPC::grpc++)
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
