#!/usr/bin/env bats
# qsb-exec terminal and qsb-exec acp: the ACP terminal lifecycle, its
# limits, its confinement, and the JSON-RPC adapter.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	common_setup
	qsb-workspace create s1 >/dev/null
	qsb-workspace create s2 >/dev/null
	# the permission gate has its own suite; here commands are allowed
	qsb-perm policy set "$BATS_TEST_DIRNAME/../policies/permissive.json" >/dev/null
	MARK="qsb-term-$$-$BATS_TEST_NUMBER-$RANDOM"
}

teardown() {
	# nothing started here outlives its test
	qsb-exec terminal release --session s1 >/dev/null 2>&1 || true
	qsb-exec terminal release --session s2 >/dev/null 2>&1 || true
	pkill -f "$MARK" 2>/dev/null || true
}

qt() { run_qsb qsb-exec terminal "$@"; }

# create SESSION ARGS...: the new terminal's id in $T
create() {
	local s=$1
	shift
	T=$(qsb-exec terminal create "$s" "$@" | jq -r .terminalId) ||
		fail "create failed"
	[[ "$T" =~ ^[0-9a-f]{16}$ ]] || fail "no terminal id: $T"
}

# output_of TID: the output JSON in $output
output_of() { qt output "$1"; assert_success; }

# until_output TID TEXT: waits (bounded) until the output holds TEXT
until_output() {
	local _
	for _ in $(seq 200); do
		qsb-exec terminal output "$1" | jq -e --arg t "$2" '.output | contains($t)' >/dev/null && return 0
		sleep 0.05
	done
	fail "no '$2' in the output of $1: $(qsb-exec terminal output "$1")"
}

supervisor_of() { cat "$QSB_ROOT/ws/$1/meta/terminals/$2/pid"; }

# --- usage and bad input -----------------------------------------------------

@test "terminal: usage errors exit 2, bad values 125 with the code, no state" {
	local before
	before=$(state_snapshot)
	for args in "" "create" "create s1" "output" \
	    "output 0123456789abcdef extra" "wait" "kill" "release" \
	    "release 0123456789abcdef --session s1" "list extra" \
	    "create s1 --json -- true" "create s1 --stdio inherit -- true" \
	    "output --bogus 0123456789abcdef" "list --timeout 1s"; do
		# shellcheck disable=SC2086
		qt $args
		[ "$status" -eq 2 ] || fail "'$args': status $status ($stderr)"
		assert_usage qsb-exec
		[ -z "$output" ]
	done
	for args in "output nothex" "output 0123456789ABCDEF" "wait 0123" \
	    "kill ../../etc/passwd" "release --session ../x" \
	    "list --session 'a b'" "wait 0123456789abcdef --timeout soon" \
	    "create ../x -- true" "create s1 --output-limit 2g -- true" \
	    "create s1 --timeout 0 -- true"; do
		eval "qt $args"
		[ "$status" -eq 125 ] || fail "'$args': status $status ($stderr)"
		assert_diag qsb-exec CONFIG_INVALID
		[ -z "$output" ]
	done
	[ "$before" = "$(state_snapshot)" ]
}

@test "terminal: an unknown terminal or workspace is FILE_NOT_FOUND / WORKSPACE_NOT_FOUND" {
	for c in output wait kill release; do
		qt "$c" 0123456789abcdef
		[ "$status" -eq 125 ] || fail "$c: $status"
		assert_diag qsb-exec FILE_NOT_FOUND
	done
	qt create nosuch -- true
	[ "$status" -eq 125 ]
	assert_diag qsb-exec WORKSPACE_NOT_FOUND
	[ -z "$(ls "$QSB_ROOT/terminals")" ]
}

@test "terminal --help shows the terminal commands" {
	qt --help
	assert_success
	assert_output --partial "qsb-exec terminal create SESSION"
	assert_output --partial "qsb-exec acp"
}

# --- the lifecycle -----------------------------------------------------------

@test "create returns while the command runs on; output before exit has exitStatus null" {
	create s1 -- sh -c "echo first; sleep 3; echo second # $MARK"
	# the command has not finished: create did not wait for it
	qt list --session s1
	jq -e '.[0].running == true and .[0].exitStatus == null' <<<"$output"
	until_output "$T" first
	output_of "$T"
	jq -e '.output == "first\n" and .truncated == false and .exitStatus == null' <<<"$output"
	pgrep -f "$MARK" >/dev/null
	qt wait "$T"
	assert_success
	[ "$output" = '{"exitCode":0,"signal":null}' ]
	output_of "$T"
	jq -e '.output == "first\nsecond\n" and .exitStatus == {"exitCode":0,"signal":null}' <<<"$output"
}

