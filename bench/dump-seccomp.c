/* Writes qsb's seccomp program (network off) to stdout, for giving the
 * same filter to a hand-written bwrap in bench/exec. */
#include <stdio.h>
#include <unistd.h>

#include "seccomp.h"
#include "state.h"

int
main(void)
{
	struct qsb_seccomp sc;

	if (qsb_seccomp_build(&sc, true) < 0 ||
	    qsb_write_all(STDOUT_FILENO, sc.insns, sc.n * sizeof(sc.insns[0])) < 0) {
		perror("dump-seccomp");
		return 1;
	}
	qsb_seccomp_free(&sc);
	return 0;
}
