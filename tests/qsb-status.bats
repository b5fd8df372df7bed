#!/usr/bin/env bats
# qsb-status: the SandboxStatus and its probes, --check, the event log and
# its --follow, the SandboxPolicy, availability events.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	common_setup
}

st() { run_qsb qsb-status "$@"; }

new() {
	qsb-workspace create "$@" >/dev/null || fail "create $* failed"
}

# A bubblewrap that is absent: QSB_BWRAP names the program qsb uses.
no_bwrap() { export QSB_BWRAP=/nonexistent/bwrap; }

# --- usage and bad input -----------------------------------------------------

@test "--help and --version" {
	st --help
	assert_success
	assert_output --partial "usage: qsb-status [--capabilities]"
	assert_output --partial "qsb-status events"
	st --version
	assert_success
	assert_output --regexp '^qsb-status [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "bad input: exit code, one diagnostic, no change to any state" {
	st policy >/dev/null	# the root exists
	local before
	before=$(state_snapshot)
	st --bogus
	assert_failure 2
	assert_usage qsb-status
	st nosuchcommand
	assert_failure 2
	assert_usage qsb-status
	st --backend bwrap
	assert_failure 2
	assert_usage qsb-status
	st --check --capabilities
	assert_failure 2
	st --check events
	assert_failure 2
	st --check --backend podman
	assert_failure 74
	assert_diag qsb-status CONFIG_INVALID
	st events --since yesterday-ish
	assert_failure 74
	assert_diag qsb-status CONFIG_INVALID
	st events --session ../x
	assert_failure 74
	st events extra
	assert_failure 2
	st events --follow --bogus
	assert_failure 2
	st policy --enabled maybe
	assert_failure 74
	assert_diag qsb-status CONFIG_INVALID
	st policy --mode lax
	assert_failure 74
	st policy --backend podman
	assert_failure 74
	st policy --auto-fallback always
	assert_failure 74
	st policy frobnicate
	assert_failure 2
	st policy show extra
	assert_failure 2
	st policy set
	assert_failure 2
	st policy set a b
	assert_failure 2
	st policy set - --mode strict </dev/null
	assert_failure 2
	st policy set /nonexistent/policy.json
	assert_failure 71
	assert_diag qsb-status FILE_NOT_FOUND
	run_qsb qsb-status policy set - <<<'{"mode":"lax"}'
	assert_failure 74
	assert_diag qsb-status CONFIG_INVALID
	run_qsb qsb-status policy set - <<<'{"mode":"strict","extra":1}'
	assert_failure 74
	run_qsb qsb-status policy set - <<<'{"enabled":"yes"}'
	assert_failure 74
	run_qsb qsb-status policy set - <<<'[]'
	assert_failure 74
	run_qsb qsb-status policy set - <<<'{"mode":"strict",}'
	assert_failure 74
	[ "$before" = "$(state_snapshot)" ]
}

@test "an invalid config.json is refused (74) by every command" {
	mkdir -m 700 -p "$QSB_ROOT"
	echo '{"policy":{"backend":"podman"}}' >"$QSB_ROOT/config.json"
	st
	assert_failure 74
	assert_diag qsb-status CONFIG_INVALID
	st --check
	assert_failure 74
	st policy --mode strict
	assert_failure 74
	[ "$(cat "$QSB_ROOT/config.json")" = '{"policy":{"backend":"podman"}}' ]
}

# --- the status --------------------------------------------------------------

@test "status: every SandboxStatus field, with the right type" {
	st
	assert_success
	jq -e '
		(.available | type == "boolean") and
		(.type | IN("native", "bwrap", "none")) and
		.backend == "auto" and .platform == "linux" and
		(.activeWorkspaces | type == "number") and
		(.runningWorkspaces | type == "number") and
		(.degraded | type == "boolean") and
		(.reason == null or (.reason | type == "string")) and
		.enabled == true and .mode == "compat" and
		(.totalMemory | type == "number") and
		(.diskUsage | type == "number") and
		(has("capabilities") | not)' <<<"$output"
}

@test "status: totalMemory is the machine's, diskUsage the root's" {
	new a
	head -c 2097152 /dev/urandom >"$QSB_ROOT/ws/a/fs/projects/blob"
	sync
	st
	assert_success
	local mem du_bytes
	mem=$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024 ))
	[ "$(jq .totalMemory <<<"$output")" -eq "$mem" ]
	du_bytes=$(du -s -B1 "$QSB_ROOT" | cut -f1)
	local got
	got=$(jq .diskUsage <<<"$output")
	[ "$got" -ge 2097152 ] || fail "diskUsage $got"
	# du and qsb count the same blocks; the event log may grow between
	[ $((got - du_bytes)) -le 8192 ] && [ $((du_bytes - got)) -le 8192 ] ||
		fail "diskUsage $got, du says $du_bytes"
}