@test "a command that exits at once is still found, with its status" {
	create s1 -- true
	qt wait "$T"
	assert_success
	jq -e '.exitCode == 0' <<<"$output"
	create s1 -- sh -c 'echo quick; exit 7'
	qt wait "$T"
	[ "$status" -eq 7 ]
	jq -e '.exitCode == 7 and .signal == null' <<<"$output"
	output_of "$T"
	jq -e '.output == "quick\n"' <<<"$output"
	create s1 -- /nonexistent/prog
	run -127 --separate-stderr qsb-exec terminal wait "$T"
	output_of "$T"
	jq -e '.output | test("not found")' <<<"$output"
}

@test "stdout and stderr are one stream, in order" {
	create s1 -- sh -c 'echo one; echo two >&2; echo three'
	qt wait "$T"
	output_of "$T"
	jq -e '.output == "one\ntwo\nthree\n"' <<<"$output"
}

@test "wait --timeout: 124 while it runs on; the exit status passes through" {
	create s1 -- sh -c "sleep 2 # $MARK"
	qt wait "$T" --timeout 200ms
	[ "$status" -eq 124 ]
	[ -z "$output" ]
	pgrep -f "$MARK" >/dev/null
	qt wait "$T" --timeout 30s
	assert_success
	create s1 -- sh -c 'kill -KILL $$'
	run -137 --separate-stderr qsb-exec terminal wait "$T"
	[ "$output" = '{"exitCode":null,"signal":"SIGKILL"}' ]
}

@test "kill ends the whole tree, keeps the output readable and reports the signal" {
	create s1 -- sh -c "echo before; sleep 1000 & sleep 1000; # $MARK"
	until_output "$T" before
	pgrep -f "sleep 1000" >/dev/null
	qt kill "$T"
	assert_success
	jq -e --arg t "$T" '.terminalId == $t and .exitStatus.signal == "SIGTERM" and
		.exitStatus.exitCode == null' <<<"$output"
	! pgrep -f "$MARK" >/dev/null
	output_of "$T"
	jq -e '.output == "before\n" and .exitStatus.signal == "SIGTERM"' <<<"$output"
	# still listed until released
	qt list --session s1
	jq -e --arg t "$T" 'map(.terminalId) == [$t] and .[0].running == false' <<<"$output"
	# a kill of an ended terminal changes nothing
	qt kill "$T"
	assert_success
	jq -e '.exitStatus.signal == "SIGTERM"' <<<"$output"
}

@test "kill at once, before the command has started, still ends it with SIGTERM" {
	local i
	for i in 1 2 3; do
		create s1 -- sleep 1000
		qt kill "$T"
		assert_success
		jq -e '.exitStatus == {"exitCode":null,"signal":"SIGTERM"}' <<<"$output"
	done
}

@test "release kills and forgets" {
	create s1 -- sh -c "sleep 1000 # $MARK"
	local sup
	sup=$(supervisor_of s1 "$T")
	pgrep -f "$MARK" >/dev/null
	qt release "$T"
	assert_success
	[ "$output" = '{"released":1}' ]
	! pgrep -f "$MARK" >/dev/null
	! kill -0 "$sup" 2>/dev/null
	[ ! -e "$QSB_ROOT/ws/s1/meta/terminals/$T" ]
	[ ! -e "$QSB_ROOT/terminals/$T" ]
	qt output "$T"
	[ "$status" -eq 125 ]
	assert_diag qsb-exec FILE_NOT_FOUND
}

@test "release --session touches only that session" {
	create s1 -- sh -c "sleep 1000 # $MARK-a"
	local a=$T
	create s1 -- sh -c "exit 0"
	local b=$T
	create s2 -- sh -c "sleep 1000 # $MARK-c"
	local c=$T
	qt release --session s1
	assert_success
	[ "$output" = '{"released":2}' ]
	! pgrep -f "$MARK-a" >/dev/null
	pgrep -f "$MARK-c" >/dev/null
	qt list
	jq -e --arg c "$c" 'map(.terminalId) == [$c]' <<<"$output"
	qt output "$a"
	[ "$status" -eq 125 ]
	qt output "$b"
	[ "$status" -eq 125 ]
	qt output "$c"
	assert_success
	jq -e '.exitStatus == null' <<<"$output"
}

