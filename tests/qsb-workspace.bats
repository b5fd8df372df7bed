#!/usr/bin/env bats
# qsb-workspace: every subcommand, exit code and bad input of the
# foundation issue.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	common_setup
}

ws() { run_qsb qsb-workspace "$@"; }

new() {
	qsb-workspace create "$@" >/dev/null || fail "create $* failed"
}

fs() { printf '%s/ws/%s/fs' "$QSB_ROOT" "$1"; }

# --- usage -----------------------------------------------------------------

@test "--help prints the synopsis on stdout and exits 0" {
	ws --help
	assert_success
	assert_output --partial "usage: qsb-workspace [--root DIR]"
	assert_output --partial "qsb-workspace create SESSION"
	[ -z "$stderr" ]
	ws create --help
	assert_success
	assert_output --partial "usage: qsb-workspace"
}

@test "--version prints the program and version" {
	ws --version
	assert_success
	assert_output --regexp '^qsb-workspace [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "usage errors exit 2 with USAGE, the synopsis and a hint" {
	ws
	assert_failure 2
	[[ "$stderr" == "qsb-workspace: USAGE: missing COMMAND"* ]]
	[[ "$stderr" == *"Try 'qsb-workspace --help'."* ]]
	[ -z "$output" ]
	ws frobnicate
	assert_failure 2
	[[ "$stderr" == *"USAGE: unknown command 'frobnicate'"* ]]
	ws create
	assert_failure 2
	[[ "$stderr" == *"USAGE: create: missing SESSION"* ]]
	ws create s1 extra
	assert_failure 2
	[[ "$stderr" == *"unexpected operand 'extra'"* ]]
	ws create s1 --bogus
	assert_failure 2
	[[ "$stderr" == *"unknown option '--bogus'"* ]]
	ws create s1 --mode
	assert_failure 2
	[[ "$stderr" == *"option '--mode' needs a value"* ]]
	ws read s1
	assert_failure 2
	[[ "$stderr" == *"read: missing PATH"* ]]
	ws list extra
	assert_failure 2
	ws destroy s1 --mkdir
	assert_failure 2
	ws create s1 --retention manual --max-age 1h
	assert_failure 2
	[ ! -e "$QSB_ROOT/ws/s1" ]
}

# --- create ----------------------------------------------------------------

@test "create prints the Workspace and builds the tree" {
	ws create s1
	assert_success
	[ -z "$stderr" ]
	local root
	root=$(cd "$QSB_ROOT" && pwd -P)
	echo "$output" | jq -e --arg r "$root" '
		.id == "s1" and
		.rootPath == "\($r)/ws/s1/fs" and
		.projectsPath == "\($r)/ws/s1/fs/projects" and
		.nodeModulesPath == "\($r)/ws/s1/fs/node_modules" and
		.pythonEnvPath == "\($r)/ws/s1/fs/pyenv" and
		.binPath == "\($r)/ws/s1/fs/bin" and
		.cachePath == "\($r)/ws/s1/fs/cache" and
		.homePath == "\($r)/ws/s1/fs/home" and
		.tmpPath == "\($r)/ws/s1/fs/tmp" and
		.sandboxConfig.type == "native" and
		.sandboxConfig.platform == "linux" and
		.sandboxConfig.enabled == true and
		.sandboxConfig.workspaceRoot == "\($r)/ws" and
		.sandboxConfig.networkEnabled == false and
		.sandboxConfig.mode == "compat" and
		.retentionPolicy == {"mode": "timeout", "maxAge": 604800000} and
		.lastExitCode == null and
		.createdAt == .lastAccessedAt and
		(.createdAt | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"))'
	for d in projects node_modules pyenv bin cache home tmp; do
		[ -d "$root/ws/s1/fs/$d" ] || fail "missing $d"
	done
	[ "$(stat -c %a "$QSB_ROOT")" = 700 ]
	[ "$(stat -c %a "$QSB_ROOT/ws/s1/meta")" = 700 ]
	jq -e . "$QSB_ROOT/ws/s1/meta/workspace.json" >/dev/null
}

@test "create as root hands the workspace tree to the sandbox user" {
	[ "$(id -u)" -eq 0 ] || skip "only root changes owners"
	new s1
	[ "$(stat -c %u:%g "$(fs s1)")" = 65534:65534 ]
	[ "$(stat -c %u:%g "$(fs s1)/projects")" = 65534:65534 ]
	[ "$(stat -c %u "$QSB_ROOT/ws/s1/meta")" = 0 ]
	echo hi | qsb-workspace write s1 projects/x >/dev/null
	[ "$(stat -c %u:%g "$(fs s1)/projects/x")" = 65534:65534 ]
}

@test "create with every flag records them" {
	ws create s1 --mode strict --backend bwrap --network --memory 512M \
	    --cpus 1.5 --disk 2048m --retention manual --preserve-on-error
	assert_success
	echo "$output" | jq -e '
		.sandboxConfig == {"type": "bwrap", "platform": "linux",
		    "enabled": true, "workspaceRoot": .sandboxConfig.workspaceRoot,
		    "memoryLimit": "512m", "cpuLimit": 1.5, "diskQuota": "2g",
		    "networkEnabled": true, "mode": "strict"} and
		.retentionPolicy == {"mode": "manual", "preserveOnError": true}'
	ws create s2 --max-age 2h --no-network --mode permissive
	assert_success
	echo "$output" | jq -e '.retentionPolicy == {"mode": "timeout",
	    "maxAge": 7200000} and .sandboxConfig.networkEnabled == false and
	    .sandboxConfig.mode == "permissive"'
	ws create s3 --retention always --backend auto
	assert_success
	echo "$output" | jq -e '.retentionPolicy == {"mode": "always"} and
	    .sandboxConfig.type == "native"'
	ws create s4 --mode permissive
	echo "$output" | jq -e '.sandboxConfig.networkEnabled == true'
}

