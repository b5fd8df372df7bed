#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "parse.h"
#include "root.h"
#include "state.h"

int
qsb_event(const struct qsb_root *r, const char *event, const char *session,
    const char *data, size_t datalen, struct qsb_err *e)
{
	struct qsb_jw w;
	struct stat st;
	char last;
	int fd = -1, rc = -1;

	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "event");
	qsb_jw_str(&w, event);
	qsb_jw_key(&w, "time");
	qsb_jw_time(&w, qsb_now_ms());
	qsb_jw_key(&w, "sessionId");
	qsb_jw_str(&w, session);
	qsb_jw_key(&w, "data");
	if (data != NULL && datalen > 0) {
		/* strip the writer's trailing newline, if any */
		while (datalen > 0 && data[datalen - 1] == '\n')
			datalen--;
		qsb_jw_raw(&w, data, datalen);
	} else
		qsb_jw_null(&w);
	qsb_jw_obj_end(&w);
	if (qsb_jw_finish(&w) < 0) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "event log");
		goto out;
	}
	if ((fd = openat(r->fd, "events.jsonl", O_RDWR | O_APPEND | O_CREAT |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot open '%s/events.jsonl'", r->path);
		goto out;
	}
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot lock the event log");
			goto out;
		}
	if (fstat(fd, &st) == 0 && st.st_size > 0 &&
	    pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
		(void)qsb_write_all(fd, "\n", 1);
	if (qsb_write_all(fd, w.buf, w.len) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot append to the event log");
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	qsb_jw_free(&w);
	return rc;
}
