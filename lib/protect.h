/*
 * Protected paths: glob patterns relative to rootPath ("**" matches any
 * number of directories, "*" and "?" within one name, and match dot files)
 * naming what stays read-only inside the sandbox.  The search for them does
 * not follow symbolic links, does not enter node_modules, looks only at
 * the direct children of a .git directory, stops at depth 8 and after
 * QSB_PROTECT_MAXVISIT entries.
 */
#ifndef QSB_PROTECT_H
#define QSB_PROTECT_H

#include <stdbool.h>
#include <stddef.h>

#define QSB_PROTECT_MAXDEPTH	8
#define QSB_PROTECT_MAXVISIT	200000

bool	 qsb_glob_match(const char *pattern, const char *path);
/* The existing files and directories (not symlinks) beneath rootfd that
 * match one of patterns (NULL-terminated); *out is a NULL-terminated list
 * of relative paths, freed with qsb_protect_free. */
int	 qsb_protect_find(int rootfd, char *const *patterns, char ***out,
	    size_t *n);
void	 qsb_protect_free(char **);

#endif