@test "status: activeWorkspaces and runningWorkspaces count what is there" {
	st
	jq -e '.activeWorkspaces == 0 and .runningWorkspaces == 0' <<<"$output"
	new a
	new b
	new c
	# neither a half-built workspace nor the trash counts
	mkdir -p "$QSB_ROOT/ws/.new.d.x" "$QSB_ROOT/trash/e.x"
	fake_terminal b t1
	st
	assert_success
	jq -e '.activeWorkspaces == 3 and .runningWorkspaces == 1' <<<"$output"
	# an exec holds meta/active shared
	flock -s "$QSB_ROOT/ws/c/meta/active" sleep 2 &
	sleep 0.3
	st
	jq -e '.runningWorkspaces == 2' <<<"$output"
	wait $!
	qsb-workspace destroy a >/dev/null
	st
	jq -e '.activeWorkspaces == 2 and .runningWorkspaces == 1' <<<"$output"
	kill "$(cat "$QSB_ROOT/ws/b/meta/terminals/t1/pid")"
}

@test "status: the probe agrees with the kernel (Landlock, user namespaces, seccomp)" {
	st --capabilities
	assert_success
	local abi
	abi=$(python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
r = libc.syscall(444, None, 0, 1)
print(r if r > 0 else 0)')
	[ "$(jq .capabilities.kernel.landlock.abi <<<"$output")" -eq "$abi" ]
	local userns=false
	unshare -U true 2>/dev/null && userns=true
	[ "$(jq .capabilities.kernel.userNamespaces.available <<<"$output")" = "$userns" ]
	local seccomp=false
	grep -q '^Seccomp:' /proc/self/status && seccomp=true
	[ "$(jq .capabilities.kernel.seccomp.available <<<"$output")" = "$seccomp" ]
	jq -e '.capabilities.kernel.seccomp.denied | index("ptrace") != null' <<<"$output"
	local max
	max=$(cat /proc/sys/user/max_user_namespaces)
	[ "$(jq .capabilities.kernel.userNamespaces.maxUserNamespaces <<<"$output")" -eq "$max" ]
}

@test "status: the cgroup probe agrees with /proc/self/cgroup and the mounts" {
	st --capabilities
	assert_success
	local v1=false v2=false want
	grep -q ' - cgroup2 ' /proc/self/mountinfo && v2=true
	grep -q ' - cgroup ' /proc/self/mountinfo && v1=true
	case $v1$v2 in
	truetrue) want=hybrid ;; falsetrue) want=v2 ;; truefalse) want=v1 ;; *) want=none ;;
	esac
	[ "$(jq -r .capabilities.kernel.cgroup.version <<<"$output")" = "$want" ]
	if $v2; then
		local mnt ctl
		mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
		ctl=$(cat "$mnt$(sed -n 's/^0:://p' /proc/self/cgroup)/cgroup.controllers" 2>/dev/null || true)
		[ "$(jq -r .capabilities.kernel.cgroup.v2Controllers <<<"$output")" = "$ctl" ]
	fi
	jq -e '.capabilities.kernel.cgroup.usable | keys == ["cpu", "memory", "pids"]' <<<"$output"
	jq -e '.capabilities.kernel.cgroup |
		(.usable.memory == null) == (.memoryFallback == "rlimit-as")' <<<"$output"
}

@test "status --capabilities: each backend, present, version, path, usable, why not" {
	st --capabilities
	assert_success
	jq -e '.capabilities.backends | keys == ["bwrap", "docker", "firejail", "native", "none"]' <<<"$output"
	jq -e '.capabilities.backends[] | has("present") and has("usable") and
		has("degraded") and has("path") and has("version") and has("reason")' <<<"$output"
	jq -e '.capabilities.backends.native.present == true' <<<"$output"
	jq -e '.capabilities.backends.none | .usable == true and (.reason | test("insecure"))' <<<"$output"
	jq -e '.capabilities.backends.firejail.usable == false' <<<"$output"
	jq -e '.capabilities.backends.docker | .usable == false and (.reason | test("not built"))' <<<"$output"
	jq -e '.capabilities.protectedPaths | index("**/.git/hooks") != null' <<<"$output"
	if command -v bwrap >/dev/null; then
		local want
		want=$(bwrap --version)
		jq -e --arg v "$want" --arg p "$(command -v bwrap)" \
			'.capabilities.backends.bwrap | .present and .version == $v and .path == $p' <<<"$output"
	fi
	if command -v firejail >/dev/null; then
		jq -e '.capabilities.backends.firejail.present == true' <<<"$output"
	else
		jq -e '.capabilities.backends.firejail | .present == false and .path == null and
			(.reason | test("not installed"))' <<<"$output"
	fi
}