@test "create twice fails with 67, empty stdout, record unchanged" {
	new s1 --mode strict
	local before
	before=$(state_snapshot)
	ws create s1 --mode compat
	assert_failure 67
	[ -z "$output" ]
	assert_diag qsb-workspace WORKSPACE_EXISTS
	[ "$(state_snapshot)" = "$before" ]
	qsb-workspace info s1 | jq -e '.sandboxConfig.mode == "strict"'
}

@test "invalid session ids are refused with 74 and nothing is created" {
	mkdir -p "$QSB_ROOT"
	qsb-workspace list >/dev/null
	local before long
	before=$(state_snapshot)
	long=$(printf 'a%.0s' $(seq 200))
	for id in '../x' '.x' 'a/b' '' "$long" 'a b' '-x' 'a$b' $'a\nb' 'é'; do
		ws create -- "$id"
		[ "$status" -eq 74 ] || fail "create '$id': status $status"
		[ -z "$output" ]
		assert_diag qsb-workspace CONFIG_INVALID
		for cmd in info destroy ls retention; do
			ws "$cmd" -- "$id"
			[ "$status" -eq 74 ] || fail "$cmd '$id': $status"
		done
		ws read -- "$id" x
		[ "$status" -eq 74 ] || fail "read '$id': status $status"
	done
	[ "$(state_snapshot)" = "$before" ]
	[ ! -e "$QSB_ROOT/x" ] && [ ! -e "$QSB_ROOT/ws/a" ]
	# the longest valid id is fine
	ws create "$(printf 'b%.0s' $(seq 128))"
	assert_success
}

@test "bad flag values are refused with 74 naming the flag, nothing created" {
	local before
	qsb-workspace list >/dev/null
	before=$(state_snapshot)
	while read -r flag val; do
		ws create s1 "$flag" "$val"
		[ "$status" -eq 74 ] || fail "$flag $val: status $status"
		[ -z "$output" ]
		assert_diag qsb-workspace CONFIG_INVALID
		[[ "$stderr" == *"$flag: invalid value"* ]] || fail "$stderr"
	done <<-EOF
	--mode bogus
	--mode STRICT
	--backend podman
	--memory 12x
	--memory 0
	--memory 1k
	--memory 1.5g
	--cpus 0
	--cpus abc
	--cpus -1
	--cpus 1e3
	--disk -1
	--disk 99999999999999999999
	--retention forever
	--max-age 0
	--max-age 5x
	--max-age -1s
	EOF
	[ "$(state_snapshot)" = "$before" ]
}

