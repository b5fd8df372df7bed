#!/usr/bin/env bats
# qsb-cleanup: retention modes, caps, safety of the deletion, and what is
# never deleted.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	common_setup
}

cl() { run_qsb qsb-cleanup "$@"; }

new() {
	qsb-workspace create "$@" >/dev/null || fail "create $* failed"
}

fs() { printf '%s/ws/%s/fs' "$QSB_ROOT" "$1"; }

# set_field SESSION JQ-ASSIGNMENT: edits the record as a crashed-free
# writer would (whole file replaced).
set_field() {
	local f="$QSB_ROOT/ws/$1/meta/workspace.json"
	jq -c "$2" "$f" >"$f.tmp" && mv "$f.tmp" "$f"
}

# accessed SESSION SECONDS-AGO
accessed() {
	local t
	t=$(date -u -d "@$(($(date +%s) - $2))" +%Y-%m-%dT%H:%M:%S.000Z)
	set_field "$1" ".lastAccessedAt = \"$t\""
}

deleted() { jq -r '.deleted | sort | join(" ")' <<<"$output"; }

exists() { [ -d "$QSB_ROOT/ws/$1" ]; }

# --- usage and bad input -----------------------------------------------------

@test "--help and --version" {
	cl --help
	assert_success
	assert_output --partial "usage: qsb-cleanup [--dry-run] [--all]"
	cl --version
	assert_success
	assert_output --regexp '^qsb-cleanup [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "bad input: exit code, one diagnostic, nothing deleted or logged" {
	new a --retention always
	local before
	before=$(state_snapshot)
	cl --bogus
	assert_failure 2
	assert_usage qsb-cleanup
	cl extra
	assert_failure 2
	assert_usage qsb-cleanup
	cl --session a --max-workspaces 1
	assert_failure 2
	assert_usage qsb-cleanup
	cl --max-size
	assert_failure 2
	cl --max-size 12q
	assert_failure 74
	assert_diag qsb-cleanup CONFIG_INVALID
	cl --max-size 0
	assert_failure 74
	cl --max-workspaces 0
	assert_failure 74
	assert_diag qsb-cleanup CONFIG_INVALID
	cl --max-workspaces -3
	assert_failure 74
	cl --max-workspaces 2x
	assert_failure 74
	cl --session ../a
	assert_failure 74
	assert_diag qsb-cleanup CONFIG_INVALID
	cl --session 'a b'
	assert_failure 74
	[ -z "$output" ]
	[ "$before" = "$(state_snapshot)" ]
}

@test "an invalid config.json is refused (74) and nothing is deleted" {
	new a --retention always
	echo '{"retention":{"maxWorkspaces":"x"}}' >"$QSB_ROOT/config.json"
	cl
	assert_failure 74
	assert_diag qsb-cleanup CONFIG_INVALID
	exists a
}

@test "--json-errors reports one JSON object" {
	cl --json-errors --max-size nope
	assert_failure 74
	jq -e '.error.code == "CONFIG_INVALID"' <<<"$stderr"
}

# --- retention modes ---------------------------------------------------------

@test "always: removed by the next cleanup; timeout and manual kept" {
	new eph --retention always
	new tmo --retention timeout --max-age 1h
	new man --retention manual
	cl
	assert_success
	jq -e '.deletedCount == 1 and .errors == [] and .dryRun == false' <<<"$output"
	[ "$(deleted)" = eph ]
	! exists eph
	exists tmo
	exists man
	# the record is gone from list and info too
	run qsb-workspace info eph
	assert_failure 66
}

@test "timeout: removed once lastAccessedAt is older than maxAge, not before" {
	new young --retention timeout --max-age 1h
	new old --retention timeout --max-age 1h
	accessed young 3000
	accessed old 3700
	cl
	assert_success
	[ "$(deleted)" = old ]
	exists young
	! exists old
}

@test "timeout: the default maxAge is 7 days" {
	new a
	new b
	accessed a $((6 * 86400))
	accessed b $((8 * 86400))
	cl
	assert_success
	[ "$(deleted)" = b ]
}

@test "manual: never removed by cleanup, not even by --all or the caps" {
	new m1 --retention manual
	new m2 --retention manual
	accessed m1 $((400 * 86400))
	cl --all --max-workspaces 1 --max-size 1k
	assert_success
	jq -e '.deletedCount == 0' <<<"$output"
	exists m1
	exists m2
	qsb-workspace destroy m1 >/dev/null
	! exists m1
}

