#!/bin/sh
# Generate vmlinux.h from kernel BTF; replace the output only when its content changed, so a
# rebuild does not recompile every BPF object for nothing.
set -eu
bpftool=$1 btf=$2 out=$3
tmp="$out.tmp.$$"
"$bpftool" btf dump file "$btf" format c >"$tmp"
if [ -f "$out" ] && cmp -s "$tmp" "$out"; then
	rm -f "$tmp"
else
	mv "$tmp" "$out"
fi
