/*
 * Reading, writing and listing files of a workspace from outside the
 * sandbox.  Every path goes through qsb_path_open (kernel beneath
 * resolution).  Writes replace the file whole (temporary file in the same
 * directory, fsync, rename), so a reader never sees half a file and a
 * symlink at the destination is never written through to the outside.
 */
#ifndef QSB_FILEOPS_H
#define QSB_FILEOPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "diag.h"

struct qsb_jw;

/* Copies the regular file PATH to outfd. */
int	 qsb_file_read(int fsfd, const char *rootpath, const char *path,
	    int outfd, struct qsb_err *);
/* Replaces (or creates) PATH with everything read from infd.  mkparents
 * creates missing directories.  *st gets the new file's status and relp
 * (PATH_MAX bytes) its path relative to rootPath. */
int	 qsb_file_write(int fsfd, const char *rootpath, const char *path,
	    int infd, bool mkparents, struct stat *st, char *relp,
	    struct qsb_err *);
/* Writes FileInfo[] for PATH (a directory: its entries, sorted by name;
 * anything else: itself). */
int	 qsb_file_list(int fsfd, const char *rootpath, const char *path,
	    struct qsb_jw *, struct qsb_err *);
/* One FileInfo object. */
void	 qsb_fileinfo_write(struct qsb_jw *, const char *name,
	    const char *relpath, const struct stat *);

#endif