@test "config.json supplies defaults; flags override them" {
	mkdir -p "$QSB_ROOT"
	cat >"$QSB_ROOT/config.json" <<-'EOF'
	{"policy": {"mode": "strict", "backend": "bwrap"},
	 "sandbox": {"memoryLimit": "1g", "networkEnabled": true},
	 "retention": {"mode": "manual"}}
	EOF
	ws create s1
	assert_success
	echo "$output" | jq -e '.sandboxConfig.mode == "strict" and
	    .sandboxConfig.type == "bwrap" and
	    .sandboxConfig.memoryLimit == "1g" and
	    .sandboxConfig.networkEnabled == true and
	    .retentionPolicy == {"mode": "manual"}'
	ws create s2 --mode compat --backend native --no-network --memory 2g \
	    --retention timeout
	echo "$output" | jq -e '.sandboxConfig.mode == "compat" and
	    .sandboxConfig.type == "native" and
	    .sandboxConfig.memoryLimit == "2g" and
	    .sandboxConfig.networkEnabled == false and
	    .retentionPolicy == {"mode": "timeout", "maxAge": 604800000}'
}

@test "a malformed config.json is refused with 74 and nothing is created" {
	mkdir -p "$QSB_ROOT"
	for cfg in '{"policy": {"mode": "strict"},}' '{"bogus": 1}' \
	    '{"policy": {"mode": "lax"}}' '{"sandbox": {"memoryLimit": 5}}' \
	    '[]' '{"sandboxUid": 0}' '{"protectedPaths": [""]}' \
	    '{"policy":{"mode":"strict"},"policy":{"mode":"compat"}}'; do
		printf '%s' "$cfg" >"$QSB_ROOT/config.json"
		ws create s1
		[ "$status" -eq 74 ] || fail "$cfg: status $status"
		assert_diag qsb-workspace CONFIG_INVALID
		[[ "$stderr" == *config.json* ]]
		[ ! -e "$QSB_ROOT/ws/s1" ]
	done
}

# --- info, list --------------------------------------------------------------

@test "info prints the Workspace; a missing one is 66 with empty stdout" {
	local created
	created=$(qsb-workspace create s1)
	ws info s1
	assert_success
	[ "$(echo "$output" | jq -S .)" = "$(echo "$created" | jq -S .)" ]
	ws info nope
	assert_failure 66
	[ -z "$output" ]
	assert_diag qsb-workspace WORKSPACE_NOT_FOUND
}

@test "list prints an array sorted by id and ignores half-built ones" {
	ws list
	assert_success
	[ "$output" = "[]" ]
	new c
	new a
	new b
	mkdir -p "$QSB_ROOT/ws/.new.d.abc/meta"
	ws list
	assert_success
	[ "$(echo "$output" | jq -c 'map(.id)')" = '["a","b","c"]' ]
	echo "$output" | jq -e 'all(.[]; .rootPath and .sandboxConfig)'
}

@test "list reports an unreadable record but prints the others" {
	new a
	new b
	echo '{"id": "b", "trunc' >"$QSB_ROOT/ws/b/meta/workspace.json"
	ws list
	assert_failure 74
	[ "$(echo "$output" | jq -c 'map(.id)')" = '["a"]' ]
	assert_diag qsb-workspace CONFIG_INVALID
	[[ "$stderr" == *"workspace 'b'"* ]]
}

# --- destroy -----------------------------------------------------------------

@test "destroy removes the workspace and reports what it freed" {
	new s1
	head -c 300000 /dev/urandom >"$(fs s1)/projects/blob"
	ws destroy s1
	assert_success
	echo "$output" | jq -e '.success == true and .id == "s1" and
	    .freedSpace >= 300000 and .killedTerminals == 0'
	[ ! -e "$QSB_ROOT/ws/s1" ]
	[ -z "$(ls -A "$QSB_ROOT/trash")" ]
	ws info s1
	assert_failure 66
	ws destroy s1
	assert_failure 66
	assert_diag qsb-workspace WORKSPACE_NOT_FOUND
	[ -z "$output" ]
}

