/* Compat system calls as tp_btf/sys_enter and sys_exit see them: which ABI the current call is
 * (ia32 through int 0x80 or sysenter, x32 with bit 30), its number in that ABI, and its
 * arguments from the saved registers. Shared by confine.bpf.c (egret_csys) and audit.bpf.c
 * (file audit of compat calls); the table of calls is include/egret/syscalls32.h.
 */
#ifndef EGRET_SYSCALLS32_BPF_H
#define EGRET_SYSCALLS32_BPF_H

#include "lib/common.bpf.h"

#include "egret/syscalls32.h"

#define TS_COMPAT 0x0002 /* x86 thread_info.status: an ia32 system call is being made */

/* t is the current task; id the syscall number as the tracepoint has it (orig_ax at exit) */
static __always_inline __u8 compat_abi(struct task_struct *t, long id)
{
	if (t->thread_info.status & TS_COMPAT)
		return EGRET_ABI_I386;
	return id > 0 && (id & EGRET_X32_BIT) ? EGRET_ABI_X32 : EGRET_ABI_NATIVE;
}

static __always_inline __u32 compat_nr(__u8 abi, long id)
{
	return abi == EGRET_ABI_X32 ? (__u32)id & ~EGRET_X32_BIT : (__u32)id;
}

/* the first five arguments: ebx ecx edx esi edi for ia32 (32 bits each, pointers zero-extended
 * as the kernel's compat_ptr does), rdi rsi rdx r10 r8 for x32
 */
static __always_inline void compat_args(struct pt_regs *regs, __u8 abi, __u64 a[5])
{
	if (abi == EGRET_ABI_I386) {
		a[0] = (__u32)regs->bx;
		a[1] = (__u32)regs->cx;
		a[2] = (__u32)regs->dx;
		a[3] = (__u32)regs->si;
		a[4] = (__u32)regs->di;
	} else {
		a[0] = regs->di;
		a[1] = regs->si;
		a[2] = regs->dx;
		a[3] = regs->r10;
		a[4] = regs->r8;
	}
}

#endif /* EGRET_SYSCALLS32_BPF_H */
