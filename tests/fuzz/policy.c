/* Fuzz target: the policy language, as a policy file (policy__parse) and as the words of a live
 * edit (policy__parse_words, what `egretctl allow|deny|revoke` sends).
 * Invariants: a parsed policy printed back in policy words (mode line, then the rules as the
 * live-rules file writes them) parses to the same rule set (same hash, same count); every rule
 * of a live edit prints as words that parse back to the same rule; errors are terminated text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define MAX_RULES 64

static void check_err(const char *err, size_t size)
{
	if (!memchr(err, '\0', size) || !err[0])
		abort();
}

/* the policy in words, parsed again: the same rules */
static void check_round_trip(const struct policy *p)
{
	struct policy again;
	char *text = NULL, err[POLICY_ERR_LEN], h1[65], h2[65];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	fprintf(f, "mode %s\n", policy__mode_name(p->mode));
	if (policy__write_live(p, f))
		abort();
	fclose(f);
	f = fmemopen(text, len, "r");
	policy__init(&again);
	if (!f || policy__parse(&again, "again", f, true, err, sizeof(err))) {
		fprintf(stderr, "printed policy does not parse: %s\n%s", err, text);
		abort();
	}
	fclose(f);
	policy__hash(p, h1);
	policy__hash(&again, h2);
	if (again.n != p->n || strcmp(h1, h2) || again.mode != p->mode) {
		fprintf(stderr, "printed policy differs:\n%s", text);
		abort();
	}
	policy__free(&again);
	free(text);
}

static void fuzz_file(const uint8_t *data, size_t size)
{
	char err[POLICY_ERR_LEN] = "";
	FILE *f = fmemopen((void *)data, size, "r");
	struct policy p;

	if (!f)
		return;
	policy__init(&p);
	if (policy__parse(&p, "fuzz", f, true, err, sizeof(err)))
		check_err(err, sizeof(err));
	else
		check_round_trip(&p);
	fclose(f);
	policy__free(&p);
}

/* The first line of the input as the words of a live edit, the second as its sandbox. */
static void fuzz_words(const uint8_t *data, size_t size)
{
	char line[4096], *words[64], *save = NULL, err[POLICY_ERR_LEN] = "", *sandbox, *nl;
	struct rule rules[MAX_RULES], back[MAX_RULES];
	int n = 0, got;

	if (size >= sizeof(line))
		size = sizeof(line) - 1;
	memcpy(line, data, size);
	line[size] = '\0';
	nl = strchr(line, '\n');
	sandbox = nl ? nl + 1 : "";
	if (nl)
		*nl = '\0';
	for (char *w = strtok_r(line, " \t", &save); w && n < 64; w = strtok_r(NULL, " \t", &save))
		words[n++] = w;
	got = policy__parse_words(words, n, sandbox, rules, MAX_RULES, err, sizeof(err));
	if (got < 0) {
		check_err(err, sizeof(err));
		return;
	}
	if (got > MAX_RULES)
		abort();
	for (int i = 0; i < got; i++) {
		char text[400], *w2[64], *s2 = NULL;
		int n2 = 0;

		rule__format(&rules[i], text, sizeof(text));
		for (char *w = strtok_r(text, " ", &s2); w && n2 < 64; w = strtok_r(NULL, " ", &s2))
			w2[n2++] = w;
		if (policy__parse_words(w2, n2, sandbox, back, MAX_RULES, err, sizeof(err)) != 1 ||
		    !rule__same(&rules[i], &back[0])) {
			fprintf(stderr, "rule %d does not print back: %s\n", i, err);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_file(data, size);
	fuzz_words(data, size);
	return 0;
}
