/* egret_bench_pkg: what reading a dpkg package costs egretd, with apt's lists indexed once
 * against re-reading them for every package.
 *
 * For a PackageInstall of a dpkg package egretd reads its version from dpkg's status and the
 * .deb's SHA256 and Filename from apt's lists (Debian main is ~50 MiB uncompressed, kept lz4
 * compressed on some hosts). It runs on egretd's one thread, so this is time the event loop is
 * not draining the ring buffer. The packages installed on this host are read, with this
 * host's lists, in this process (read only, nothing is installed):
 *   indexed       this build: each list read and indexed once, then looked up by name
 *   rescan        the same lookups with the lists dropped before each package, as if every
 *                 package read the lists again (the baseline)
 * Rounds alternate; the medians per package and their ratio are printed, with what the index
 * holds in memory. Run:
 *   egret_bench_pkg [--packages N] [--rounds N]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "pkgmeta.h"
#include "util.h"

static int read_all(char (*paths)[320], int n, bool rescan, int *hashed)
{
	int ok = 0;

	*hashed = 0;
	for (int i = 0; i < n; i++) {
		struct pkg_found f;

		if (rescan)
			pkgmeta__expire(0);
		if (!pkgmeta__match(paths[i], &f) || pkgmeta__read(&f, NULL, 0, "http://mirror"))
			continue;
		ok++;
		if (!strncmp(f.hash_source, "apt lists", 9))
			(*hashed)++;
	}
	return ok;
}

int main(int argc, char **argv)
{
	int want = 200, rounds = 5, n = 0, ok = 0, hashed = 0;
	char(*paths)[320];
	double per[2][64];
	DIR *d;
	struct dirent *de;
	long rss0, rss1 = -1;
	static const char usage[] = "usage: egret_bench_pkg [--packages N>=1] [--rounds 1-64]\n";
	const struct bench_opt opts[] = {
		{ "--packages", 'i', &want },
		{ "--rounds", 'i', &rounds },
		{},
	};

	bench_args(argc, argv, opts, usage);
	if (want < 1 || rounds < 1 || rounds > 64) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	paths = calloc((size_t)want, sizeof(*paths));
	d = opendir("/var/lib/dpkg/info");
	while (paths && d && n < want && (de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l > 5 && !strcmp(de->d_name + l - 5, ".list"))
			snprintf(paths[n++], sizeof(paths[0]), "/var/lib/dpkg/info/%s", de->d_name);
	}
	if (d)
		closedir(d);
	if (!n) {
		fprintf(stderr, "egret_bench_pkg: no packages in /var/lib/dpkg/info\n");
		return 1;
	}
	bench_pin(0, 0);
	rss0 = bench_rss_kb(getpid());
	for (int r = 0; r < rounds; r++) {
		for (int mode = 0; mode < 2; mode++) {
			uint64_t t0;

			pkgmeta__expire(0);
			t0 = now_ns(CLOCK_MONOTONIC);
			ok = read_all(paths, n, mode == 1, &hashed);
			per[mode][r] = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e3 / n;
			if (mode == 0 && r == 0)
				rss1 = bench_rss_kb(getpid());
		}
	}
	printf("dpkg packages read: %d of %d (%d with a hash from apt's lists)\n", ok, n, hashed);
	printf("config                 us/package   vs rescan\n");
	printf("rescan (baseline)     %11.1f       1.000\n", bench_median(per[1], rounds));
	printf("indexed               %11.1f       %.3f\n", bench_median(per[0], rounds),
	       bench_median(per[0], rounds) / bench_median(per[1], rounds));
	printf("memory held by the index after a round: %ld KiB\n", rss1 - rss0);
	pkgmeta__expire(0);
	free(paths);
	return 0;
}
