/* main() for a fuzz target in builds without libFuzzer: runs LLVMFuzzerTestOneInput() once on
 * every file named, or on every file in a directory named (not recursively), and says how many.
 * A crash or a sanitizer report fails the run, which is how ctest replays the seed corpora.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc(n ? (size_t)n : 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int run_dir(const char *dir, unsigned int *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4096];
	int err = 0;

	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (run_file(path))
			err = -1;
		else
			(*count)++;
	}
	closedir(d);
	return err;
}

int main(int argc, char **argv)
{
	unsigned int count = 0;
	int err = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			err = -1;
		} else if (S_ISDIR(st.st_mode)) {
			err |= run_dir(argv[i], &count);
		} else if (run_file(argv[i])) {
			err = -1;
		} else {
			count++;
		}
	}
	printf("replay: %u inputs ran\n", count);
	return err || count == 0 ? 1 : 0;
}
