#!/usr/bin/env bats
# The escape suite: every case attempts the real escape from inside the
# sandbox, for each backend (native; bwrap when installed) in strict and
# compat mode, then inspects the host to prove nothing happened.
# tests/run runs this file once more as an unprivileged user.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers/common
	load helpers/sandbox
	sandbox_setup_file
}

setup() {
	load helpers/common
	load helpers/sandbox
	export QSB_ROOT="$BATS_FILE_TMPDIR/root"
	BGPIDS=""
}

teardown() {
	# background helpers of a failed test must not hold bats' output
	[ -z "$BGPIDS" ] || kill $BGPIDS 2>/dev/null || true
}

@test "escape: writing /etc, host /tmp and /var/tmp changes nothing on the host" {
	local c m
	for c in $(combos); do
		m=$(marker)
		sx "$c" "echo x > /etc/$m; echo x > /var/tmp/$m; echo x > /tmp/$m; touch /$m; cat /tmp/$m"
		[ ! -e "/etc/$m" ] || fail "$c: /etc/$m written"
		[ ! -e "/var/tmp/$m" ] || fail "$c: /var/tmp/$m written"
		[ ! -e "/tmp/$m" ] || fail "$c: host /tmp/$m written"
		[ ! -e "/$m" ] || fail "$c: /$m written"
		[[ "$err" == *"/etc/$m"* ]] || fail "$c: no error for /etc: $err"
	done
}

@test "escape: meta/workspace.json can be neither read nor overwritten" {
	local c ws meta before
	for c in $(combos); do
		ws=$(ws_of "$c")
		meta="$QSB_ROOT/ws/$ws/meta/workspace.json"
		before=$(cat "$meta")
		sx "$c" "cat '$meta'; echo '{\"id\":\"pwned\"}' > '$meta';
		    cat ../../meta/workspace.json; echo x > ../../meta/workspace.json;
		    ls -a '$QSB_ROOT/ws/$ws'; cat '$QSB_ROOT/ws/$ws/meta/lock' && echo read-lock"
		[[ "$out" != *rootPath* ]] || fail "$c: the record was read: $out"
		[[ "$out" != *meta* ]] || fail "$c: meta/ is visible: $out"
		[[ "$out" != *read-lock* ]] || fail "$c: meta/lock was read"
		# a run updates lastAccessedAt and lastExitCode; nothing else
		[ "$(jq -S 'del(.lastAccessedAt, .lastExitCode)' "$meta")" = \
		    "$(jq -S 'del(.lastAccessedAt, .lastExitCode)' <<<"$before")" ] ||
			fail "$c: the record changed: $(cat "$meta")"
		qsb-workspace info "$ws" | jq -e --arg w "$ws" '.id == $w' >/dev/null
	done
}

@test "escape: another workspace and the rest of the root are invisible" {
	local c
	for c in $(combos); do
		sx "$c" "cat '$QSB_ROOT/ws/other/fs/projects/private.txt';
		    ls '$QSB_ROOT/ws' '$QSB_ROOT'; cat '$QSB_ROOT/events.jsonl'"
		[[ "$out" != *"other workspace secret"* ]] || fail "$c: read it"
		[[ "$out" != *other* ]] || fail "$c: other workspace listed: $out"
		[[ "$out" != *events.jsonl* && "$out" != *workspace:created* ]] ||
			fail "$c: the root is visible: $out"
	done
}

@test "escape: a symlink planted inside towards /etc leads nowhere writable" {
	local c m sum
	sum=$(sha256sum /etc/passwd)
	for c in $(combos); do
		m=$(marker)
		sx "$c" "ln -s /etc etclink; echo x > etclink/$m; ln -s /etc/passwd pw;
		    echo 'pwned:x:0:0::/:/bin/sh' >> pw; ln -s ../../../../../../../etc up;
		    echo x > up/$m; ls -l etclink pw"
		[ ! -e "/etc/$m" ] || fail "$c: /etc/$m written through a link"
		[ "$(sha256sum /etc/passwd)" = "$sum" ] || fail "$c: /etc/passwd changed"
		# the links themselves exist: the test did plant them
		[ -L "$(fs_of "$c")/projects/etclink" ]
		rm -f "$(fs_of "$c")"/projects/{etclink,pw,up}
	done
}