@test "list: every terminal with its command, session and state" {
	create s1 -- sh -c "sleep 1000 # $MARK"
	local a=$T
	create s2 -- echo hi
	local b=$T
	qsb-exec terminal wait "$b" >/dev/null
	qt list
	assert_success
	jq -e --arg a "$a" --arg b "$b" 'map(.terminalId) == [$a, $b]' <<<"$output"
	jq -e --arg a "$a" --arg b "$b" '
		(map(select(.terminalId == $a))[0] | .sessionId == "s1" and .running and
		 .command == "sh" and .args[1] == "sleep 1000 # '"$MARK"'" and .exitStatus == null) and
		(map(select(.terminalId == $b))[0] | .sessionId == "s2" and (.running | not) and
		 .command == "echo" and .args == ["hi"] and .exitStatus.exitCode == 0)' <<<"$output"
	qt list --session s2
	jq -e --arg b "$b" 'map(.terminalId) == [$b]' <<<"$output"
	qt list --session nosuch
	[ "$status" -eq 125 ]
	assert_diag qsb-exec WORKSPACE_NOT_FOUND
}

# --- limits ------------------------------------------------------------------

@test "the output limit truncates from the start, at a character boundary" {
	create s1 --output-limit 10 -- printf '0123456789abcdefghij\342\202\254xyz'
	qt wait "$T"
	output_of "$T"
	jq -e '.output == "ghij€xyz" and .truncated == true' <<<"$output"
	# a cut inside a character drops the whole character
	create s1 --output-limit 5 -- printf 'ab\342\202\254xyz'
	qt wait "$T"
	output_of "$T"
	jq -e '.output == "xyz" and .truncated == true' <<<"$output"
	create s1 --output-limit 100 -- printf 'short'
	qt wait "$T"
	output_of "$T"
	jq -e '.output == "short" and .truncated == false' <<<"$output"
}

@test "the output file stays bounded however much is printed" {
	create s1 --output-limit 1k -- sh -c 'i=0; while [ $i -lt 3000 ]; do printf "%04d %s\n" $i 0123456789012345678901234567890123456789; i=$((i+1)); done'
	qt wait "$T"
	assert_success
	local f="$QSB_ROOT/ws/s1/meta/terminals/$T/output"
	[ "$(stat -c %s "$f")" -le $((65536 + 2048 + 65536)) ] || fail "output file $(stat -c %s "$f") bytes"
	output_of "$T"
	jq -e '.truncated == true and (.output | length) <= 1024' <<<"$output"
	jq -e '.output | endswith("2999 0123456789012345678901234567890123456789\n")' <<<"$output"
}

@test "50 terminals run and the 51st is refused with a clear message" {
	local i
	for i in $(seq 50); do
		T=$(qsb-exec terminal create s1 -- sh -c "sleep 1000 # $MARK") ||
			fail "terminal $i was refused"
	done
	qt create s1 -- true
	[ "$status" -eq 125 ]
	assert_diag qsb-exec EXECUTION_FAILED
	[[ "$stderr" == *"terminal limit reached: 50 running"*"release"* ]]
	[ "$(qsb-exec terminal list | jq length)" -eq 50 ]
	# an ended one frees its place
	qsb-exec terminal kill "$(jq -r .terminalId <<<"$T")" >/dev/null
	qt create s1 -- true
	assert_success
}

@test "QSB_MAX_TERMINALS sets the limit; the count is machine-wide" {
	export QSB_MAX_TERMINALS=2
	create s1 -- sh -c "sleep 1000 # $MARK"
	create s2 -- sh -c "sleep 1000 # $MARK"
	qt create s1 -- true
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"QSB_MAX_TERMINALS is 2"* ]]
	QSB_MAX_TERMINALS=zero run --separate-stderr qsb-exec terminal create s1 -- true
	[ "$status" -eq 125 ]
	assert_diag qsb-exec CONFIG_INVALID
}

# --- confinement -------------------------------------------------------------

@test "a terminal cannot write outside its workspace" {
	local m=$MARK
	create s1 -- sh -c "echo x > /etc/$m; echo x > /tmp/$m; echo x > '$QSB_ROOT/ws/s2/fs/projects/$m';
		echo x > '$QSB_ROOT/ws/s1/meta/$m'; echo x > \$HOME/inside; echo done"
	qt wait "$T"
	output_of "$T"
	jq -e '.output | endswith("done\n")' <<<"$output"
	[ ! -e "/etc/$m" ]
	[ ! -e "/tmp/$m" ]
	[ ! -e "$QSB_ROOT/ws/s2/fs/projects/$m" ]
	[ ! -e "$QSB_ROOT/ws/s1/meta/$m" ]
	[ -f "$QSB_ROOT/ws/s1/fs/home/inside" ]
}