@test "destroy copes with read-only directories and never follows symlinks" {
	new s1
	local outside="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$outside/keep" "$(fs s1)/projects/ro/deep"
	echo precious >"$outside/keep/file"
	ln -s "$outside" "$(fs s1)/projects/link"
	ln -s "$outside/keep" "$(fs s1)/projects/ro/deep/link2"
	echo x >"$(fs s1)/projects/ro/deep/f"
	chmod 0500 "$(fs s1)/projects/ro/deep" "$(fs s1)/projects/ro"
	ws destroy s1
	assert_success
	[ ! -e "$QSB_ROOT/ws/s1" ]
	[ "$(cat "$outside/keep/file")" = precious ]
}

# Holds a terminal's lock the way a terminal supervisor does
# (meta/terminals/TID/lock, pid in meta/terminals/TID/pid).
@test "destroy refuses while a terminal runs; --force kills it" {
	new s1
	fake_terminal s1 t1
	local pid
	pid=$(cat "$QSB_ROOT/ws/s1/meta/terminals/t1/pid")
	ws destroy s1
	assert_failure 68
	assert_diag qsb-workspace PERMISSION_DENIED
	[[ "$stderr" == *"1 terminal is running"*"--force"* ]]
	[ -z "$output" ]
	[ -d "$QSB_ROOT/ws/s1" ]
	kill -0 "$pid"
	ws destroy s1 --force
	assert_success
	echo "$output" | jq -e '.killedTerminals == 1'
	! kill -0 "$pid" 2>/dev/null
	[ ! -e "$QSB_ROOT/ws/s1" ]
}

# --- read --------------------------------------------------------------------

@test "read copies the file to stdout, byte for byte" {
	new s1
	printf 'line1\nline2' >"$(fs s1)/projects/a.txt"
	ws read s1 projects/a.txt
	assert_success
	[ "$output" = $'line1\nline2' ]
	[ -z "$stderr" ]
	ws read s1 "$(fs s1)/projects/a.txt"
	assert_success
	[ "$output" = $'line1\nline2' ]
	ws read s1 projects/../projects/./a.txt
	assert_success
	mkdir "$(fs s1)/projects/sub"
	ln -s ../a.txt "$(fs s1)/projects/sub/rel"
	ws read s1 projects/sub/rel
	assert_success
	[ "$output" = $'line1\nline2' ]
}

@test "read refuses escapes with 68 and reads nothing outside" {
	new s1
	ln -s /etc/passwd "$(fs s1)/projects/pw"
	ln -s ../../../../../../../etc "$(fs s1)/projects/etc"
	ln -s "$QSB_ROOT/ws/s1/meta" "$(fs s1)/meta"
	for p in ../../etc/passwd /etc/passwd projects/pw projects/etc/passwd \
	    ../meta/workspace.json meta/workspace.json \
	    "$(fs s1)/../meta/workspace.json" /proc/self/root/etc/passwd \
	    projects/../../meta/workspace.json; do
		ws read s1 "$p"
		[ "$status" -eq 68 ] || fail "read $p: status $status"
		[ -z "$output" ]
		assert_diag qsb-workspace PERMISSION_DENIED
	done
}

@test "read: missing file 71, directory 71, FIFO 68 (without hanging)" {
	new s1
	ws read s1 projects/nope
	assert_failure 71
	assert_diag qsb-workspace FILE_NOT_FOUND
	ws read s1 projects
	assert_failure 71
	[[ "$stderr" == *"is a directory"* ]]
	mkfifo "$(fs s1)/projects/fifo"
	run --separate-stderr timeout 5 qsb-workspace read s1 projects/fifo
	assert_failure 68
	[[ "$stderr" == *"not a regular file"* ]]
	ws read nope x
	assert_failure 66
}

