#!/usr/bin/env bats
# native where user namespaces are unavailable: qsb-exec runs inside
# bubblewrap with --disable-userns (as containers forbid them), so it must
# confine with Landlock and seccomp alone, say so, and still refuse the
# escapes those can stop.  Needs a non-root user (tests/run runs this file
# in its unprivileged pass) and bubblewrap.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers/common
	export QSB_ROOT="$BATS_FILE_TMPDIR/root"
	if [ "$(id -u)" -eq 0 ] || ! command -v bwrap >/dev/null; then
		return 0
	fi
	qsb-workspace create d-compat --mode compat >/dev/null
	qsb-workspace create d-strict --mode strict >/dev/null
	qsb-workspace create other >/dev/null
	echo "other workspace secret" | qsb-workspace write other projects/p >/dev/null
}

setup() {
	load helpers/common
	load helpers/sandbox
	export QSB_ROOT="$BATS_FILE_TMPDIR/root"
	[ "$(id -u)" -ne 0 ] || skip "root never lacks namespaces; tests/run runs this file as an unprivileged user"
	command -v bwrap >/dev/null || skip "needs bubblewrap to take user namespaces away"
	BGPIDS=""
}

teardown() {
	[ -z "$BGPIDS" ] || kill $BGPIDS 2>/dev/null || true
}

# dx WORKSPACE SHELL-COMMAND, in a world without user namespaces
dx() {
	local ws=$1
	shift
	run --separate-stderr bwrap --unshare-user --disable-userns --dev-bind / / -- \
	    qsb-exec "$ws" -- sh -c "$*"
	[ "$status" -ne 125 ] || fail "qsb-exec failed: $stderr"
	out=$(jq -r .stdout <<<"$output")
	err=$(jq -r .stderr <<<"$output")
}

@test "degraded: says so, with the reason" {
	dx d-compat "unshare -U true 2>&1; echo ran"
	jq -e '.degraded == true and .backend == "native" and
	    (.reason | contains("user namespaces are unavailable")) and
	    (.reason | contains("Landlock and seccomp"))' <<<"$output"
	[[ "$out" == *ran* ]]
}

@test "degraded: writes outside the workspace refused; the host unchanged" {
	local m="qsb-deg-$$-$RANDOM" home
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	for ws in d-compat d-strict; do
		dx "$ws" "echo x > /tmp/$m; echo x > /var/tmp/$m; echo x > '$home/$m'; ln -s /tmp l; echo x > l/$m; echo ok > inside"
		[ ! -e "/tmp/$m" ] && [ ! -e "/var/tmp/$m" ] && [ ! -e "$home/$m" ] ||
			fail "$ws: written outside"
		[ "$(cat "$QSB_ROOT/ws/$ws/fs/projects/inside")" = ok ]
	done
}

@test "degraded: meta, the root and other workspaces unreadable" {
	for ws in d-compat d-strict; do
		dx "$ws" "cat '$QSB_ROOT/ws/$ws/meta/workspace.json'; cat '$QSB_ROOT/ws/other/fs/projects/p'; ls '$QSB_ROOT/ws'; cat '$QSB_ROOT/events.jsonl'"
		[[ "$out" != *rootPath* && "$out" != *"other workspace secret"* &&
		    "$out" != *workspace:created* && "$out" != *other* ]] ||
			fail "$ws: $out"
	done
}

@test "degraded: strict reads only the system directories" {
	local home
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	echo "host file" >"$home/qsb-deg-visible-$$"
	dx d-strict "cat '$home/qsb-deg-visible-$$'; ls /var; cat /etc/hostname >/dev/null && echo etc-ok"
	[[ "$out" != *"host file"* ]] || fail "home readable in strict"
	[[ "$out" == *etc-ok* ]]
	rm -f "$home/qsb-deg-visible-$$"
}

@test "degraded: no TCP with network off; the host listener sees nothing" {
	start_listener
	dx d-compat "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $PORT), timeout=3); print(\"connected\")'"
	[[ "$out" != *connected* ]]
	[ ! -s "$LOG" ]
}

@test "degraded: no capabilities, no_new_privs, seccomp; mount and ptrace refused" {
	dx d-compat "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status;
	    python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(\"mount\", l.mount(b\"none\", b\"/mnt\", b\"tmpfs\", 0, None), ctypes.get_errno())';
	    sleep 30 & python3 -c 'import ctypes, sys; l=ctypes.CDLL(None, use_errno=True); print(\"ptrace\", l.ptrace(16, int(sys.argv[1]), 0, 0), ctypes.get_errno())' \$!; kill \$!"
	[[ "$out" == *"CapEff:"$'\t'"0000000000000000"* ]]
	[[ "$out" == *"NoNewPrivs:"$'\t'"1"* && "$out" == *"Seccomp:"$'\t'"2"* ]]
	[[ "$out" == *"mount -1 1"* && "$out" == *"ptrace -1 1"* ]] || fail "$out"
}

@test "degraded: signals to host processes refused (Landlock scope)" {
	sleep 300 >/dev/null 2>&1 3>&- &
	BGPIDS=$!
	dx d-compat "kill -TERM $BGPIDS; echo \$?"
	kill -0 "$BGPIDS" || fail "the host process was killed from inside"
}

@test "degraded: a timeout still ends the whole tree" {
	local m="qsb-deg-$$-$RANDOM"
	run --separate-stderr bwrap --unshare-user --disable-userns --dev-bind / / -- \
	    qsb-exec -t 400ms d-compat -- bash -c "(setsid bash -c 'exec -a $m-a sleep 300' &); (bash -c 'exec -a $m-b sleep 300 &' &); exec -a $m-c sleep 300"
	[ "$status" -eq 124 ]
	sleep 0.3
	! pgrep -f "^$m" || fail "left running"
}
