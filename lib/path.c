#include <sys/syscall.h>

#include <linux/openat2.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "path.h"

int
qsb_path_rel(const char *rootpath, const char *path, char *out, size_t outsz,
    struct qsb_err *e)
{
	size_t rl = strlen(rootpath);
	const char *rest;

	if (*path == '\0')
		return qsb_err_set(e, QSB_E_FILE_NOT_FOUND, "empty path");
	if (strlen(path) >= PATH_MAX)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "path too long");
	if (path[0] != '/')
		rest = path;
	else if (strncmp(path, rootpath, rl) == 0 &&
	    (path[rl] == '/' || path[rl] == '\0')) {
		rest = path + rl;
		while (*rest == '/')
			rest++;
		if (*rest == '\0')
			rest = ".";
	} else
		return qsb_err_set(e, QSB_E_PERMISSION_DENIED,
		    "'%s': outside the workspace", path);
	if (strlcpy(out, rest, outsz) >= outsz)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "path too long");
	return 0;
}

int
qsb_path_open(int basefd, const char *rel, uint64_t flags, uint64_t mode,
    const char *shown, struct qsb_err *e)
{
	struct open_how how;
	int fd, tries = 0;

	memset(&how, 0, sizeof(how));
	how.flags = flags | O_CLOEXEC;
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	do {
		fd = (int)syscall(SYS_openat2, basefd, rel, &how, sizeof(how));
	} while (fd < 0 && (errno == EAGAIN || errno == EINTR) &&
	    ++tries < 64);
	if (fd >= 0)
		return fd;
	switch (errno) {
	case EXDEV:
		return qsb_err_set(e, QSB_E_PERMISSION_DENIED,
		    "'%s': resolves outside the workspace", shown);
	case ELOOP:
		return qsb_err_set(e, QSB_E_PERMISSION_DENIED,
		    "'%s': too many symbolic links, or a link the workspace "
		    "may not follow", shown);
	case ENOENT:
		return qsb_err_set(e, QSB_E_FILE_NOT_FOUND,
		    "'%s': no such file or directory", shown);
	case ENOTDIR:
		return qsb_err_set(e, QSB_E_FILE_NOT_FOUND,
		    "'%s': not a directory", shown);
	case EACCES:
	case EPERM:
	case EROFS:
		return qsb_err_sys(e, QSB_E_PERMISSION_DENIED, "'%s'", shown);
	case ENOSYS:
		return qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "openat2 is not available (Linux 5.6 or later needed)");
	default:
		return qsb_err_sys(e, (flags & (O_WRONLY | O_RDWR | O_CREAT)) ?
		    QSB_E_FILE_WRITE_FAILED : QSB_E_FILE_NOT_FOUND, "'%s'",
		    shown);
	}
}

int
qsb_path_split(const char *rel, char *dir, size_t dirsz, char *base,
    size_t basesz, struct qsb_err *e)
{
	char tmp[PATH_MAX];
	size_t l;
	char *slash;

	if (strlcpy(tmp, rel, sizeof(tmp)) >= sizeof(tmp))
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "path too long");
	for (l = strlen(tmp); l > 1 && tmp[l - 1] == '/'; l--)
		tmp[l - 1] = '\0';
	if ((slash = strrchr(tmp, '/')) == NULL) {
		strlcpy(dir, ".", dirsz);
		slash = tmp - 1;
	} else {
		*slash = '\0';
		if (strlcpy(dir, *tmp ? tmp : ".", dirsz) >= dirsz)
			return qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "path too long");
	}
	if (slash[1] == '\0' || strcmp(slash + 1, ".") == 0 ||
	    strcmp(slash + 1, "..") == 0)
		return qsb_err_set(e, QSB_E_FILE_WRITE_FAILED,
		    "'%s': names a directory, not a file", rel);
	if (strlcpy(base, slash + 1, basesz) >= basesz)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "name too long");
	return 0;
}

int
qsb_path_of_fd(int fd, const char *rootpath, char *out, size_t outsz)
{
	char link[64], buf[PATH_MAX];
	size_t rl = strlen(rootpath);
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, buf, sizeof(buf) - 1)) < 0)
		return -1;
	buf[n] = '\0';
	if (strncmp(buf, rootpath, rl) != 0 || (buf[rl] != '/' &&
	    buf[rl] != '\0'))
		return errno = EXDEV, -1;
	if (buf[rl] == '\0')
		return strlcpy(out, ".", outsz) >= outsz ?
		    (errno = ENAMETOOLONG, -1) : 0;
	if (strlcpy(out, buf + rl + 1, outsz) >= outsz)
		return errno = ENAMETOOLONG, -1;
	return 0;
}