@test "read and write update lastAccessedAt" {
	new s1
	local t0 t1 t2
	t0=$(qsb-workspace info s1 | jq -r .lastAccessedAt)
	sleep 0.02
	echo x | qsb-workspace write s1 projects/x >/dev/null
	t1=$(qsb-workspace info s1 | jq -r .lastAccessedAt)
	[[ "$t1" > "$t0" ]]
	sleep 0.02
	qsb-workspace read s1 projects/x >/dev/null
	t2=$(qsb-workspace info s1 | jq -r .lastAccessedAt)
	[[ "$t2" > "$t1" ]]
	[ "$(qsb-workspace info s1 | jq -r .createdAt)" = "$t0" ]
}

# --- write -------------------------------------------------------------------

@test "write takes stdin and prints the FileInfo" {
	new s1
	run --separate-stderr bash -c 'printf hello | qsb-workspace write s1 projects/h.txt'
	assert_success
	echo "$output" | jq -e '.name == "h.txt" and .path == "projects/h.txt"
	    and .type == "file" and .size == 5 and (.mtime | endswith("Z"))'
	[ "$(cat "$(fs s1)/projects/h.txt")" = hello ]
	printf again | qsb-workspace write s1 "$(fs s1)/projects/h.txt" >/dev/null
	[ "$(cat "$(fs s1)/projects/h.txt")" = again ]
	# replacing keeps the mode
	chmod 0751 "$(fs s1)/projects/h.txt"
	printf 3 | qsb-workspace write s1 projects/h.txt >/dev/null
	[ "$(stat -c %a "$(fs s1)/projects/h.txt")" = 751 ]
	# no temporary files left behind
	[ -z "$(find "$(fs s1)" -name '.qsb-write*')" ]
}

@test "binary content with NUL bytes round-trips" {
	new s1
	local src="$BATS_TEST_TMPDIR/bin.dat" back="$BATS_TEST_TMPDIR/back.dat"
	{ printf 'a\0b\0\0\377\376'; head -c 200000 /dev/urandom; printf '\0'; } >"$src"
	qsb-workspace write s1 projects/bin.dat <"$src" >/dev/null
	qsb-workspace read s1 projects/bin.dat >"$back"
	cmp "$src" "$back"
	cmp "$src" "$(fs s1)/projects/bin.dat"
	: | qsb-workspace write s1 projects/empty >/dev/null
	[ -f "$(fs s1)/projects/empty" ] && [ ! -s "$(fs s1)/projects/empty" ]
}

@test "write needs --mkdir for missing parents" {
	new s1
	ws write s1 projects/a/b/c.txt </dev/null
	assert_failure 71
	assert_diag qsb-workspace FILE_NOT_FOUND
	[ ! -e "$(fs s1)/projects/a" ]
	run --separate-stderr bash -c 'echo deep | qsb-workspace write --mkdir s1 projects/a/b/c.txt'
	assert_success
	[ "$(cat "$(fs s1)/projects/a/b/c.txt")" = deep ]
}

@test "write through a symlinked directory pointing outside: 68, nothing written" {
	new s1
	local outside="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$outside"
	echo keep >"$outside/existing"
	ln -s "$outside" "$(fs s1)/projects/out"
	ln -s ../../../../.. "$(fs s1)/projects/up"
	ln -s "$outside/existing" "$(fs s1)/projects/file-link"
	ln -s "$outside/new" "$(fs s1)/projects/dangling-out"
	for p in projects/out/x projects/out/existing projects/up/x \
	    projects/file-link projects/dangling-out ../x ../meta/workspace.json \
	    /tmp/qsb-escape "$outside/x"; do
		run --separate-stderr bash -c "echo pwned | qsb-workspace write s1 '$p'"
		[ "$status" -eq 68 ] || fail "write $p: status $status"
		assert_diag qsb-workspace PERMISSION_DENIED
		[ -z "$output" ]
	done
	run --separate-stderr bash -c "echo pwned | qsb-workspace write --mkdir s1 projects/out/new/dir/f"
	assert_failure 68
	[ "$(ls -A "$outside")" = existing ]
	[ "$(cat "$outside/existing")" = keep ]
	[ ! -e /tmp/qsb-escape ]
	[ ! -e "$QSB_ROOT/ws/s1/x" ]
	[ -L "$(fs s1)/projects/file-link" ]
	jq -e '.id == "s1"' "$QSB_ROOT/ws/s1/meta/workspace.json"
}