@test "a terminal runs under the permission policy: a denied command makes no terminal" {
	echo '{"autoApprove":[],"requireConfirm":[],"denyList":["command:execute"],
	    "workspaceOnly":true,"safeCommands":[]}' >"$BATS_TEST_TMPDIR/deny.json"
	qsb-perm policy set "$BATS_TEST_TMPDIR/deny.json" >/dev/null
	qt create s1 -- rm -rf /workspace
	[ "$status" -eq 125 ]
	assert_diag qsb-exec PERMISSION_DENIED
	[ -z "$(ls "$QSB_ROOT/terminals")" ]
	[ ! -e "$QSB_ROOT/ws/s1/meta/terminals" ] || [ -z "$(ls -A "$QSB_ROOT/ws/s1/meta/terminals")" ]
}

@test "--secret: the value is redacted from the output, even split across writes" {
	export TOKEN=s3cr3t-t0ken-value
	create s1 --secret TOKEN -- sh -c 'echo "a $TOKEN b"; printf "s3cr3t-"; sleep 0.3; printf "t0ken-value end\n"'
	qt wait "$T"
	output_of "$T"
	jq -e '.output == "a [REDACTED] b\n[REDACTED] end\n"' <<<"$output"
	! grep -r "s3cr3t-t0ken" "$QSB_ROOT" >/dev/null
}

# --- the workspace -----------------------------------------------------------

@test "destroy refuses while a terminal runs; --force kills it" {
	create s1 -- sh -c "sleep 1000 # $MARK"
	run --separate-stderr qsb-workspace destroy s1
	[ "$status" -eq 68 ]
	[[ "$stderr" == *"1 terminal is running"* ]]
	pgrep -f "$MARK" >/dev/null
	run --separate-stderr qsb-workspace destroy s1 --force
	assert_success
	jq -e '.killedTerminals == 1' <<<"$output"
	! pgrep -f "$MARK" >/dev/null
	[ ! -e "$QSB_ROOT/ws/s1" ]
	qt output "$T"
	[ "$status" -eq 125 ]
	qt list
	[ "$output" = "[]" ]
}

@test "a running terminal keeps cleanup away from its workspace" {
	qsb-workspace retention s1 --mode always >/dev/null
	create s1 -- sh -c "sleep 1000 # $MARK"
	run qsb-cleanup --all
	assert_success
	jq -e '.deletedCount == 0' <<<"$output" || jq -e '.deleted | index("s1") == null' <<<"$output"
	[ -d "$QSB_ROOT/ws/s1" ]
	qsb-exec terminal release "$T" >/dev/null
	run qsb-cleanup --session s1
	jq -e '.deleted == ["s1"]' <<<"$output"
}

@test "terminals log execute:start and execute:complete and record lastExitCode" {
	create s1 -- sh -c 'exit 4'
	qsb-exec terminal wait "$T" >/dev/null || true
	run qsb-status events --session s1
	jq -e -s 'map(.event) | index("execute:start") != null and index("execute:complete") != null' <<<"$output"
	run qsb-workspace info s1
	jq -e '.lastExitCode == 4' <<<"$output"
}

@test "the caller exiting (a shell on a terminal that hangs up) does not end the terminal" {
	# a shell in a pseudo-terminal of its own, which starts a terminal and
	# exits: the hang-up goes to its session, not to the supervisor
	python3 - "$BATS_TEST_TMPDIR/tid" "$MARK" <<-'EOF'
	import os, pty, sys
	out, mark = sys.argv[1], sys.argv[2]
	pid, fd = pty.fork()
	if pid == 0:
	    os.execvp("sh", ["sh", "-c",
	        "qsb-exec terminal create s1 -- sh -c 'sleep 1; echo survived # %s' > %s; kill -HUP $$" % (mark, out)])
	try:
	    while os.read(fd, 1024):
	        pass
	except OSError:
	    pass
	os.waitpid(pid, 0)
	EOF
	T=$(jq -r .terminalId "$BATS_TEST_TMPDIR/tid")
	qt wait "$T" --timeout 30s
	assert_success
	output_of "$T"
	jq -e '.output == "survived\n"' <<<"$output"
}

