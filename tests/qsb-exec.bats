#!/usr/bin/env bats
# qsb-exec: options, exit statuses, output handling, limits, --json,
# bad input.  The escapes are in escape.bats.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers/common
	export QSB_ROOT="$BATS_FILE_TMPDIR/root"
	qsb-workspace create s1 >/dev/null
	qsb-workspace create net --network >/dev/null
	qsb-workspace create strict --mode strict >/dev/null
	qsb-workspace create perm --mode permissive >/dev/null
	# the permission gate is tested in qsb-perm.bats
	qsb-perm policy set "$BATS_TEST_DIRNAME/../policies/permissive.json" >/dev/null
}

setup() {
	load helpers/common
	export QSB_ROOT="$BATS_FILE_TMPDIR/root"
	BGPIDS=""
}

teardown() {
	[ -z "$BGPIDS" ] || kill $BGPIDS 2>/dev/null || true
}

# run qsb-exec; a status above 128 is a crash unless it is the command's
# own, reported in the result
qx() {
	run --separate-stderr qsb-exec "$@"
	if [ "$status" -gt 128 ] &&
	    [ "$(jq -r .exitCode <<<"$output" 2>/dev/null)" = "$status" ]; then
		return 0
	fi
	refute_crash
}

# The command's stdout/stderr from the last result.
res() { jq -r "$1" <<<"$output"; }

# --- usage and bad input -------------------------------------------------------

@test "--help and --version" {
	qx --help
	assert_success
	assert_output --partial "usage: qsb-exec [OPTIONS] SESSION -- COMMAND [ARG...]"
	qx --version
	assert_output --regexp '^qsb-exec [0-9.]+$'
}

@test "usage errors exit 2" {
	for args in "" "s1" "--bogus s1 -- true" "--json s1" \
	    "--json --stdio inherit" "--stdio inherit --secret X s1 -- true" \
	    "-t"; do
		# shellcheck disable=SC2086
		qx $args
		[ "$status" -eq 2 ] || fail "'$args': status $status"
		[[ "${stderr%%$'\n'*}" == "qsb-exec: USAGE: "* ]] || fail "$stderr"
		[[ "$stderr" == *"Try 'qsb-exec --help'."* ]]
		[ -z "$output" ]
	done
}

@test "bad values, unknown workspaces, bad ids: 125 with the code named, state untouched" {
	local before
	before=$(cat "$QSB_ROOT/ws/s1/meta/workspace.json" "$QSB_ROOT/events.jsonl")
	while read -r code args; do
		# shellcheck disable=SC2086
		qx $args
		[ "$status" -eq 125 ] || fail "'$args': status $status"
		[ -z "$output" ] || fail "'$args': output $output"
		assert_diag qsb-exec "$code"
	done <<-'EOF'
	CONFIG_INVALID -t 5x s1 -- true
	CONFIG_INVALID -t 0 s1 -- true
	CONFIG_INVALID -m 12q s1 -- true
	CONFIG_INVALID -m 1k s1 -- true
	CONFIG_INVALID --output-limit 2g s1 -- true
	CONFIG_INVALID --output-limit -1 s1 -- true
	CONFIG_INVALID --stdio tty s1 -- true
	CONFIG_INVALID --mode lax s1 -- true
	CONFIG_INVALID --backend chroot s1 -- true
	CONFIG_INVALID --permission-level 4 s1 -- true
	CONFIG_INVALID --permission-level x s1 -- true
	CONFIG_INVALID -e NOEQUALS s1 -- true
	CONFIG_INVALID -e 1X=y s1 -- true
	CONFIG_INVALID --secret QSB_NO_SUCH_VAR_ s1 -- true
	CONFIG_INVALID --secret a-b s1 -- true
	CONFIG_INVALID ../x -- true
	WORKSPACE_NOT_FOUND nope -- true
	EOF
	[ "$(cat "$QSB_ROOT/ws/s1/meta/workspace.json" "$QSB_ROOT/events.jsonl")" = "$before" ]
}

@test "--json-errors for qsb-exec's own failures" {
	qx --json-errors nope -- true
	assert_failure 125
	jq -e '.error.code == "WORKSPACE_NOT_FOUND" and .error.sessionId == "nope"' <<<"$stderr"
}