@test "status --capabilities: an absent bubblewrap is reported with the reason" {
	no_bwrap
	st --capabilities
	assert_success
	jq -e '.capabilities.backends.bwrap | .present == false and .usable == false and
		.version == null and (.reason | test("not installed"))' <<<"$output"
}

@test "a policy that names an absent backend: not available, and why" {
	no_bwrap
	qsb-status policy --backend bwrap >/dev/null
	st
	assert_success
	jq -e '.available == false and .type == "bwrap" and .backend == "bwrap" and
		(.reason | test("not installed"))' <<<"$output"
	# with a fallback allowed, as qsb-exec would: available, degraded
	qsb-status policy --auto-fallback session >/dev/null
	st
	jq -e '.available == true and .degraded == true and .type != "bwrap" and
		(.reason | test("falls back"))' <<<"$output"
}

@test "a policy that disables sandboxing: not available" {
	qsb-status policy --enabled false >/dev/null
	st
	assert_success
	jq -e '.available == false and .enabled == false and
		(.reason | test("disabled"))' <<<"$output"
	run qsb-status --check
	assert_failure 65
}

# --- --check -----------------------------------------------------------------

@test "--check: silent, 0 when the backend is usable" {
	st --check
	assert_success
	[ -z "$output" ] && [ -z "$stderr" ]
	st --check --backend none
	assert_success
	st --check --backend native
	assert_success
	[ -z "$output" ]
}

@test "--check --backend of an absent backend: 65, silent" {
	no_bwrap
	st --check --backend bwrap
	assert_failure 65
	[ -z "$output" ] && [ -z "$stderr" ]
	st --check --backend firejail
	assert_failure 65
	st --check --backend docker
	assert_failure 65
	[ -z "$output" ] && [ -z "$stderr" ]
}

@test "--check --backend names the backend itself: no fallback" {
	no_bwrap
	qsb-status policy --auto-fallback session >/dev/null
	st --check
	assert_success		# the configured auto: native is usable
	st --check --backend bwrap
	assert_failure 65
}

@test "--check follows the configured backend" {
	no_bwrap
	qsb-status policy --backend bwrap >/dev/null
	st --check
	assert_failure 65
	unset QSB_BWRAP
	if command -v bwrap >/dev/null && unshare -U true 2>/dev/null; then
		st --check
		assert_success
	fi
}

# --- availability events -----------------------------------------------------

@test "sandbox:unavailable and sandbox:recovered when availability changes" {
	command -v bwrap >/dev/null || fail "bubblewrap is not installed (tools/deps.sh sandbox)"
	qsb-status policy --backend bwrap >/dev/null
	run qsb-status --check
	assert_success
	# unchanged: no event
	run qsb-status --check
	[ "$(qsb-status events | grep -c '"sandbox:')" -eq 0 ]
	QSB_BWRAP=/nonexistent/bwrap run qsb-status --check
	assert_failure 65
	QSB_BWRAP=/nonexistent/bwrap run qsb-status
	assert_success
	run qsb-status events
	[ "$(grep -c '"sandbox:unavailable"' <<<"$output")" -eq 1 ]
	jq -e 'select(.event == "sandbox:unavailable") | .data.backend == "bwrap" and
		(.data.reason | test("not installed"))' <<<"$output"
	run qsb-status
	run qsb-status events
	[ "$(grep -c '"sandbox:recovered"' <<<"$output")" -eq 1 ]
	jq -e -s 'map(.event | select(startswith("sandbox:"))) ==
		["sandbox:unavailable", "sandbox:recovered"]' <<<"$output"
	jq -e '.backends.bwrap.available == true' "$QSB_ROOT/status.json"
}

@test "qsb-exec notes availability too: a refused run logs sandbox:unavailable" {
	new w --backend bwrap
	qsb-perm policy set "$BATS_TEST_DIRNAME/../policies/permissive.json" >/dev/null
	QSB_BWRAP=/nonexistent/bwrap run --separate-stderr qsb-exec w -- true
	assert_failure 125
	[[ "$stderr" == *SANDBOX_UNAVAILABLE* ]]
	run qsb-status events
	jq -e -s 'map(select(.event == "sandbox:unavailable"))[0].data.backend == "bwrap"' <<<"$output"
	if command -v bwrap >/dev/null && unshare -U true 2>/dev/null; then
		run qsb-exec w -- true
		assert_success
		run qsb-status events
		jq -e -s 'map(.event | select(startswith("sandbox:"))) ==
			["sandbox:unavailable", "sandbox:recovered"]' <<<"$output"
	fi
}

@test "a damaged status.json is rewritten, not fatal" {
	st
	echo 'garbage{' >"$QSB_ROOT/status.json"
	st
	assert_success
	jq -e . "$QSB_ROOT/status.json"
}

# --- events ------------------------------------------------------------------

@test "events prints the log, every line parseable, oldest first" {
	new a
	new b
	qsb-workspace destroy a >/dev/null
	st events
	assert_success
	[ "$(wc -l <<<"$output")" -eq 3 ]
	jq -e -s 'map(.event) == ["workspace:created", "workspace:created",
		"workspace:destroyed"]' <<<"$output"
	diff <(echo "$output") "$QSB_ROOT/events.jsonl"
}