@test "--all removes every non-manual workspace whatever its age" {
	new a
	new b --retention timeout --max-age 30d
	new m --retention manual
	cl --all
	assert_success
	[ "$(deleted)" = "a b" ]
	exists m
}

@test "--session considers only that workspace" {
	new a --retention always
	new b --retention always
	cl --session a
	assert_success
	[ "$(deleted)" = a ]
	exists b
	cl --session nosuch
	assert_success
	jq -e '.deletedCount == 0' <<<"$output"
}

@test "a workspace larger than its own maxSize is removed" {
	new big
	new small
	qsb-workspace retention big --max-size 1m >/dev/null
	qsb-workspace retention small --max-size 1m >/dev/null
	head -c 2097152 /dev/urandom >"$(fs big)/projects/blob"
	cl
	assert_success
	[ "$(deleted)" = big ]
}

# --- dry run and freedSpace --------------------------------------------------

@test "dry run: says what would go and how much, changes nothing, logs nothing" {
	new a --retention always
	head -c 3145728 /dev/urandom >"$(fs a)/projects/blob"
	local before
	before=$(state_snapshot)
	cl --dry-run
	assert_success
	jq -e '.dryRun == true and .deletedCount == 1 and .deleted == ["a"]' <<<"$output"
	jq -e '.freedSpace >= 3145728' <<<"$output"
	[ "$before" = "$(state_snapshot)" ]
	exists a
}

@test "freedSpace of a 3 MB file counts its allocated bytes" {
	new a --retention always
	head -c 3145728 /dev/urandom >"$(fs a)/projects/blob"
	sync
	local du_bytes
	du_bytes=$(( $(du -s -B1 "$QSB_ROOT/ws/a" | cut -f1) ))
	cl
	assert_success
	local freed
	freed=$(jq .freedSpace <<<"$output")
	[ "$freed" -ge 3145728 ] || fail "freedSpace $freed < 3 MiB"
	[ "$freed" -eq "$du_bytes" ] || fail "freedSpace $freed, du says $du_bytes"
}

@test "dry run counts like du -s: deep trees, wide directories, hard links once" {
	new a --retention always
	local p i
	p="$(fs a)/projects"
	for i in $(seq 200); do
		p="$p/d"
		mkdir "$p"
		[ $((i % 50)) -ne 0 ] || head -c 65536 /dev/urandom >"$p/f$i"
	done
	mkdir "$(fs a)/projects/wide"
	for i in $(seq 300); do mkdir "$(fs a)/projects/wide/$i"; echo "$i" >"$(fs a)/projects/wide/$i/x"; done
	head -c 131072 /dev/urandom >"$(fs a)/projects/orig"
	ln "$(fs a)/projects/orig" "$(fs a)/projects/link"
	sync
	cl --dry-run
	assert_success
	[ "$(jq .freedSpace <<<"$output")" -eq "$(du -s -B1 "$QSB_ROOT/ws/a" | cut -f1)" ]
}

@test "a sparse file counts what it occupies, not its length" {
	new a --retention always
	truncate -s 1G "$(fs a)/projects/sparse"
	cl
	assert_success
	jq -e '.freedSpace < 1048576' <<<"$output"
	! exists a
}

# --- safe deletion -----------------------------------------------------------

@test "symlinks pointing outside are removed; their targets survive" {
	new a --retention always
	local out=$BATS_TEST_TMPDIR/outside
	mkdir -p "$out/dir"
	echo keep >"$out/file"
	echo keep >"$out/dir/inner"
	ln -s "$out/file" "$(fs a)/projects/l-file"
	ln -s "$out/dir" "$(fs a)/projects/l-dir"
	ln -s "$out" "$(fs a)/l-root"
	ln -s / "$(fs a)/projects/slash"
	cl
	assert_success
	jq -e '.errors == [] and .deletedCount == 1' <<<"$output"
	! exists a
	[ "$(cat "$out/file")" = keep ]
	[ "$(cat "$out/dir/inner")" = keep ]
	[ -d /etc ] && [ -f /etc/passwd ]
}

@test "read-only trees inside are removed" {
	new a --retention always
	local d
	d="$(fs a)/projects/ro/deeper/still"
	mkdir -p "$d"
	echo x >"$d/f"
	chmod 0444 "$d/f"
	chmod 0555 "$d" "$(fs a)/projects/ro/deeper"
	chmod 0500 "$(fs a)/projects/ro"
	chmod 0000 "$(fs a)/projects/ro" 2>/dev/null || true
	cl
	assert_success
	jq -e '.errors == [] and .deletedCount == 1' <<<"$output"
	! exists a
}

