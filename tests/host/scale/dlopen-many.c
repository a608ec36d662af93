/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dlopen-many FILE...: map every shared object given (each call one
 * function in it, so its text is resident), print "loaded N", pause. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = 0;

	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
		int (*f)(int);

		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		f = (int (*)(int))dlsym(h, "scale_lib_work");
		if (f)
			n += f(1) > 0;
	}
	printf("loaded %d\n", n);
	fflush(stdout);
	pause();
	return 0;
}