# --- results and exit statuses --------------------------------------------------

@test "the result: every field of ExecuteResult" {
	qx s1 -- sh -c 'echo out; echo err >&2'
	assert_success
	jq -e '.stdout == "out\n" and .stderr == "err\n" and .exitCode == 0 and
	    .timedOut == false and (.duration | type == "number") and
	    .signal == null and .truncated == false and .backend == "native" and
	    .mode == "compat" and .sessionId == "s1" and .network == false and
	    .permissionLevel == 3 and .insecure == false and .degraded == false and
	    (.cwd | endswith("/ws/s1/fs/projects"))' <<<"$output"
	[ -z "$stderr" ]
}

@test "exit status: the command's own, 128+N for a signal, 126, 127" {
	qx s1 -- sh -c 'exit 42'
	[ "$status" -eq 42 ] && [ "$(res .exitCode)" = 42 ]
	qx s1 -- sh -c 'kill -USR1 $$'
	[ "$status" -eq 138 ]
	[ "$(res .signal)" = SIGUSR1 ] && [ "$(res .exitCode)" = 138 ]
	run -127 --separate-stderr qsb-exec s1 -- no-such-command-qsb
	[[ "$(res .stderr)" == *"no-such-command-qsb: command not found"* ]]
	printf 'not a program' >"$QSB_ROOT/ws/s1/fs/projects/notexec"
	qx s1 -- ./notexec
	[ "$status" -eq 126 ]
	qx s1 -- false
	[ "$status" -eq 1 ]
}

@test "timeout: 124, timedOut, the signal that ended it" {
	qx -t 300ms s1 -- sleep 30
	[ "$status" -eq 124 ]
	jq -e '.timedOut == true and .exitCode == 124 and .signal == "SIGTERM" and
	    .duration < 10000' <<<"$output"
	qx -t 5s s1 -- true
	assert_success
	[ "$(res .timedOut)" = false ]
}

@test "output limit keeps the newest bytes, cut at a UTF-8 boundary" {
	qx --output-limit 10 s1 -- sh -c 'printf "abcd\303\251\342\202\254xyz"; printf 0123456789abcdef >&2'
	assert_success
	[ "$(res .stdout)" = "cdé€xyz" ] || fail "$(res .stdout)"
	[ "$(res .stderr)" = "6789abcdef" ]
	jq -e '.truncated and .stdoutTruncated and .stderrTruncated' <<<"$output"
	# a multi-byte character cut in the middle is dropped whole
	qx --output-limit 4 s1 -- printf 'x\342\202\254ab'
	[ "$(res .stdout)" = "ab" ] || fail "$(res .stdout)"
	qx --output-limit 0 s1 -- echo hi
	[ "$(res .stdout)" = "" ] && [ "$(res .truncated)" = true ]
	qx --output-limit 1k s1 -- echo small
	[ "$(res .truncated)" = false ]
}