@test "events with no log yet prints nothing and succeeds" {
	st events
	assert_success
	[ -z "$output" ]
}

@test "events leaves out a torn line" {
	new a
	printf '{"event":"workspace:crea' >>"$QSB_ROOT/events.jsonl"
	new b	# the next append ends the fragment
	st events
	assert_success
	[ "$(wc -l <<<"$output")" -eq 2 ]
	jq -e -s 'map(.sessionId) == ["a", "b"]' <<<"$output"
}

@test "events --session prints only that session's events" {
	new a
	new b
	qsb-workspace info a >/dev/null
	qsb-workspace destroy b >/dev/null
	st events --session a
	assert_success
	jq -e -s 'length == 1 and all(.sessionId == "a")' <<<"$output"
	st events --session b
	jq -e -s 'map(.event) == ["workspace:created", "workspace:destroyed"]' <<<"$output"
	st events --session nobody
	assert_success
	[ -z "$output" ]
}

@test "events --since: an ISO date or a duration ago" {
	new old
	local f="$QSB_ROOT/events.jsonl"
	# make the first event a day old
	sed -i "s/\"time\":\"[^\"]*\"/\"time\":\"$(date -u -d yesterday +%Y-%m-%dT%H:%M:%S.000Z)\"/" "$f"
	new recent
	st events --since 1h
	assert_success
	jq -e -s 'map(.sessionId) == ["recent"]' <<<"$output"
	st events --since "$(date -u -d '2 days ago' +%Y-%m-%d)"
	jq -e -s 'map(.sessionId) == ["old", "recent"]' <<<"$output"
	st events --since "$(date -u -d tomorrow +%Y-%m-%dT%H:%M:%SZ)"
	[ -z "$output" ]
	st events --since 1h --session old
	[ -z "$output" ]
}

@test "events --follow prints the log, then lines as they are appended" {
	new a
	local out=$BATS_TEST_TMPDIR/follow
	qsb-status events --follow >"$out" &
	local pid=$! i
	for i in $(seq 100); do
		[ "$(wc -l <"$out")" -ge 1 ] && break
		sleep 0.05
	done
	new b
	new c
	for i in $(seq 100); do
		[ "$(wc -l <"$out")" -ge 3 ] && break
		sleep 0.05
	done
	kill -0 "$pid"		# still following
	kill "$pid"
	wait "$pid" || true
	jq -e -s 'map(.sessionId) == ["a", "b", "c"]' "$out"
}

@test "events --follow --session filters the new lines too" {
	local out=$BATS_TEST_TMPDIR/follow
	# before the log exists at all
	qsb-status events --follow --session b >"$out" &
	local pid=$! i
	sleep 0.3
	new a
	new b
	qsb-workspace destroy a >/dev/null
	qsb-workspace destroy b >/dev/null
	for i in $(seq 100); do
		[ "$(wc -l <"$out")" -ge 2 ] && break
		sleep 0.05
	done
	sleep 0.2
	kill "$pid"
	wait "$pid" || true
	jq -e -s 'map(.event) == ["workspace:created", "workspace:destroyed"] and
		all(.sessionId == "b")' "$out"
}

