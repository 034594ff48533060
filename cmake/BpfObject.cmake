# bpf_object(NAME SOURCE): compile SOURCE with clang -target bpf into NAME.bpf.o and generate
# NAME.skel.h with bpftool, both in the build tree. Every header under include/ and bpf/lib/ is a
# dependency, so editing one rebuilds the objects that may use it. Exposes the interface target
# NAME_skel, which puts the skeleton directory on the include path.

file(GLOB_RECURSE EGRET_BPF_HEADERS CONFIGURE_DEPENDS
	${PROJECT_SOURCE_DIR}/include/*.h
	${PROJECT_SOURCE_DIR}/bpf/lib/*.h)

set(EGRET_BPF_CFLAGS -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_x86
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
