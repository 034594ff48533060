/* The growable array of array.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "array.h"

int array__reserve(void **items, size_t *cap, size_t want, size_t size)
{
	size_t n = *cap ? *cap : 8;
	void *p;

	if (want <= *cap)
		return 0;
	if (!size || want > SIZE_MAX / size)
		return -EOVERFLOW;
	while (n < want)
		n = n > SIZE_MAX / 2 ? want : n * 2;
	if (n > SIZE_MAX / size)
		n = want;
	p = realloc(*items, n * size);
	if (!p)
		return -ENOMEM;
	*items = p;
	*cap = n;
	return 0;
}
