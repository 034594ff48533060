# The BPF build: the target architecture (EGRET_BPF_ARCH, below), and bpf_object(NAME SOURCE):
# compile SOURCE with clang -target bpf into NAME.bpf.o and generate NAME.skel.h with bpftool,
# both in the build tree. Every header under include/ and bpf/lib/ is a
# dependency, so editing one rebuilds the objects that may use it. Exposes the interface target
# NAME_skel, which puts the skeleton directory on the include path.

file(GLOB_RECURSE EGRET_BPF_HEADERS CONFIGURE_DEPENDS
	${PROJECT_SOURCE_DIR}/include/*.h
	${PROJECT_SOURCE_DIR}/bpf/lib/*.h)

# The architecture the objects are built for, as bpf_tracing.h's __TARGET_ARCH_<arch> and
# bpf/vmlinux/<arch>/ name it, from the processor egret is built for (the target's when
# cross-compiling).
set(EGRET_BPF_ARCH_MAP
	x86_64=x86 AMD64=x86 amd64=x86
	aarch64=arm64 arm64=arm64 ARM64=arm64
	ppc64le=powerpc ppc64=powerpc
	s390x=s390
	riscv64=riscv
	loongarch64=loongarch)
set(EGRET_BPF_ARCH "")
foreach(pair ${EGRET_BPF_ARCH_MAP})
	string(REPLACE "=" ";" pair ${pair})
	list(GET pair 0 processor)
	if(processor STREQUAL CMAKE_SYSTEM_PROCESSOR)
		list(GET pair 1 EGRET_BPF_ARCH)
	endif()
endforeach()
if(NOT EGRET_BPF_ARCH)
	string(REPLACE "=" " -> " known "${EGRET_BPF_ARCH_MAP}")
	string(REPLACE ";" ", " known "${known}")
	message(FATAL_ERROR "no BPF target architecture for processor '${CMAKE_SYSTEM_PROCESSOR}' "
		"(CMAKE_SYSTEM_PROCESSOR): the BPF build knows ${known}; add it to EGRET_BPF_ARCH_MAP "
		"in cmake/BpfObject.cmake with its __TARGET_ARCH_ name from libbpf's bpf_tracing.h")
endif()

set(EGRET_BPF_CFLAGS -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_${EGRET_BPF_ARCH}
	-mcpu=v3 -fno-stack-protector)

function(bpf_object name src)
	set(obj ${EGRET_SKEL_DIR}/${name}.bpf.o)
	set(skel ${EGRET_SKEL_DIR}/${name}.skel.h)
	add_custom_command(OUTPUT ${obj}
		COMMAND ${CLANG} ${EGRET_BPF_CFLAGS}
			-I${EGRET_VMLINUX_DIR} -I${PROJECT_SOURCE_DIR}/include
			-I${PROJECT_SOURCE_DIR}/bpf
			-c ${PROJECT_SOURCE_DIR}/${src} -o ${obj}
		DEPENDS ${PROJECT_SOURCE_DIR}/${src} ${EGRET_BPF_HEADERS} ${EGRET_VMLINUX_BUILD_H}
		COMMENT "BPF ${src}"
		VERBATIM)
	add_custom_command(OUTPUT ${skel}
		COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}
		DEPENDS ${obj}
		COMMENT "skeleton ${name}.skel.h"
		VERBATIM)
	add_custom_target(${name}_skel_gen DEPENDS ${skel})
	add_library(${name}_skel INTERFACE)
	add_dependencies(${name}_skel ${name}_skel_gen)
	target_include_directories(${name}_skel INTERFACE ${EGRET_SKEL_DIR})
endfunction()