@test "escape: protected paths stay read-only; a commit from inside works" {
	command -v git >/dev/null || fail "git is needed"
	local c fs owner
	for c in $(combos); do
		fs=$(fs_of "$c")
		git init -q "$fs/projects/repo"
		git -C "$fs/projects/repo" config user.email t@example.org
		git -C "$fs/projects/repo" config user.name tester
		mkdir -p "$fs/projects/repo/.claude"
		echo orig >"$fs/home/.bashrc"
		echo '{}' >"$fs/projects/repo/.mcp.json"
		# writable by the sandbox user, so only the mount protects them
		owner=$(stat -c %u:%g "$fs")
		chown -R "$owner" "$fs/projects/repo" "$fs/home/.bashrc"
		local cfg
		cfg=$(cat "$fs/projects/repo/.git/config")
		sx "$c" "echo evil > repo/.git/hooks/pre-commit; echo evil >> repo/.git/config;
		    echo evil >> ~/.bashrc; rm -f ~/.bashrc; echo evil > repo/.claude/settings.json;
		    echo evil > repo/.mcp.json; mv repo/.git/hooks repo/.git/h2;
		    git -C repo commit -q --allow-empty -m inside && echo committed"
		[ ! -e "$fs/projects/repo/.git/hooks/pre-commit" ] || fail "$c: hook written"
		[ -d "$fs/projects/repo/.git/hooks" ] || fail "$c: hooks moved"
		[ "$(cat "$fs/projects/repo/.git/config")" = "$cfg" ] || fail "$c: .git/config changed"
		[ "$(cat "$fs/home/.bashrc")" = orig ] || fail "$c: .bashrc changed"
		[ ! -e "$fs/projects/repo/.claude/settings.json" ] || fail "$c: .claude written"
		[ "$(cat "$fs/projects/repo/.mcp.json")" = '{}' ] || fail "$c: .mcp.json changed"
		[[ "$out" == *committed* ]] || fail "$c: commit failed: $err"
		[ "$(git -c safe.directory='*' -C "$fs/projects/repo" log --format=%s)" = inside ]
		rm -rf "$fs/projects/repo" "$fs/home/.bashrc"
	done
}

@test "escape: strict shows no /root, /home, /var; compat hides credential stores" {
	local c
	for c in $(combos); do
		sx "$c" "for d in /root /home /var /srv /mnt; do test -e \$d && echo visible:\$d; done; true"
		if [ "${c#*/}" = strict ]; then
			# only the path to the workspace may exist under /home
			[[ "$out" != *visible:/root* && "$out" != *visible:/var* &&
			    "$out" != *visible:/srv* ]] || fail "$c: $out"
		fi
	done
	# compat: the invoking user's credential stores are empty or gone
	local home
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	local made=
	if [ ! -d "$home/.ssh" ]; then
		mkdir -m 700 "$home/.ssh" || fail "cannot create $home/.ssh"
		made=yes
	fi
	local key="$home/.ssh/qsb-test-key-$$"
	echo "PRIVATE KEY $$" >"$key"
	for c in $(combos); do
		[ "${c#*/}" = compat ] || continue
		sx "$c" "cat '$key'; ls -a '$home/.ssh'"
		[[ "$out" != *"PRIVATE KEY"* && "$out" != *qsb-test-key* ]] ||
			fail "$c: credential store visible: $out"
	done
	rm -f "$key"
	[ -z "$made" ] || rmdir "$home/.ssh"
}

