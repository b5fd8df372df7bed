/*
 * For bench/terminal: starts `qsb-exec terminal create SESSION -- CMD...`
 * and returns when the terminal's output first has bytes, as a reader in
 * another process would see them: blocked on inotify, not spinning (on two
 * cores a spinning reader would slow the very start it measures).  The
 * watching is done by a child that reports through a pipe, so that the
 * teardown of the inotify instance at exit (an SRCU grace period, several
 * milliseconds) is not counted.
 * usage: first-output ROOT SESSION CMD [ARG...]
 */
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char *argv[])
{
	char reply[256], dir[4096], file[4200], ev[4096], *p, *q;
	char **args;
	struct stat st;
	ssize_t n = 0, k;
	int fd[2], in, i, status;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: first-output ROOT SESSION CMD...\n");
		return 2;
	}
	if ((args = calloc((size_t)argc + 4, sizeof(*args))) == NULL ||
	    pipe(fd) < 0)
		return 1;
	args[0] = "qsb-exec";
	args[1] = "terminal";
	args[2] = "create";
	args[3] = argv[2];
	args[4] = "--";
	for (i = 3; i < argc; i++)
		args[i + 2] = argv[i];
	if ((pid = fork()) == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execvp(args[0], args);
		_exit(127);
	}
	close(fd[1]);
	while ((k = read(fd[0], reply + n, sizeof(reply) - 1 - (size_t)n)) > 0)
		n += k;
	reply[n] = '\0';
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    (p = strstr(reply, ":\"")) == NULL ||
	    (q = strchr(p + 2, '"')) == NULL)
		return 1;
	*q = '\0';
	snprintf(dir, sizeof(dir), "%s/ws/%s/meta/terminals/%s", argv[1],
	    argv[2], p + 2);
	snprintf(file, sizeof(file), "%s/output", dir);
	if (pipe(fd) < 0 || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(fd[0]);
		if ((in = inotify_init1(0)) < 0 ||
		    inotify_add_watch(in, dir, IN_MODIFY | IN_MOVED_TO) < 0)
			_exit(1);
		while (stat(file, &st) == 0 && st.st_size == 0)
			if (read(in, ev, sizeof(ev)) < 0)
				_exit(1);
		(void)!write(fd[1], "k", 1);
		_exit(0);
	}
	close(fd[1]);
	return read(fd[0], ev, 1) == 1 ? 0 : 1;
}