@test "write through a symlink inside the workspace writes its target" {
	new s1
	echo old >"$(fs s1)/projects/target"
	ln -s target "$(fs s1)/projects/link"
	ln -s nowhere "$(fs s1)/projects/dangling"
	run --separate-stderr bash -c 'echo new | qsb-workspace write s1 projects/link'
	assert_success
	echo "$output" | jq -e '.path == "projects/target"'
	[ -L "$(fs s1)/projects/link" ]
	[ "$(cat "$(fs s1)/projects/target")" = new ]
	ws write s1 projects/dangling </dev/null
	assert_failure 71
	[[ "$stderr" == *"dangling symbolic link"* ]]
}

@test "write to a directory is 72; to a FIFO 68" {
	new s1
	ws write s1 projects </dev/null
	assert_failure 72
	assert_diag qsb-workspace FILE_WRITE_FAILED
	ws write s1 . </dev/null
	assert_failure 72
	mkfifo "$(fs s1)/projects/fifo"
	ws write s1 projects/fifo </dev/null
	assert_failure 68
	ws write nope projects/x </dev/null
	assert_failure 66
}

@test "write refuses with 72 once the disk quota is used up, and writes nothing" {
	new q --disk 1m
	head -c 300000 /dev/urandom | qsb-workspace write q projects/a >/dev/null
	head -c 2000000 /dev/urandom >"$(fs q)/projects/filler"
	run --separate-stderr bash -c 'echo more | qsb-workspace write q projects/b'
	assert_failure 72
	assert_diag qsb-workspace FILE_WRITE_FAILED
	[[ "$stderr" == *"disk quota is 1m"* ]]
	[ ! -e "$(fs q)/projects/b" ]
	rm "$(fs q)/projects/filler"
	echo more | qsb-workspace write q projects/b >/dev/null
}

# --- ls ----------------------------------------------------------------------

@test "ls lists FileInfo entries sorted by name" {
	new s1
	ws ls s1
	assert_success
	[ "$(echo "$output" | jq -c 'map(.name)')" = \
	    '["bin","cache","home","node_modules","projects","pyenv","tmp"]' ]
	echo "$output" | jq -e 'all(.[]; .type == "dir" and .path == .name)'
	printf 12345 >"$(fs s1)/projects/b.txt"
	mkdir "$(fs s1)/projects/a-dir"
	ln -s b.txt "$(fs s1)/projects/c-link"
	mkfifo "$(fs s1)/projects/d-fifo"
	ws ls s1 projects
	assert_success
	echo "$output" | jq -e '
		map(.name) == ["a-dir", "b.txt", "c-link", "d-fifo"] and
		map(.type) == ["dir", "file", "symlink", "other"] and
		.[1].size == 5 and .[1].path == "projects/b.txt" and
		all(.[]; .mtime | test("Z$"))'
	ws ls s1 projects/b.txt
	assert_success
	echo "$output" | jq -e 'length == 1 and .[0].name == "b.txt"'
	ws ls s1 projects/./a-dir/..
	assert_success
	echo "$output" | jq -e 'length == 4 and .[0].path == "projects/a-dir"'
}

@test "ls: missing 71, escapes 68" {
	new s1
	ws ls s1 nope
	assert_failure 71
	ln -s / "$(fs s1)/rootlink"
	for p in .. ../meta / rootlink "$QSB_ROOT"; do
		ws ls s1 "$p"
		[ "$status" -eq 68 ] || fail "ls $p: $status"
		[ -z "$output" ]
	done
}

# --- retention ---------------------------------------------------------------

@test "retention prints and changes the policy" {
	new s1 --retention manual
	ws retention s1
	assert_success
	[ "$output" = '{"mode":"manual"}' ]
	ws retention s1 --max-age 3d
	assert_success
	[ "$output" = '{"mode":"timeout","maxAge":259200000}' ]
	ws retention s1 --mode always --max-workspaces 5 --max-size 10g \
	    --preserve-on-error
	assert_success
	echo "$output" | jq -e '. == {"mode": "always", "maxAge": 259200000,
	    "maxWorkspaces": 5, "maxSize": "10g", "preserveOnError": true}'
	qsb-workspace info s1 | jq -e '.retentionPolicy.mode == "always"'
	ws retention s1 --no-preserve-on-error
	echo "$output" | jq -e '.preserveOnError == false'
}