@test "deep trees are removed (no recursion limit)" {
	new a --retention always
	local p i
	p="$(fs a)/projects"
	for i in $(seq 300); do p="$p/d"; done
	mkdir -p "$p"
	echo x >"$p/f"
	cl
	assert_success
	! exists a
}

@test "a mount inside a workspace is not crossed: its files survive" {
	new a --retention always
	local m
	m="$(fs a)/projects/mnt"
	mkdir -p "$m"
	# a mount namespace of its own (a user namespace too when not root),
	# so the host's mount table is never touched
	local ns=-m
	[ "$(id -u)" -eq 0 ] || ns=-rm
	run --separate-stderr unshare "$ns" sh -c '
		mount -t tmpfs tmpfs "$1" || exit 99
		echo keep >"$1/precious"
		qsb-cleanup >"$2/out"; echo "status $?" >>"$2/out"
		# moved to the trash, mount and all
		cat "$3"/trash/*/fs/projects/mnt/precious >>"$2/out" 2>&1' \
		sh "$m" "$BATS_TEST_TMPDIR" "$QSB_ROOT"
	[ "$status" -eq 0 ] || fail "unshare: $stderr"
	run cat "$BATS_TEST_TMPDIR/out"
	assert_line --index 1 "status 73"
	assert_line --index 2 "keep"
	head -n1 "$BATS_TEST_TMPDIR/out" | jq -e '.errors | length == 1'
	[[ "$(head -n1 "$BATS_TEST_TMPDIR/out" | jq -r '.errors[0]')" == *"file system"* ]]
	# the mount gone with its namespace, the next run finishes the delete
	cl
	assert_success
	jq -e '.errors == []' <<<"$output"
	[ -z "$(ls -A "$QSB_ROOT/trash")" ]
}

# --- caps --------------------------------------------------------------------

@test "--max-workspaces evicts the least recently accessed first" {
	local s
	for s in a b c d e; do new "$s"; done
	accessed a 500
	accessed b 100
	accessed c 400
	accessed d 200
	accessed e 300
	cl --max-workspaces 2
	assert_success
	[ "$(deleted)" = "a c e" ]
	exists b
	exists d
}

@test "--max-size evicts the least recently accessed until the rest fit" {
	local s
	for s in a b c; do
		new "$s"
		head -c 1048576 /dev/urandom >"$(fs "$s")/projects/blob"
	done
	accessed a 300
	accessed b 100
	accessed c 200
	cl --max-size 2600k
	assert_success
	[ "$(deleted)" = a ]
	cl --max-size 1500k
	assert_success
	[ "$(deleted)" = c ]
	exists b
}

@test "the caps come from config.json's retention when no flag is given" {
	local s
	for s in a b c; do new "$s"; done
	accessed a 30
	accessed b 10
	accessed c 20
	echo '{"retention":{"maxWorkspaces":1}}' >"$QSB_ROOT/config.json"
	cl
	assert_success
	[ "$(deleted)" = "a c" ]
}

@test "manual workspaces count toward the cap but are never evicted" {
	new m --retention manual
	new a
	new b
	accessed m 900
	accessed a 100
	accessed b 50
	cl --max-workspaces 2
	assert_success
	[ "$(deleted)" = a ]
	exists m
	exists b
}

# --- never deleted -----------------------------------------------------------

@test "preserveOnError keeps a workspace whose last command failed" {
	new failed --retention always --preserve-on-error
	new fine --retention always --preserve-on-error
	new plain --retention always
	set_field failed '.lastExitCode = 2'
	set_field fine '.lastExitCode = 0'
	set_field plain '.lastExitCode = 2'
	cl --all --max-workspaces 1
	assert_success
	[ "$(deleted)" = "fine plain" ]
	exists failed
	# once it succeeds again it is fair game
	set_field failed '.lastExitCode = 0'
	cl
	assert_success
	[ "$(deleted)" = failed ]
}

@test "a running terminal protects its workspace" {
	new t --retention always
	fake_terminal t t1
	local pid
	pid=$(cat "$QSB_ROOT/ws/t/meta/terminals/t1/pid")
	cl --all --max-workspaces 1
	assert_success
	jq -e '.deletedCount == 0' <<<"$output"
	exists t
	kill -0 "$pid"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	cl
	assert_success
	[ "$(deleted)" = t ]
}

@test "a stale terminal pid file alone does not protect" {
	new t --retention always
	mkdir -p "$QSB_ROOT/ws/t/meta/terminals/t1"
	echo $$ >"$QSB_ROOT/ws/t/meta/terminals/t1/pid"
	: >"$QSB_ROOT/ws/t/meta/terminals/t1/lock"
	cl
	assert_success
	[ "$(deleted)" = t ]
}

@test "a running qsb-exec protects its workspace; the record survives it" {
	new x --retention always
	qsb-perm policy set "$BATS_TEST_DIRNAME/../policies/permissive.json" >/dev/null
	qsb-exec x -- sh -c 'echo started >"$TMPDIR/flag"; sleep 3' >/dev/null &
	local pid=$! i
	for i in $(seq 100); do
		[ -e "$(fs x)/tmp/flag" ] && break
		sleep 0.05
	done
	[ -e "$(fs x)/tmp/flag" ] || { kill "$pid"; fail "the command did not start"; }
	cl --all
	assert_success
	jq -e '.deletedCount == 0' <<<"$output"
	exists x
	wait "$pid"
	cl --all
	assert_success
	[ "$(deleted)" = x ]
}

# --- crash recovery ----------------------------------------------------------

@test "an interrupted destroy left in the trash is finished" {
	new a
	head -c 1048576 /dev/urandom >"$(fs a)/projects/blob"
	chmod 0555 "$(fs a)/projects"
	# what destroy does first, then a kill -9
	mv "$QSB_ROOT/ws/a" "$QSB_ROOT/trash/a.interrupted"
	cl
	assert_success
	jq -e '.freedSpace >= 1048576 and .deletedCount == 0' <<<"$output"
	[ -z "$(ls -A "$QSB_ROOT/trash")" ]
}

@test "destroy killed at random moments: cleanup finishes every leftover" {
	local i
	for i in $(seq 15); do
		new "k$i"
		head -c 262144 /dev/urandom >"$(fs "k$i")/projects/blob"
		qsb-workspace destroy "k$i" >/dev/null 2>&1 &
		local pid=$!
		sleep "0.00$((RANDOM % 9))"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cl --all
	assert_success
	[ -z "$(ls -A "$QSB_ROOT/trash")" ]
	[ -z "$(ls -A "$QSB_ROOT/ws")" ]
	run qsb-workspace list
	assert_success
	[ "$output" = "[]" ]
}

@test "an abandoned create (.new.*) is removed; one still being built is not" {
	mkdir -p "$QSB_ROOT/ws/.new.a.dead/meta" "$QSB_ROOT/ws/.new.b.live/meta"
	: >"$QSB_ROOT/ws/.new.a.dead/meta/lock"
	: >"$QSB_ROOT/ws/.new.b.live/meta/lock"
	chmod 700 "$QSB_ROOT"
	( exec 9>"$QSB_ROOT/ws/.new.b.live/meta/lock"; flock 9; exec sleep 1000 ) &
	local pid=$! i
	for i in $(seq 100); do
		! flock -n "$QSB_ROOT/ws/.new.b.live/meta/lock" true && break
		sleep 0.05
	done
	cl
	assert_success
	[ ! -e "$QSB_ROOT/ws/.new.a.dead" ]
	[ -d "$QSB_ROOT/ws/.new.b.live" ]
	kill "$pid"
}

# --- events ------------------------------------------------------------------

@test "cleanup:start and cleanup:complete are logged with the result" {
	new a --retention always
	cl
	assert_success
	run qsb-status events
	assert_success
	echo "$output" | jq -e -s '
		map(.event) | index("cleanup:start") < index("workspace:destroyed") and
		index("workspace:destroyed") < index("cleanup:complete")'
	echo "$output" | jq -e -s '
		map(select(.event == "cleanup:complete"))[0].data.result.deleted == ["a"]'
}

@test "two cleanups at once: each workspace is deleted exactly once" {
	local s
	for s in $(seq 20); do new "w$s" --retention always; done
	qsb-cleanup >"$BATS_TEST_TMPDIR/1" &
	qsb-cleanup >"$BATS_TEST_TMPDIR/2" &
	wait
	local total
	total=$(jq -s 'map(.deletedCount) | add' "$BATS_TEST_TMPDIR/1" "$BATS_TEST_TMPDIR/2")
	[ "$total" -eq 20 ]
	jq -e -s 'map(.errors) | add == []' "$BATS_TEST_TMPDIR/1" "$BATS_TEST_TMPDIR/2"
}
