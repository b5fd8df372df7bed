# Shared by the sandbox suites: workspaces for every backend and mode, and
# helpers that run a command inside and look at the host afterwards.
# shellcheck shell=bash
# shellcheck disable=SC2154  # status, output, stderr: set by bats run
# shellcheck disable=SC2034  # out, err, code: set for the caller

# The combinations every escape case runs under.  bwrap joins when
# bubblewrap is installed (.ci/run installs it).
combos() {
	echo native/strict native/compat
	if command -v bwrap >/dev/null 2>&1; then
		echo bwrap/strict bwrap/compat
	fi
}

# A root and a workspace per combination, made once per file.
sandbox_setup_file() {
	export QSB_ROOT="$BATS_FILE_TMPDIR/root"
	local c
	for c in $(combos); do
		qsb-workspace create "${c%/*}-${c#*/}" --mode "${c#*/}" \
		    --backend "${c%/*}" >/dev/null || return 1
	done
	# the permission gate has its own suite (qsb-perm.bats): here every
	# command and network access is allowed, to reach the sandbox
	qsb-perm policy set "$BATS_TEST_DIRNAME/../policies/permissive.json" \
	    >/dev/null || return 1
	qsb-workspace create other --mode compat >/dev/null || return 1
	echo "other workspace secret" |
	    qsb-workspace write other projects/private.txt >/dev/null
}

ws_of() { echo "${1%/*}-${1#*/}"; }
fs_of() { echo "$QSB_ROOT/ws/$(ws_of "$1")/fs"; }

# sx COMBO SHELL-COMMAND: runs it in the combination's workspace; the
# result lands in $output (JSON) and the command's streams in $out/$err.
sx() {
	local c=$1
	shift
	run --separate-stderr qsb-exec --backend "${c%/*}" "$(ws_of "$c")" -- \
	    sh -c "$*"
	# 125 is qsb-exec's own failure, never an acceptable answer here
	[ "$status" -ne 125 ] || fail "$c: qsb-exec failed: $stderr"
	jq -e . >/dev/null <<<"$output" || fail "$c: no result: $output"
	out=$(jq -r .stdout <<<"$output")
	err=$(jq -r .stderr <<<"$output")
	code=$(jq -r .exitCode <<<"$output")
}

# A unique marker for host-side checks.
marker() { echo "qsb-escape-$$-$BATS_TEST_NUMBER-$RANDOM"; }

# A TCP listener on the host's loopback that logs every connection.
start_listener() {
	LOG=$BATS_TEST_TMPDIR/accepted
	: >"$LOG"
	python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".port", "w").write(str(s.getsockname()[1]))
while True:
    c, a = s.accept(); open(sys.argv[1], "a").write("accepted\n"); c.close()
' "$LOG" >/dev/null 2>&1 3>&- &
	LPID=$!
	BGPIDS="$LPID"
	for _ in $(seq 100); do [ -s "$LOG.port" ] && break; sleep 0.05; done
	PORT=$(cat "$LOG.port")
}