@test "create inside \$(...) returns: the supervisor keeps none of the caller's descriptors" {
	local t
	t=$(qsb-exec terminal create s1 -- sh -c "sleep 1000 # $MARK" | jq -r .terminalId)
	[[ "$t" =~ ^[0-9a-f]{16}$ ]]
	local sup
	sup=$(supervisor_of s1 "$t")
	# 0, 1 and 2 are /dev/null; no pipe of ours is held
	[ "$(readlink "/proc/$sup/fd/1")" = /dev/null ]
	! ls -l "/proc/$sup/fd" | grep -q 'pipe:' || {
		# its own pipes (to the sandbox) are fine: none is ours
		local ours
		ours=$(readlink /proc/$$/fd/* 2>/dev/null | grep pipe: || true)
		for p in $ours; do
			! ls -l "/proc/$sup/fd" | grep -qF "$p" || fail "holds $p"
		done
	}
}

# --- qsb-exec acp ------------------------------------------------------------

# acp_script FILE: runs qsb-exec acp on a conversation, one request per line,
# and leaves the responses in $output (one per line).
acp_run() {
	run --separate-stderr qsb-exec acp "$@" <"$BATS_TEST_TMPDIR/conv"
	refute_crash
}

@test "acp: a scripted ACP conversation (create, output, wait_for_exit, release)" {
	cat >"$BATS_TEST_TMPDIR/conv" <<-'EOF'
	{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"sessionId":"s1","command":"sh","args":["-c","echo \"$GREETING\"; exit 3"],"env":[{"name":"GREETING","value":"hello acp"}],"cwd":null,"outputByteLimit":4096}}
	EOF
	acp_run
	assert_success
	local tid
	tid=$(jq -r '.result.terminalId' <<<"${lines[0]}")
	jq -e '.jsonrpc == "2.0" and .id == 1' <<<"${lines[0]}"
	cat >"$BATS_TEST_TMPDIR/conv" <<-EOF
	{"jsonrpc":"2.0","id":2,"method":"terminal/wait_for_exit","params":{"sessionId":"s1","terminalId":"$tid"}}
	{"jsonrpc":"2.0","id":3,"method":"terminal/output","params":{"sessionId":"s1","terminalId":"$tid"}}
	{"jsonrpc":"2.0","id":"r","method":"terminal/release","params":{"sessionId":"s1","terminalId":"$tid"}}
	{"jsonrpc":"2.0","id":5,"method":"terminal/output","params":{"sessionId":"s1","terminalId":"$tid"}}
	EOF
	acp_run
	assert_success
	[ "${#lines[@]}" -eq 4 ]
	[ "${lines[0]}" = '{"jsonrpc":"2.0","id":2,"result":{"exitCode":3,"signal":null}}' ]
	[ "${lines[1]}" = '{"jsonrpc":"2.0","id":3,"result":{"output":"hello acp\n","truncated":false,"exitStatus":{"exitCode":3,"signal":null}}}' ]
	[ "${lines[2]}" = '{"jsonrpc":"2.0","id":"r","result":{}}' ]
	jq -e '.id == 5 and .error.code == -32002 and .error.data.code == "FILE_NOT_FOUND"' <<<"${lines[3]}"
}

@test "acp: wait_for_exit does not hold up a kill sent after it" {
	python3 - "$MARK" <<-'EOF'
	import json, subprocess, sys
	p = subprocess.Popen(["qsb-exec", "acp"], stdin=subprocess.PIPE,
	    stdout=subprocess.PIPE, text=True, bufsize=1)
	def send(i, m, params):
	    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": m,
	        "params": params}) + "\n")
	    p.stdin.flush()
	def recv():
	    return json.loads(p.stdout.readline())
	send(1, "terminal/create", {"sessionId": "s1", "command": "sh",
	    "args": ["-c", "echo up; sleep 1000 # " + sys.argv[1]]})
	tid = recv()["result"]["terminalId"]
	ids = {"sessionId": "s1", "terminalId": tid}
	send(2, "terminal/wait_for_exit", ids)
	send(3, "terminal/output", ids)
	r3 = recv()
	assert r3["id"] == 3 and r3["result"]["exitStatus"] is None, r3
	send(4, "terminal/kill", ids)
	got = {r["id"]: r for r in (recv(), recv())}
	assert got[4]["result"] == {}, got
	assert got[2]["result"]["exitCode"] is None, got
	assert got[2]["result"]["signal"] in ("SIGTERM", "SIGKILL"), got
	send(5, "terminal/release", ids)
	assert recv()["result"] == {}
	p.stdin.close()
	assert p.wait() == 0
	EOF
	! pgrep -f "$MARK" >/dev/null
}

@test "acp: JSON-RPC errors for bad messages, unknown methods and terminal ids" {
	cat >"$BATS_TEST_TMPDIR/conv" <<-'EOF'
	not json
	[1,2]
	{"jsonrpc":"1.0","id":1,"method":"terminal/output","params":{}}
	{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}
	{"jsonrpc":"2.0","id":3,"method":"terminal/output"}
	{"jsonrpc":"2.0","id":4,"method":"terminal/output","params":{"sessionId":"s1","terminalId":"0123456789abcdef"}}
	{"jsonrpc":"2.0","id":5,"method":"terminal/wait_for_exit","params":{"sessionId":"s1","terminalId":"nope"}}
	{"jsonrpc":"2.0","id":6,"method":"terminal/create","params":{"sessionId":"s1"}}
	{"jsonrpc":"2.0","id":7,"method":"terminal/create","params":{"sessionId":"../x","command":"ls"}}
	{"jsonrpc":"2.0","id":8,"method":"terminal/create","params":{"sessionId":"nosuch","command":"ls"}}
	{"jsonrpc":"2.0","id":9,"method":"terminal/create","params":{"sessionId":"s1","command":"ls","env":[{"name":"A=B","value":"x"}]}}
	{"jsonrpc":"2.0","id":10,"method":"terminal/create","params":{"sessionId":"s1","command":"ls","outputByteLimit":-1}}
	{"jsonrpc":"2.0","method":"terminal/output","params":{"sessionId":"s1","terminalId":"0123456789abcdef"}}
	{"jsonrpc":"2.0","id":{"x":1},"method":"terminal/output","params":{}}
	EOF
	acp_run
	assert_success
	[ "${#lines[@]}" -eq 13 ]
	jq -e '.id == null and .error.code == -32700' <<<"${lines[0]}"
	jq -e '.id == null and .error.code == -32600' <<<"${lines[1]}"
	jq -e '.id == 1 and .error.code == -32600' <<<"${lines[2]}"
	jq -e '.id == 2 and .error.code == -32601' <<<"${lines[3]}"
	jq -e '.id == 3 and .error.code == -32602' <<<"${lines[4]}"
	jq -e '.id == 4 and .error.code == -32002' <<<"${lines[5]}"
	jq -e '.id == 5 and .error.code == -32002' <<<"${lines[6]}"
	jq -e '.id == 6 and .error.code == -32602' <<<"${lines[7]}"
	jq -e '.id == 7 and .error.code == -32602' <<<"${lines[8]}"
	jq -e '.id == 8 and .error.code == -32002 and .error.data.code == "WORKSPACE_NOT_FOUND"' <<<"${lines[9]}"
	jq -e '.id == 9 and .error.code == -32602' <<<"${lines[10]}"
	jq -e '.id == 10 and .error.code == -32602' <<<"${lines[11]}"
	# the notification got no answer; the object id is an invalid request
	jq -e '.id == null and .error.code == -32600' <<<"${lines[12]}"
	[ -z "$(ls "$QSB_ROOT/terminals")" ]
}

@test "acp --session maps every ACP session to one workspace; a shell line without args" {
	cat >"$BATS_TEST_TMPDIR/conv" <<-'EOF'
	{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"sessionId":"sess_0123 not a qsb id","command":"echo a b | tr a-z A-Z"}}
	EOF
	acp_run --session s2
	assert_success
	local tid
	tid=$(jq -r .result.terminalId <<<"${lines[0]}")
	run qsb-exec terminal wait "$tid"
	qt output "$tid"
	jq -e '.output == "A B\n"' <<<"$output"
	qt list --session s2
	jq -e --arg t "$tid" 'map(.terminalId) == [$t]' <<<"$output"
	run --separate-stderr qsb-exec acp --session '../x' </dev/null
	[ "$status" -eq 125 ]
	assert_diag qsb-exec CONFIG_INVALID
}

@test "a session called terminal or acp still runs commands" {
	qsb-workspace create terminal >/dev/null
	qsb-workspace create acp >/dev/null
	run --separate-stderr qsb-exec terminal -- echo in-terminal
	assert_success
	jq -e '.stdout == "in-terminal\n"' <<<"$output"
	run --separate-stderr qsb-exec acp -- echo in-acp
	assert_success
	jq -e '.stdout == "in-acp\n"' <<<"$output"
}