@test "retention: bad values 74, conflicts 2, missing workspace 66; nothing changes" {
	new s1
	local before
	before=$(cat "$QSB_ROOT/ws/s1/meta/workspace.json")
	for args in "--mode forever" "--max-age 0" "--max-workspaces 0" \
	    "--max-workspaces x" "--max-size 1q"; do
		# shellcheck disable=SC2086
		ws retention s1 $args
		[ "$status" -eq 74 ] || fail "$args: $status"
		assert_diag qsb-workspace CONFIG_INVALID
	done
	ws retention s1 --mode manual --max-age 1d
	assert_failure 2
	ws retention nope --mode manual
	assert_failure 66
	[ "$(cat "$QSB_ROOT/ws/s1/meta/workspace.json")" = "$before" ]
}

# --- output conventions -------------------------------------------------------

@test "--json-errors reports one JSON object on stderr" {
	ws --json-errors info nope
	assert_failure 66
	[ -z "$output" ]
	echo "$stderr" | jq -e '.error.code == "WORKSPACE_NOT_FOUND" and
	    .error.sessionId == "nope" and (.error.message | length > 0)'
	ws create '../x' --json-errors
	assert_failure 74
	echo "$stderr" | jq -e '.error.code == "CONFIG_INVALID"'
	ws --json-errors list --bogus
	assert_failure 2
	echo "$stderr" | jq -e '.error.code == "USAGE" and .error.sessionId == null'
}

@test "--pretty indents; the default is one line" {
	new s1
	ws info s1
	[ "${#lines[@]}" -eq 1 ]
	ws info s1 --pretty
	[ "${#lines[@]}" -gt 10 ]
	[ "$(echo "$output" | jq -c .)" = "$(qsb-workspace info s1 | jq -c .)" ]
}

@test "a failed write to stdout is FILE_WRITE_FAILED" {
	[ -w /dev/full ] || skip "no /dev/full"
	new s1
	run --separate-stderr bash -c 'qsb-workspace info s1 >/dev/full'
	assert_failure 72
	assert_diag qsb-workspace FILE_WRITE_FAILED
}

# --- the root ------------------------------------------------------------------

@test "the root: --root, then QSB_ROOT, XDG_STATE_HOME, HOME" {
	local t=$BATS_TEST_TMPDIR
	qsb-workspace --root "$t/opt" create a >/dev/null
	[ -d "$t/opt/ws/a" ]
	qsb-workspace create b --root "$t/opt2" >/dev/null
	[ -d "$t/opt2/ws/b" ]
	QSB_ROOT=$t/env qsb-workspace create c >/dev/null
	[ -d "$t/env/ws/c" ]
	env -u QSB_ROOT XDG_STATE_HOME="$t/xdg" qsb-workspace create d >/dev/null
	[ -d "$t/xdg/qsb/ws/d" ]
	env -u QSB_ROOT -u XDG_STATE_HOME HOME="$t/home" qsb-workspace create e >/dev/null
	[ -d "$t/home/.local/state/qsb/ws/e" ]
	[ "$(stat -c %a "$t/home/.local/state/qsb")" = 700 ]
	run --separate-stderr env -u QSB_ROOT -u XDG_STATE_HOME -u HOME qsb-workspace list
	assert_failure 74
	[[ "$stderr" == *"HOME is not set"* ]]
	(cd "$t" && qsb-workspace --root rel create f >/dev/null)
	qsb-workspace --root "$t/rel" info f | jq -e --arg t "$(cd "$t" && pwd -P)" \
	    '.rootPath == "\($t)/rel/ws/f/fs"'
}

@test "a root others can write to is refused" {
	mkdir -p "$QSB_ROOT"
	chmod 0777 "$QSB_ROOT"
	ws list
	assert_failure 74
	assert_diag qsb-workspace CONFIG_INVALID
	[[ "$stderr" == *"not writable by group or others"* ]]
	chmod 0700 "$QSB_ROOT"
	ln -s "$QSB_ROOT" "$BATS_TEST_TMPDIR/link"
	qsb-workspace --root "$BATS_TEST_TMPDIR/link" create s1 |
	    jq -e --arg r "$(cd "$QSB_ROOT" && pwd -P)" '.rootPath == "\($r)/ws/s1/fs"'
}

