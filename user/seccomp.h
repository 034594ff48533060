/* The seccomp filter egretctl run puts on every sandboxed command. */
#ifndef EGRET_SECCOMP_H
#define EGRET_SECCOMP_H

int seccomp__install_sandbox_filter(void);

#endif /* EGRET_SECCOMP_H */
