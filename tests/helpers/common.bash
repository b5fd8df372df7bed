# Shared set-up for the bats suites: the programs under test come first on
# PATH, and each test gets a fresh root of its own.
# shellcheck shell=bash
# shellcheck disable=SC2154  # status, output, stderr: set by bats run

bats_load_library bats-support
bats_load_library bats-assert

QSB_BIN=${QSB_BIN:-$BATS_TEST_DIRNAME/../bin}
PATH="$QSB_BIN:$PATH"
export PATH

# Sanitizer builds (make asan): any report is a crash, never exit 1.
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=223:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:exitcode=223:print_stacktrace=1}

common_setup() {
	export QSB_ROOT="$BATS_TEST_TMPDIR/root"
	unset XDG_STATE_HOME
}

# Fails the test if the last `run` crashed (a signal, a sanitizer report).
refute_crash() {
	if [ "$status" -gt 128 ] || [[ "${stderr:-}$output" == *Sanitizer* ]] ||
	    [[ "${stderr:-}$output" == *"runtime error"* ]]; then
		fail "crashed: status $status: ${stderr:-}$output"
	fi
}

# run_qsb PROGRAM ARGS...: run --separate-stderr and refuse crashes.
run_qsb() {
	run --separate-stderr "$@"
	refute_crash
}

# assert_diag PROGRAM CODE: stderr is exactly one diagnostic line.
assert_diag() {
	local prog=$1 code=$2
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ] ||
		fail "expected one line on stderr, got: $stderr"
	[[ "$stderr" == "$prog: $code: "* ]] ||
		fail "expected '$prog: $code: ...', got: $stderr"
}

# A listing of the whole state tree (names, types, sizes), to show that a
# failed command changed nothing.
state_snapshot() {
	if [ -d "$QSB_ROOT" ]; then
		(cd "$QSB_ROOT" && find . -printf '%p %y %s\n' | sort)
		cat "$QSB_ROOT/events.jsonl" 2>/dev/null
		find "$QSB_ROOT/ws" -name workspace.json -exec cat {} + 2>/dev/null
	fi
}

# assert_usage PROGRAM: a usage error: the diagnostic, then the synopsis
# and a hint.
assert_usage() {
	local prog=$1
	[[ "${stderr%%$'\n'*}" == "$prog: USAGE: "* ]] ||
		fail "expected '$prog: USAGE: ...', got: $stderr"
	[[ "$stderr" == *"Try '$prog --help'."* ]] ||
		fail "expected a hint, got: $stderr"
}

# fake_terminal SESSION TID: a terminal supervisor as qsb-exec runs one
# (meta/terminals/TID/lock held, pid written), sleeping; kill its pid to end
# it.
fake_terminal() {
	local d="$QSB_ROOT/ws/$1/meta/terminals/$2"
	mkdir -p "$d"
	( exec 9>"$d/lock"; flock 9; echo "$BASHPID" >"$d/pid.new";
	  mv "$d/pid.new" "$d/pid"; exec sleep 1000 ) 3>&- &
	local _
	for _ in $(seq 100); do
		[ -s "$d/pid" ] && ! flock -n "$d/lock" true && return 0
		sleep 0.05
	done
	fail "fake terminal did not start"
}