# --- concurrency and crashes ------------------------------------------------------

@test "20 parallel creates all land" {
	qsb-workspace list >/dev/null
	local i pids=()
	for i in $(seq 20); do
		qsb-workspace create "p$i" >/dev/null &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	[ "$(qsb-workspace list | jq length)" -eq 20 ]
	[ "$(grep -c workspace:created "$QSB_ROOT/events.jsonl")" -eq 20 ]
	[ -z "$(ls -A "$QSB_ROOT/ws" | grep '^\.')" ]
}

@test "10 parallel creates of one id give exactly one success" {
	qsb-workspace list >/dev/null
	local i d=$BATS_TEST_TMPDIR/st pids=()
	mkdir "$d"
	for i in $(seq 10); do
		( rc=0; qsb-workspace create same --mode strict >"$d/out$i" \
		    2>"$d/err$i" || rc=$?; echo "$rc" >"$d/rc$i" ) &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	[ "$(cat "$d"/rc* | wc -l)" -eq 10 ]
	[ "$(cat "$d"/rc* | grep -c '^0$')" -eq 1 ]
	[ "$(cat "$d"/rc* | grep -c "^67$")" -eq 9 ] || fail "$(head "$d"/rc* "$d"/err*)"
	[ "$(cat "$d"/out* | jq -s length)" -eq 1 ]
	[ "$(qsb-workspace list | jq length)" -eq 1 ]
	[ -z "$(ls -A "$QSB_ROOT/ws" | grep '^\.')" ]
}

@test "kill -9 of create/destroy at random moments never leaves an unreadable record" {
	qsb-workspace list >/dev/null
	local i pid id
	for i in $(seq 30); do
		id="k$((i % 4))"
		if (( RANDOM % 2 )); then
			qsb-workspace create "$id" >/dev/null 2>&1 &
		else
			qsb-workspace destroy "$id" >/dev/null 2>&1 &
		fi
		pid=$!
		sleep "0.00$((RANDOM % 10))"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		run --separate-stderr qsb-workspace list
		[ "$status" -eq 0 ] || fail "round $i: list: $status $stderr"
		for id in $(echo "$output" | jq -r '.[].id'); do
			qsb-workspace info "$id" >/dev/null ||
				fail "round $i: info $id"
			jq -e . "$QSB_ROOT/ws/$id/meta/workspace.json" >/dev/null
		done
	done
	while read -r line; do
		echo "$line" | jq -e . >/dev/null || fail "bad event line: $line"
	done <"$QSB_ROOT/events.jsonl"
}

# --- events ----------------------------------------------------------------------

@test "every line of events.jsonl parses and names its event" {
	new s1
	echo x | qsb-workspace write s1 projects/x >/dev/null
	qsb-workspace read s1 projects/x >/dev/null
	qsb-workspace destroy s1 >/dev/null
	run jq -r -s 'map(.event) | join(" ")' "$QSB_ROOT/events.jsonl"
	[ "$output" = "workspace:created workspace:accessed workspace:accessed workspace:destroyed" ]
	jq -e -s 'all(.[]; .sessionId == "s1" and
	    (.time | test("^[0-9-]{10}T[0-9:]{8}\\.[0-9]{3}Z$")) and .data != null)' \
	    "$QSB_ROOT/events.jsonl"
	jq -e -s '.[0].data.workspace.id == "s1" and
	    .[3].data.workspaceId == "s1" and .[1].data.timestamp' \
	    "$QSB_ROOT/events.jsonl"
}

@test "a torn last line in the event log does not spoil the next event" {
	new s1
	printf '{"event":"workspace:crea' >>"$QSB_ROOT/events.jsonl"
	new s2
	tail -n 1 "$QSB_ROOT/events.jsonl" | jq -e '.event == "workspace:created" and .sessionId == "s2"'
	[ "$(wc -l <"$QSB_ROOT/events.jsonl")" -eq 3 ]
}