@test "escape: host processes are invisible in /proc" {
	local c m pid n
	m=$(marker)
	bash -c "exec -a $m sleep 300" >/dev/null 2>&1 3>&- &
	pid=$!
	BGPIDS="$pid"
	for c in $(combos); do
		sx "$c" "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \$f; echo; done | grep -c '^$m ' ; ls -d /proc/[0-9]* | wc -l"
		n=$(echo "$out" | head -1)
		[ "$n" = 0 ] || fail "$c: the host process is visible"
		[ "$(echo "$out" | tail -1)" -lt 10 ] || fail "$c: many processes visible: $out"
	done
	kill "$pid"
}

@test "escape: mount and new namespaces are refused" {
	local c
	for c in $(combos); do
		sx "$c" "mount -t tmpfs none /tmp 2>&1 && echo mounted;
		    python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(\"mount\", l.mount(b\"none\", b\"/tmp\", b\"tmpfs\", 0, None), ctypes.get_errno()); print(\"unshare\", l.unshare(0x10000000), ctypes.get_errno())'"
		[[ "$out" != *mounted* ]] || fail "$c: mount worked"
		[[ "$out" == *"mount -1 1"* ]] || fail "$c: mount(2) was not EPERM: $out $err"
		[[ "$out" == *"unshare -1 1"* ]] || fail "$c: unshare(CLONE_NEWUSER) was not EPERM: $out"
	done
}

@test "escape: no capabilities, no_new_privs set, seccomp on" {
	local c
	for c in $(combos); do
		sx "$c" "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status"
		for f in CapInh CapPrm CapEff CapBnd CapAmb; do
			[[ "$out" == *"$f:"$'\t'"0000000000000000"* ]] ||
				fail "$c: $f not empty: $out"
		done
		[[ "$out" == *"NoNewPrivs:"$'\t'"1"* ]] || fail "$c: NoNewPrivs: $out"
		[[ "$out" == *"Seccomp:"$'\t'"2"* ]] || fail "$c: no seccomp filter: $out"
	done
}

@test "escape: not in the caller's session; TIOCSTI refused" {
	local c m mysid pid sid
	mysid=$(ps -o sid= -p $$ | tr -d ' ')
	for c in $(combos); do
		m=$(marker)
		qsb-exec --backend "${c%/*}" "$(ws_of "$c")" -- bash -c "exec -a $m sleep 30" \
		    >"$BATS_TEST_TMPDIR/r" 2>&1 3>&- &
		for _ in $(seq 100); do
			pid=$(pgrep -f "^$m" | head -1)
			[ -n "$pid" ] && break
			sleep 0.05
		done
		[ -n "$pid" ] || fail "$c: the command did not start"
		sid=$(awk '{print $6}' "/proc/$pid/stat")
		[ "$sid" != "$mysid" ] || fail "$c: same session $sid"
		# and a signal from the host reaches it, with the default action
		kill "$pid"
		wait || true
		jq -e '.signal == "SIGTERM"' "$BATS_TEST_TMPDIR/r" >/dev/null ||
			fail "$c: SIGTERM did not end it: $(cat "$BATS_TEST_TMPDIR/r")"
		sx "$c" "python3 -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b\"x\")'"
		[[ "$err" == *"Operation not permitted"* ]] || fail "$c: TIOCSTI: $err"
	done
}

@test "escape: no TCP to a host loopback listener with network off; works with it on" {
	local c ws connect
	start_listener
	connect="python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $PORT), timeout=3); print(\"connected\")'"
	for c in $(combos); do
		sx "$c" "$connect"
		[[ "$out" != *connected* ]] || fail "$c: connected with network off"
		[ ! -s "$LOG" ] || fail "$c: the listener accepted a connection"
	done
	for c in $(combos); do
		ws="net-$(ws_of "$c")"
		qsb-workspace create "$ws" --network --mode "${c#*/}" >/dev/null
		run --separate-stderr qsb-exec --backend "${c%/*}" "$ws" -- sh -c "$connect"
		[[ "$(jq -r .stdout <<<"$output")" == *connected* ]] ||
			fail "$c: no connection with network on: $output"
	done
	[ "$(grep -c accepted "$LOG")" -eq "$(combos | wc -w)" ]
	kill "$LPID"
}

@test "escape: ptrace of a sibling is refused" {
	local c
	for c in $(combos); do
		sx "$c" "sleep 30 & p=\$!; python3 -c 'import ctypes, sys; l=ctypes.CDLL(None, use_errno=True); print(\"ptrace\", l.ptrace(16, int(sys.argv[1]), 0, 0), ctypes.get_errno())' \$p; cat /proc/\$p/mem >/dev/null 2>&1 || echo nomem; kill \$p"
		[[ "$out" == *"ptrace -1 1"* ]] || fail "$c: PTRACE_ATTACH not EPERM: $out $err"
	done
}

@test "escape: a setuid-root binary gains nothing" {
	local probe=/opt/qsb-test/suid-id
	[ -u "$probe" ] && [ "$(stat -c %u "$probe")" = 0 ] ||
		skip "no setuid probe: tests/run creates $probe when run as root"
	# the control: outside a sandbox the probe does raise euid for a
	# non-root caller
	if [ "$(id -u)" -ne 0 ]; then
		[[ "$("$probe")" == *"euid=0"* ]] || fail "the probe does not work"
	fi
	local c
	for c in $(combos); do
		sx "$c" "$probe; id -u"
		[ "$code" -eq 0 ] || fail "$c: probe did not run: $err"
		[[ "$out" != *"euid=0"* ]] || fail "$c: gained root: $out"
		[ "$(echo "$out" | tail -1)" != 0 ] || fail "$c: runs as root"
	done
}

@test "escape: nothing survives a timeout, not even setsid or a double fork" {
	local c m
	for c in $(combos); do
		m=$(marker)
		run --separate-stderr qsb-exec -t 500ms --backend "${c%/*}" "$(ws_of "$c")" -- sh -c "
		    (setsid bash -c 'exec -a $m-a sleep 300' &)
		    (bash -c 'exec -a $m-b sleep 300 &' &)
		    trap '' TERM; exec bash -c 'trap \"\" TERM; exec -a $m-c sleep 300'"
		[ "$status" -eq 124 ] || fail "$c: status $status: $stderr"
		jq -e '.timedOut == true and .exitCode == 124' <<<"$output" >/dev/null
		sleep 0.2
		! pgrep -f "^$m" >/dev/null || fail "$c: left running: $(pgrep -fa "^$m")"
	done
}

@test "escape: nothing survives the command's own exit" {
	local c m
	for c in $(combos); do
		m=$(marker)
		sx "$c" "(setsid bash -c 'exec -a $m-a sleep 300' &); (bash -c 'exec -a $m-b sleep 300 &' &); echo started"
		[ "$code" -eq 0 ]
		sleep 0.2
		! pgrep -f "^$m" >/dev/null || fail "$c: left running: $(pgrep -fa "^$m")"
	done
}

@test "the command starts with no blocked and no ignored signals" {
	local c
	for c in $(combos); do
		sx "$c" "exec grep -E '^Sig(Blk|Ign):' /proc/self/status"
		[[ "$out" == *"SigBlk:"$'\t'"0000000000000000"* ]] || fail "$c: $out"
		[[ "$out" == *"SigIgn:"$'\t'"0000000000000000"* ]] || fail "$c: $out"
	done
}

@test "escape: no descriptor of qsb-exec reaches the command" {
	local c
	for c in $(combos); do
		run --separate-stderr bash -c "exec 7<'$QSB_ROOT' 8>/dev/null; qsb-exec --backend ${c%/*} $(ws_of "$c") -- sh -c 'ls /proc/self/fd | tr \"\\n\" \" \"'"
		out=$(jq -r .stdout <<<"$output")
		# 0-2, and 3: the directory ls itself is reading
		[ "$out" = "0 1 2 3 " ] || fail "$c: descriptors leaked in: $out"
	done
}