@test "memory stays bounded by the output limit however much is printed" {
	local rss
	rss=$(python3 -c '
import resource, subprocess, sys
subprocess.run(["qsb-exec", "--output-limit", "1m", "s1", "--", "head", "-c", "300000000", "/dev/zero"],
               stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)')
	# 300 MB printed; qsb-exec keeps 1 MiB per stream (ru_maxrss in KiB)
	[ "$rss" -lt 40000 ] || fail "max RSS ${rss} KiB"
}

@test "invalid UTF-8 from the command becomes U+FFFD; NUL is escaped" {
	qx s1 -- printf 'a\377b\000c'
	[ "$(jq -c .stdout <<<"$output")" = '"a\ufffdb\u0000c"' ] ||
		[ "$(jq -c .stdout <<<"$output")" = "\"a�b\\u0000c\"" ] ||
		fail "$(jq -c .stdout <<<"$output")"
}

@test "stdin passes through; --json gives /dev/null" {
	run --separate-stderr bash -c 'printf "piped data" | qsb-exec s1 -- cat'
	[ "$(res .stdout)" = "piped data" ]
}

@test "--stdio inherit streams to our stdio, prints no result, keeps the status" {
	run --separate-stderr qsb-exec --stdio inherit s1 -- sh -c 'echo to-out; echo to-err >&2; exit 3'
	[ "$status" -eq 3 ]
	[ "$output" = to-out ]
	[ "$stderr" = to-err ]
}

@test "cwd: inside rootPath honoured; missing or outside falls back to projectsPath" {
	local fs=$QSB_ROOT/ws/s1/fs
	qx -C "$fs/home" s1 -- pwd
	[ "$(res .stdout)" = "$(cd "$fs/home" && pwd -P)" ]
	qx -C home s1 -- pwd
	[ "$(res .stdout)" = "$(cd "$fs/home" && pwd -P)" ]
	for d in /etc ../.. nope "$QSB_ROOT"; do
		qx -C "$d" s1 -- pwd
		[ "$(res .stdout)" = "$(cd "$fs/projects" && pwd -P)" ] || fail "$d: $(res .stdout)"
	done
}

@test "environment: cleared to a known list, --env added, HOME/TMPDIR/PATH in the workspace" {
	local fs
	fs=$(cd "$QSB_ROOT/ws/s1/fs" && pwd -P)
	QSB_HOST_ONLY=leak run --separate-stderr qsb-exec -e FOO=bar -e 'SP=a b' s1 -- env
	local env
	env=$(res .stdout)
	[[ "$env" == *"FOO=bar"* && "$env" == *"SP=a b"* ]]
	[[ "$env" != *QSB_HOST_ONLY* ]] || fail "host variable leaked"
	[[ "$env" == *"HOME=$fs/home"* && "$env" == *"TMPDIR=$fs/tmp"* ]]
	[[ "$env" == *"PATH=$fs/bin:"* && "$env" == *"QSB_SESSION=s1"* ]]
	# a program in the workspace's bin/ is found first
	printf '#!/bin/sh\necho mine\n' >"$QSB_ROOT/ws/s1/fs/bin/whoami-qsb"
	chmod +x "$QSB_ROOT/ws/s1/fs/bin/whoami-qsb"
	qx s1 -- whoami-qsb
	[ "$(res .stdout)" = mine ]
}

@test "--secret: passed in, redacted from the result and the event log" {
	QSB_TOKEN=s3cr3t-v4lue run --separate-stderr qsb-exec --secret QSB_TOKEN s1 -- \
	    sh -c 'echo "t=$QSB_TOKEN"; echo "$QSB_TOKEN" >&2; echo "$QSB_TOKEN" s3cr3t-v4lue'
	assert_success
	[ "$(res .stdout)" = "t=[REDACTED]"$'\n'"[REDACTED] [REDACTED]" ]
	[ "$(res .stderr)" = "[REDACTED]" ]
	! grep -q s3cr3t-v4lue "$QSB_ROOT/events.jsonl"
	# given with --env, the value comes from there
	qx -e K=abcdef123 --secret K s1 -- sh -c 'echo $K'
	[ "$(res .stdout)" = "[REDACTED]" ]
	# the tail of a secret at the start of truncated output is redacted too
	qx -e K=abcdef123 --secret K --output-limit 6 s1 -- printf 'abcdef123'
	[ "$(res .stdout)" = "[REDACTED]" ] || fail "$(res .stdout)"
}

# --- narrowing ----------------------------------------------------------------------

@test "overrides never widen the workspace: mode, network, backend none" {
	qx --mode permissive s1 -- true
	assert_failure 125
	assert_diag qsb-exec PERMISSION_DENIED
	qx --network s1 -- true
	assert_failure 125
	assert_diag qsb-exec PERMISSION_DENIED
	qx --backend none s1 -- true
	assert_failure 125
	assert_diag qsb-exec PERMISSION_DENIED
	# narrowing is fine
	qx --mode strict s1 -- ls /
	assert_success
	[ "$(res .mode)" = strict ]
	[[ "$(res .stdout)" != *home* ]]
	qx --no-network net -- true
	[ "$(res .network)" = false ]
}

@test "--permission-level: 0 read-only, 1 no network, 2 clamped without network" {
	qx --permission-level 0 net -- sh -c 'echo x > x.txt'
	[ "$status" -ne 0 ]
	[[ "$(res .stderr)" == *"Read-only file system"* ]]
	[ ! -e "$QSB_ROOT/ws/net/fs/projects/x.txt" ]
	jq -e '.permissionLevel == 0 and .network == false' <<<"$output"
	qx --permission-level 1 net -- sh -c 'echo x > x.txt'
	assert_success
	jq -e '.permissionLevel == 1 and .network == false' <<<"$output"
	[ -f "$QSB_ROOT/ws/net/fs/projects/x.txt" ]
	qx --permission-level 2 net -- true
	jq -e '.permissionLevel == 2 and .network == true and
	    .permissionLevelClamped == false' <<<"$output"
	qx --permission-level 2 s1 -- true
	jq -e '.permissionLevel == 1 and .permissionLevelClamped == true and
	    .network == false' <<<"$output"
}

@test "permissive mode: no sandbox, reported insecure" {
	qx perm -- sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; touch "$HOME/p"'
	assert_success
	jq -e '.insecure == true and .backend == "none" and .mode == "permissive"' <<<"$output"
	[ -f "$QSB_ROOT/ws/perm/fs/home/p" ]
}

# --- limits ---------------------------------------------------------------------------

@test "--max-memory is enforced and says how" {
	qx -m 64m s1 -- python3 -c 'b = bytearray(300 * 1024 * 1024); print("allocated")'
	[ "$status" -ne 0 ]
	[[ "$(res .stdout)" != *allocated* ]]
	local how
	how=$(res .limits.memory)
	[ "$how" = cgroup-v1 ] || [ "$how" = cgroup-v2 ] || [ "$how" = rlimit-as ] ||
		fail "limits.memory: $how"
	qx -m 256m s1 -- python3 -c 'b = bytearray(32 * 1024 * 1024); print("allocated")'
	assert_success
	[ "$(res .stdout)" = allocated ]
	qx s1 -- true
	[ "$(res .limits.memory)" = null ]
}

@test "diskQuota: a file is capped at what remains; an exceeded quota refuses" {
	qsb-workspace create dq --disk 2m >/dev/null
	qx dq -- sh -c 'head -c 5000000 /dev/zero > big; echo "head=$?"'
	assert_success
	[ "$(res .stdout)" != "head=0" ] || fail "the write was not stopped"
	local size
	size=$(stat -c %s "$QSB_ROOT/ws/dq/fs/projects/big")
	[ "$size" -le $((2 * 1024 * 1024)) ] || fail "size $size"
	[ "$(res .limits.fileSize)" != null ]
	# now over the quota by allocation: the next run is refused
	head -c 3000000 /dev/urandom >"$QSB_ROOT/ws/dq/fs/projects/filler"
	qx dq -- true
	assert_failure 125
	assert_diag qsb-exec FILE_WRITE_FAILED
	[[ "$stderr" == *"disk quota is 2m"* ]]
}

# --- bookkeeping ----------------------------------------------------------------------

@test "lastExitCode and lastAccessedAt are recorded; events logged" {
	local t0
	t0=$(qsb-workspace info s1 | jq -r .lastAccessedAt)
	sleep 0.02
	qx s1 -- sh -c 'exit 9'
	qsb-workspace info s1 | jq -e --arg t "$t0" '.lastExitCode == 9 and .lastAccessedAt > $t'
	tail -n 2 "$QSB_ROOT/events.jsonl" | jq -s -e '
	    .[0].event == "execute:start" and .[0].data.command == "sh -c '"'"'exit 9'"'"'" and
	    .[1].event == "execute:complete" and .[1].data.result.exitCode == 9 and
	    (.[1].data.result | has("stdout") | not)'
	qx --mode permissive s1 -- true
	tail -n 1 "$QSB_ROOT/events.jsonl" | jq -e '.event == "execute:error" and .data.code == "PERMISSION_DENIED"'
}

@test "a running command holds the workspace busy (meta/active)" {
	qsb-exec s1 -- sleep 3 >/dev/null 3>&- &
	BGPIDS=$!
	local lock="$QSB_ROOT/ws/s1/meta/active"
	for _ in $(seq 100); do [ -e "$lock" ] && ! flock -n -x "$lock" true && break; sleep 0.05; done
	! flock -n -x "$lock" true || fail "not held while running"
	kill "$BGPIDS"
	wait "$BGPIDS" || true
	flock -n -x "$lock" true
}

@test "SIGTERM to qsb-exec ends the whole tree and reports it" {
	local m="qsb-int-$$-$RANDOM"
	qsb-exec s1 -- bash -c "(setsid bash -c 'exec -a $m-a sleep 300' &); exec -a $m-b sleep 300" \
	    >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	local pid=$!
	for _ in $(seq 100); do pgrep -f "^$m-b" >/dev/null && break; sleep 0.05; done
	kill -TERM "$pid"
	wait "$pid" && fail "qsb-exec succeeded" || true
	jq -e '.interrupted == true and .signal == "SIGTERM"' "$BATS_TEST_TMPDIR/out"
	sleep 0.2
	! pgrep -f "^$m" || fail "left running"
}

# --- backends -------------------------------------------------------------------------

@test "a backend that is missing: 125 SANDBOX_UNAVAILABLE; policy fallback degrades" {
	QSB_BWRAP=/nonexistent/bwrap run --separate-stderr qsb-exec --backend bwrap s1 -- true
	assert_failure 125
	assert_diag qsb-exec SANDBOX_UNAVAILABLE
	[[ "$stderr" == *"bubblewrap (bwrap) is not installed"* ]]
	qx --backend firejail s1 -- true
	assert_failure 125
	assert_diag qsb-exec SANDBOX_UNAVAILABLE
	# with a policy that allows falling back, the strongest usable one runs
	local r=$BATS_TEST_TMPDIR/fb
	QSB_ROOT=$r qsb-workspace create f >/dev/null
	echo '{"policy": {"autoFallback": "session"}}' >"$r/config.json"
	QSB_ROOT=$r QSB_BWRAP=/nonexistent/bwrap run --separate-stderr qsb-exec --backend bwrap f -- true
	assert_success
	jq -e '.backend == "native" and .degraded == true and
	    (.reason | contains("bwrap is unusable"))' <<<"$output"
}

@test "--backend auto picks the strongest usable backend" {
	qx --backend auto s1 -- true
	assert_success
	[ "$(res .backend)" = native ]
}

@test "bwrap: the same result shape and exit statuses" {
	command -v bwrap >/dev/null || skip "bubblewrap is not installed"
	qx --backend bwrap s1 -- sh -c 'echo hi; exit 5'
	[ "$status" -eq 5 ]
	jq -e '.backend == "bwrap" and .stdout == "hi\n"' <<<"$output"
	run -127 --separate-stderr qsb-exec --backend bwrap s1 -- no-such-command-qsb
	qx --backend bwrap -t 300ms s1 -- sleep 30
	[ "$status" -eq 124 ]
}

# --- --json ---------------------------------------------------------------------------

@test "--json: one result per request line, errors in line, shell form without args" {
	run --separate-stderr qsb-exec --json <<-'EOF'
	{"sessionId":"s1","command":"echo hi; exit 3"}
	{"sessionId":"s1","command":"printf","args":["%s-%s","a","b"],"options":{"env":{"X":"1"},"timeout":5000,"outputLimit":100}}

	{"bad json
	{"sessionId":"nope","command":"true"}
	{"sessionId":"s1","command":"cat"}
	{"sessionId":"s1","command":"true","options":{"stdio":"inherit"}}
	{"sessionId":"s1","command":"true","bogus":1}
	{"sessionId":"s1","command":"sleep 5","options":{"timeout":200}}
	EOF
	[ "$status" -eq 125 ]
	[ "${#lines[@]}" -eq 8 ]
	jq -e '.stdout == "hi\n" and .exitCode == 3' <<<"${lines[0]}"
	jq -e '.stdout == "a-b" and .exitCode == 0' <<<"${lines[1]}"
	jq -e '.error.code == "CONFIG_INVALID"' <<<"${lines[2]}"
	jq -e '.error.code == "WORKSPACE_NOT_FOUND" and .error.sessionId == "nope"' <<<"${lines[3]}"
	jq -e '.stdout == "" and .exitCode == 0' <<<"${lines[4]}"
	jq -e '.error.message | contains("options.stdio")' <<<"${lines[5]}"
	jq -e '.error.message | contains("bogus")' <<<"${lines[6]}"
	jq -e '.timedOut == true and .exitCode == 124' <<<"${lines[7]}"
	run --separate-stderr qsb-exec --json <<<'{"sessionId":"s1","command":"true"}'
	assert_success
}
