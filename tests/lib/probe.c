/* egret_probe: one syscall a sandboxed process should not get away with, for tests that run it
 * through `egretctl run`. Prints what the call returned and exits 0 when it returned at all.
 *   egret_probe bpf | packet | uring
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/io_uring.h>

int main(int argc, char **argv)
{
	long rc = -1;

	if (argc != 2) {
		fprintf(stderr, "usage: egret_probe bpf|packet|uring\n");
		return 2;
	}
	if (!strcmp(argv[1], "bpf")) {
		union bpf_attr attr;

		memset(&attr, 0, sizeof(attr));
		rc = syscall(SYS_bpf, BPF_MAP_GET_NEXT_ID, &attr, sizeof(attr));
	} else if (!strcmp(argv[1], "packet")) {
		rc = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	} else if (!strcmp(argv[1], "uring")) {
		struct io_uring_params p;

		memset(&p, 0, sizeof(p));
		rc = syscall(SYS_io_uring_setup, 4, &p);
	} else {
		fprintf(stderr, "egret_probe: unknown probe '%s'\n", argv[1]);
		return 2;
	}
	printf("%s returned %ld (%s)\n", argv[1], rc, rc < 0 ? strerror(errno) : "ok");
	return 0;
}