@test "events --follow exits 0 quietly when the reader goes away (SIGPIPE)" {
	new a
	# the reader leaves after the first line
	run bash -c 'qsb-status events --follow | head -n 1; echo "status ${PIPESTATUS[0]}"'
	assert_success
	assert_line --index 1 "status 0"
	jq -e '.sessionId == "a"' <<<"${lines[0]}"
	# the reader leaves while no event arrives
	run --separate-stderr bash -c 'timeout 10 qsb-status events --follow --session none | true
		echo "status ${PIPESTATUS[0]}"'
	assert_output "status 0"
	[ -z "$stderr" ]
	# and with events arriving after the reader left
	run --separate-stderr bash -c '
		{ qsb-status events --follow; echo "status $?" >&2; } | head -c 10 >/dev/null &
		sleep 0.3; for i in 1 2 3; do qsb-workspace create "x$i" >/dev/null; done; wait'
	assert_success
	[ "$stderr" = "status 0" ]
}

@test "events --follow picks up a log that is replaced" {
	new a
	local out=$BATS_TEST_TMPDIR/follow
	qsb-status events --follow >"$out" &
	local pid=$! i
	sleep 0.3
	mv "$QSB_ROOT/events.jsonl" "$QSB_ROOT/events.jsonl.1"
	new b
	for i in $(seq 100); do
		[ "$(wc -l <"$out")" -ge 2 ] && break
		sleep 0.05
	done
	kill "$pid"
	wait "$pid" || true
	jq -e -s 'map(.sessionId) == ["a", "b"]' "$out"
}

# --- the policy --------------------------------------------------------------

@test "policy shows the built-in defaults" {
	st policy
	assert_success
	[ "$output" = '{"enabled":true,"mode":"compat","backend":"auto","autoFallback":"manual"}' ]
	st policy show
	assert_success
	[ "$output" = '{"enabled":true,"mode":"compat","backend":"auto","autoFallback":"manual"}' ]
}

@test "policy --options change it; config.json keeps its other keys" {
	mkdir -m 700 -p "$QSB_ROOT"
	cat >"$QSB_ROOT/config.json" <<-'EOF'
	{"sandbox":{"memoryLimit":"512m"},"protectedPaths":["x/**"],
	 "retention":{"mode":"timeout","maxAge":3600000},"sandboxUid":1234}
	EOF
	st policy --backend bwrap --auto-fallback session --mode strict
	assert_success
	[ "$output" = '{"enabled":true,"mode":"strict","backend":"bwrap","autoFallback":"session"}' ]
	jq -e '.sandbox == {"memoryLimit":"512m"} and .protectedPaths == ["x/**"] and
		.retention.maxAge == 3600000 and .sandboxUid == 1234 and
		.policy == {"enabled":true,"mode":"strict","backend":"bwrap","autoFallback":"session"}' \
		"$QSB_ROOT/config.json"
	st policy
	[ "$output" = '{"enabled":true,"mode":"strict","backend":"bwrap","autoFallback":"session"}' ]
	# the new defaults reach new workspaces
	run qsb-workspace create n
	jq -e '.sandboxConfig.mode == "strict" and .sandboxConfig.type == "bwrap"' <<<"$output"
}

@test "policy set merges a partial SandboxPolicy from a file or stdin" {
	echo '{"mode":"strict"}' >"$BATS_TEST_TMPDIR/p.json"
	st policy set "$BATS_TEST_TMPDIR/p.json"
	assert_success
	jq -e '.mode == "strict" and .backend == "auto"' <<<"$output"
	run_qsb qsb-status policy set - <<<'{"enabled":false,"autoFallback":"startup-only","windowsMode":"read-only"}'
	assert_success
	[ "$output" = '{"enabled":false,"mode":"strict","backend":"auto","autoFallback":"startup-only"}' ]
	jq -e '.policy.enabled == false' "$QSB_ROOT/config.json"
}

@test "policy set leaves an existing workspace as it was" {
	new w --mode compat
	qsb-status policy --mode strict --backend bwrap >/dev/null
	run qsb-workspace info w
	jq -e '.sandboxConfig.mode == "compat" and .sandboxConfig.type == "native"' <<<"$output"
}

@test "policy: concurrent changes all land, config.json always parses" {
	local i
	for i in $(seq 10); do
		qsb-status policy --mode strict >/dev/null &
		qsb-status policy --backend bwrap >/dev/null &
	done
	wait
	jq -e '.policy.mode == "strict" and .policy.backend == "bwrap"' "$QSB_ROOT/config.json"
}
