#!/usr/bin/env bats
# qsb-perm: the decision order, requests and decisions, waiting, batches,
# policies, and the gating of qsb-exec and qsb-workspace.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	load helpers/manex
	common_setup
	TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	qsb-workspace create s1 >/dev/null
	BGPIDS=""
}

teardown() {
	[ -z "$BGPIDS" ] || kill $BGPIDS 2>/dev/null || true
}

# qp ARGS: run qsb-perm (the status of check/request is 0, 1 or 3)
qp() { run_qsb qsb-perm "$@"; }

policy() { qsb-perm policy set "$TOP/policies/$1.json" >/dev/null; }

# a policy from JSON text
policy_json() { printf '%s' "$1" | qsb-perm policy set - >/dev/null; }

# --- usage and bad input ---------------------------------------------------------

@test "--help, --version, usage errors" {
	qp --help
	assert_success
	assert_output --partial "qsb-perm check SESSION TYPE TARGET"
	qp --version
	assert_output --regexp '^qsb-perm [0-9.]+$'
	for args in "" "frob" "check s1 file:read" "check s1" "check --batch x" \
	    "approve" "deny" "pending x" "policy set" "policy frob" \
	    "check s1 file:read x --bogus" "approve --always"; do
		# shellcheck disable=SC2086
		qp $args
		[ "$status" -eq 2 ] || fail "'$args': $status"
		[[ "${stderr%%$'\n'*}" == "qsb-perm: USAGE: "* ]] || fail "$stderr"
	done
}

@test "bad input is refused with its code and changes nothing" {
	local before
	before=$(state_snapshot)
	while read -r code args; do
		# shellcheck disable=SC2086
		qp $args
		[ "$status" -eq "$code" ] || fail "'$args': status $status, $stderr"
		[ -z "$output" ] || fail "'$args': output $output"
	done <<-'EOF'
	74 check s1 file:reed x
	74 check s1 FILE:READ x
	74 check ../x file:read x
	66 check nope file:read x
	74 approve 123
	74 approve 0123456789abcdef
	74 deny zzzzzzzzzzzzzzzz
	74 approve 0123456789abcdef --by robot
	74 request s1 network:access x --wait 5x
	74 pending --session ../x
	71 policy set /nonexistent/policy.json
	EOF
	[ "$(state_snapshot)" = "$before" ]
}

@test "invalid policies are refused with 74 and the installed one stays" {
	policy strict
	local before
	before=$(cat "$QSB_ROOT/perm/policy.json")
	while IFS= read -r p; do
		run --separate-stderr bash -c "printf '%s' '$p' | qsb-perm policy set -"
		[ "$status" -eq 74 ] || fail "'$p': $status"
		assert_diag qsb-perm CONFIG_INVALID
		[ "$(cat "$QSB_ROOT/perm/policy.json")" = "$before" ] || fail "'$p' changed it"
	done <<-'EOF'
	{"autoApprove": [], "requireConfirm": [], "denyList": [], "workspaceOnly": true,}
	{"autoApprove": [], "requireConfirm": [], "denyList": [], "workspaceOnly": true}
	{"autoApprove": [], "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": [], "extra": 1}
	{"autoApprove": ["file:reed"], "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": []}
	{"autoApprove": ["disk:*"], "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": []}
	{"autoApprove": "file:read", "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": []}
	{"autoApprove": [], "requireConfirm": [], "denyList": [], "workspaceOnly": "yes", "safeCommands": []}
	{"autoApprove": [], "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": ["rm -rf /*"]}
	{"autoApprove": [], "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": ["/bin/ls"]}
	{"autoApprove": [], "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": [""]}
	{"autoApprove": [1], "requireConfirm": [], "denyList": [], "workspaceOnly": true, "safeCommands": []}
	[]
	EOF
	qp policy show
	[ "$(jq -c .autoApprove <<<"$output")" = '["file:read"]' ]
}

# --- the decision order ---------------------------------------------------------------

@test "rule 1: denyList wins over everything" {
	policy_json '{"autoApprove": ["*"], "requireConfirm": [], "denyList": ["network:*"], "workspaceOnly": false, "safeCommands": []}'
	qp check s1 network:access '*'
	[ "$status" -eq 1 ]
	jq -e '.allowed == false and .status == "denied" and
	    (.reason | contains("denyList"))' <<<"$output"
	qp check s1 network:download 'https://example.org'
	[ "$status" -eq 1 ]
	qp check s1 file:read x
	[ "$status" -eq 0 ]
	tail -n 1 "$QSB_ROOT/events.jsonl" | jq -e '.event == "permission:denied" or .event == "workspace:created"' >/dev/null
	grep -q '"event":"permission:denied"' "$QSB_ROOT/events.jsonl"
}

@test "rule 2: workspaceOnly resolves file targets beneath rootPath, failing closed" {
	local fs=$QSB_ROOT/ws/s1/fs
	ln -s /etc "$fs/projects/etc"
	ln -s ../home "$fs/projects/inside-link"
	ln -s nowhere "$fs/projects/dangling"
	echo x >"$fs/projects/real"
	for t in ../../etc/passwd /etc/passwd projects/etc/passwd projects/etc \
	    "$fs/../meta/workspace.json" projects/new/../../../x "$QSB_ROOT" \
	    /proc/self/root/etc/passwd; do
		for type in file:read file:write file:delete; do
			qp check s1 "$type" "$t"
			[ "$status" -eq 1 ] || fail "$type $t: $status $output"
			[[ "$(jq -r .reason <<<"$output")" == *workspaceOnly* ]]
		done
	done
	for t in projects/real projects/new-file projects/a/b/new "$fs/projects/real" \
	    projects/inside-link/x projects/dangling . projects; do
		qp check s1 file:write "$t"
		[ "$status" -eq 0 ] || fail "$t: $status $output"
	done
	# without workspaceOnly, outside is a matter for the lists
	policy permissive
	qp check s1 file:read /etc/passwd
	[ "$status" -eq 0 ]
}

@test "rule 3: safe commands by words, no metacharacters, system paths only" {
	policy strict
	for c in "ls" "ls -la projects" "/bin/ls" "/usr/bin/cat README" \
	    "git status" "git status --short" "git log -n 3" "grep -r foo ."; do
		qp check s1 command:execute "$c"
		[ "$status" -eq 0 ] || fail "'$c' not safe: $output"
		[[ "$(jq -r .reason <<<"$output")" == *safeCommands* ]]
	done
	for c in "ls; rm -rf /" "ls | sh" 'echo $HOME' "cat \`id\`" "ls > x" \
	    "ls && rm x" "/tmp/ls" "./ls" "lsblk" "git" "git push" "gitk" \
	    "git statusx" "cat 'a b'" "ls *" 'echo a\b' "make test"; do
		qp check s1 command:execute "$c"
		[ "$status" -eq 3 ] || fail "'$c': $status $output"
	done
}

@test "rule 4: autoApprove" {
	qp check s1 command:execute 'make test; rm -rf build'
	[ "$status" -eq 0 ]
	[[ "$(jq -r .reason <<<"$output")" == *autoApprove* ]]
}

@test "rules 5 and 6: a request, its approval once, used up by the next check" {
	qp check s1 network:access '*'
	[ "$status" -eq 3 ]
	local id
	id=$(jq -r .requestId <<<"$output")
	[[ "$id" =~ ^[0-9a-f]{16}$ ]]
	# the same check again: the same request
	qp check s1 network:access '*'
	[ "$(jq -r .requestId <<<"$output")" = "$id" ]
	[ "$(qsb-perm pending | jq length)" -eq 1 ]
	jq -e --arg id "$id" '.id == $id and .status == "pending" and
	    .type == "network:access" and .target == "*" and .sessionId == "s1"' \
	    "$QSB_ROOT/perm/requests/$id.json"
	qp approve "$id" --reason 'ok for npm ci'
	assert_success
	jq -e '.[0].scope == "once" and .[0].approvedBy == "user" and
	    .[0].reason == "ok for npm ci"' <<<"$output"
	[ "$(qsb-perm pending | jq length)" -eq 0 ]
	qp check s1 network:access '*'
	[ "$status" -eq 0 ]
	[[ "$(jq -r .reason <<<"$output")" == *"approved once by user"* ]]
	# used up: the next check asks again
	qp check s1 network:access '*'
	[ "$status" -eq 3 ]
	[ "$(jq -r .requestId <<<"$output")" != "$id" ]
	# approving twice changes nothing
	qp approve "$id"
	assert_success
}

@test "always stays until clear-cache; --by system; per session, type and target" {
	qsb-workspace create s2 >/dev/null
	qp check s1 network:access host-a
	local id
	id=$(jq -r .requestId <<<"$output")
	qp approve "$id" --always --by system
	jq -e '.[0].scope == "always" and .[0].approvedBy == "system"' <<<"$output"
	for _ in 1 2 3; do
		qp check s1 network:access host-a
		[ "$status" -eq 0 ]
	done
	qp check s1 network:access host-b
	[ "$status" -eq 3 ]
	qp check s2 network:access host-a
	[ "$status" -eq 3 ]
	qp check s1 network:download host-a
	[ "$status" -eq 3 ]
	qp clear-cache --session s2
	[ "$(jq .cleared <<<"$output")" -eq 0 ]
	qp clear-cache --session s1
	[ "$(jq .cleared <<<"$output")" -eq 1 ]
	qp check s1 network:access host-a
	[ "$status" -eq 3 ]
}

@test "in a strict workspace a write approval is always once" {
	policy strict
	qsb-workspace create st --mode strict >/dev/null
	qp check st file:write projects/a.c
	local id
	id=$(jq -r .requestId <<<"$output")
	qp approve "$id" --always
	[ "$(jq -r '.[0].scope' <<<"$output")" = once ]
	qp check st file:write projects/a.c
	[ "$status" -eq 0 ]
	qp check st file:write projects/a.c
	[ "$status" -eq 3 ]
	# not a write: always is always
	qp check st command:execute 'make'
	qp approve "$(jq -r .requestId <<<"$output")" --always
	[ "$(jq -r '.[0].scope' <<<"$output")" = always ]
}

@test "deny: recorded with who and why; the next check asks again" {
	qp request s1 package:install:npm lodash --reason 'utility functions'
	[ "$status" -eq 3 ]
	local id
	id=$(jq -r .requestId <<<"$output")
	jq -e '.reason == "utility functions"' "$QSB_ROOT/perm/requests/$id.json"
	qp deny "$id" --reason 'not in this project'
	assert_success
	jq -e '.[0].status == "denied" and .[0].decidedBy == "user" and
	    .[0].decisionReason == "not in this project" and .[0].decidedAt' <<<"$output"
	qp approve "$id"
	assert_failure 74
	[[ "$stderr" == *"was denied"* ]]
	qp check s1 package:install:npm lodash
	[ "$status" -eq 3 ]
	[ "$(jq -r .requestId <<<"$output")" != "$id" ]
	grep -q '"event":"permission:requested"' "$QSB_ROOT/events.jsonl"
	grep -q '"event":"permission:denied".*"requestId":"'"$id"'"' "$QSB_ROOT/events.jsonl"
}

@test "approve several ids at once; an unknown one is reported, the rest done" {
	local a b
	a=$(qsb-perm check s1 network:access x1 | jq -r .requestId)
	b=$(qsb-perm check s1 network:access x2 | jq -r .requestId)
	qp approve "$a" 0123456789abcdef "$b"
	assert_failure 74
	[ "$(jq length <<<"$output")" -eq 2 ]
	[[ "$stderr" == *"no request '0123456789abcdef'"* ]]
	[ "$(qsb-perm pending | jq length)" -eq 0 ]
}

# --- waiting -----------------------------------------------------------------------------

@test "request --wait is released by another process's approve" {
	local out=$BATS_TEST_TMPDIR/wait.out
	( rc=0; timeout 20 qsb-perm request s1 network:access '*' --wait 30s >"$out" || rc=$?
	  echo "$rc" >"$out.rc" ) 3>&- &
	BGPIDS=$!
	local id=""
	for _ in $(seq 200); do
		id=$(qsb-perm pending | jq -r '.[0].id // empty')
		[ -n "$id" ] && break
		sleep 0.02
	done
	[ -n "$id" ] || fail "no pending request"
	sleep 0.2
	[ ! -e "$out.rc" ] || fail "request returned before the decision"
	qsb-perm approve "$id" >/dev/null
	# a hang guard, not a timing claim: it wakes on the decision
	for _ in $(seq 250); do [ -e "$out.rc" ] && break; sleep 0.02; done
	[ "$(cat "$out.rc")" = 0 ] || fail "status $(cat "$out.rc")"
	jq -e '.allowed == true' "$out"
}

@test "request --wait: a denial gives 1, a timeout 3" {
	run --separate-stderr qsb-perm request s1 network:access t1 --wait 300ms
	[ "$status" -eq 3 ]
	jq -e '.status == "pending" and .requestId' <<<"$output"
	local out=$BATS_TEST_TMPDIR/w
	( rc=0; qsb-perm request s1 network:access t2 --wait=30s >"$out" || rc=$?
	  echo "$rc" >"$out.rc" ) 3>&- &
	BGPIDS=$!
	local id=""
	for _ in $(seq 200); do
		id=$(qsb-perm pending | jq -r '.[] | select(.target == "t2") | .id')
		[ -n "$id" ] && break
		sleep 0.02
	done
	qsb-perm deny "$id" >/dev/null
	for _ in $(seq 250); do [ -e "$out.rc" ] && break; sleep 0.02; done
	[ "$(cat "$out.rc")" = 1 ]
}

# --- concurrency and batches --------------------------------------------------------------

@test "50 concurrent requests all land pending, then one approve takes them all" {
	local i pids=()
	for i in $(seq 50); do
		qsb-perm request s1 network:access "host$i" >/dev/null 2>&1 3>&- &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || true; done
	[ "$(qsb-perm pending | jq length)" -eq 50 ]
	[ "$(ls "$QSB_ROOT/perm/requests" | wc -l)" -eq 50 ]
	# the same 50 again: no new requests
	for i in $(seq 50); do
		qsb-perm request s1 network:access "host$i" >/dev/null 2>&1 3>&- &
		pids+=($!)
	done
	wait
	[ "$(ls "$QSB_ROOT/perm/requests" | wc -l)" -eq 50 ]
	# shellcheck disable=SC2046
	qp approve $(qsb-perm pending | jq -r '.[].id')
	assert_success
	[ "$(jq length <<<"$output")" -eq 50 ]
	for i in $(seq 50); do
		qsb-perm check s1 network:access "host$i" >/dev/null || fail "host$i"
	done
}

@test "check --batch: 10,000 lines, one result each, in order" {
	local in=$BATS_TEST_TMPDIR/in.jsonl
	python3 -c '
import json
for i in range(10000):
    k = i % 4
    if k == 0: print(json.dumps({"sessionId": "s1", "type": "file:read", "target": "projects/f%d" % i}))
    elif k == 1: print(json.dumps({"sessionId": "s1", "type": "command:execute", "target": "ls -l f%d" % i}))
    elif k == 2: print(json.dumps({"sessionId": "s1", "type": "package:install:system", "target": "pkg%d" % i}))
    else: print(json.dumps({"sessionId": "s1", "type": "file:write", "target": "../../x%d" % i}))
' >"$in"
	run --separate-stderr bash -c "qsb-perm check --batch <'$in'"
	assert_success
	[ "${#lines[@]}" -eq 10000 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] | .allowed] | map(select(.)) | length')" -eq 5000 ]
	jq -e '.allowed' <<<"${lines[0]}"
	jq -e '.status == "denied"' <<<"${lines[2]}"
	jq -e '.reason | contains("workspaceOnly")' <<<"${lines[9999]}"
}

@test "check --batch answers each line before the next arrives; bad lines in line" {
	coproc BATCH { qsb-perm check --batch 2>&1; }
	local r
	echo '{"sessionId":"s1","type":"file:read","target":"a"}' >&"${BATCH[1]}"
	read -r -t 10 r <&"${BATCH[0]}" || fail "no answer to the first line"
	jq -e '.allowed == true' <<<"$r"
	echo '{"sessionId":"s1","type":"bogus","target":"a"}' >&"${BATCH[1]}"
	read -r -t 10 r <&"${BATCH[0]}" || fail "no answer to the second line"
	jq -e '.error.code == "CONFIG_INVALID"' <<<"$r"
	echo 'not json' >&"${BATCH[1]}"
	read -r -t 10 r <&"${BATCH[0]}"
	jq -e '.error.code == "CONFIG_INVALID"' <<<"$r"
	echo '{"sessionId":"nope","type":"file:read","target":"a"}' >&"${BATCH[1]}"
	read -r -t 10 r <&"${BATCH[0]}"
	jq -e '.error.code == "WORKSPACE_NOT_FOUND" and .error.sessionId == "nope"' <<<"$r"
	exec {BATCH[1]}>&-
	wait "$BATCH_PID" || [ $? -eq 74 ]
}

# --- policies ----------------------------------------------------------------------------------

@test "the built-in default is policies/compat.json" {
	qp policy show
	[ "$(jq -S . <<<"$output")" = "$(jq -S . "$TOP/policies/compat.json")" ]
	[ ! -e "$QSB_ROOT/perm/policy.json" ]
}

@test "the shipped policies, as tabled" {
	# strict
	policy strict
	qsb-perm check s1 file:read projects/x >/dev/null
	for t in file:write file:delete; do
		run qsb-perm check s1 "$t" projects/x; [ "$status" -eq 3 ] || fail "strict $t"
	done
	for t in command:execute network:access network:download \
	    package:install:npm package:install:python; do
		run qsb-perm check s1 "$t" "x-$t"; [ "$status" -eq 3 ] || fail "strict $t"
	done
	run qsb-perm check s1 package:install:system vim; [ "$status" -eq 1 ]
	run qsb-perm check s1 command:execute "git diff"; [ "$status" -eq 0 ]
	# compat
	policy compat
	for t in file:read file:write file:delete; do
		run qsb-perm check s1 "$t" projects/x; [ "$status" -eq 0 ] || fail "compat $t"
	done
	run qsb-perm check s1 command:execute "make"; [ "$status" -eq 0 ]
	for t in network:access network:download package:install:npm package:install:python; do
		run qsb-perm check s1 "$t" "y-$t"; [ "$status" -eq 3 ] || fail "compat $t"
	done
	run qsb-perm check s1 package:install:system vim; [ "$status" -eq 1 ]
	# permissive
	policy permissive
	for t in file:read file:write file:delete command:execute network:access \
	    network:download package:install:npm package:install:python \
	    package:install:system; do
		run qsb-perm check s1 "$t" /etc/anything; [ "$status" -eq 0 ] || fail "permissive $t"
	done
}

@test "the EXAMPLES of qsb-policy(5) run as written" {
	cd "$BATS_TEST_TMPDIR"
	run_man_examples "$TOP/man/qsb-policy.5" ci.json
}

# --- gating -----------------------------------------------------------------------------------

@test "qsb-exec asks: command, packages, network; pending gives the id to approve" {
	policy strict
	run --separate-stderr qsb-exec s1 -- make test
	assert_failure 125
	assert_diag qsb-exec PERMISSION_DENIED
	local id
	id=$(grep -o 'qsb-perm approve [0-9a-f]*' <<<"$stderr" | cut -d' ' -f3)
	[[ "$id" =~ ^[0-9a-f]{16}$ ]] || fail "$stderr"
	[ -z "$output" ]
	qsb-perm approve "$id" >/dev/null
	run --separate-stderr qsb-exec s1 -- make test
	[ "$status" -ne 125 ] || fail "not allowed after approval: $stderr"
	# once: the third run asks again
	run --separate-stderr qsb-exec s1 -- make test
	assert_failure 125
	# safe commands run without asking in strict
	run --separate-stderr qsb-exec s1 -- ls -la
	assert_success
	# packages and network
	policy compat
	run --separate-stderr qsb-exec s1 -- sh -c 'cd x && npm install --save-dev left-pad'
	assert_failure 125
	[[ "$stderr" == *"package:install:npm left-pad"* ]]
	run --separate-stderr qsb-exec s1 -- apt-get install -y vim
	assert_failure 125
	[[ "$stderr" == *"package:install:system vim"*"denyList"* ]]
	run --separate-stderr qsb-exec s1 -- pip install requests
	[[ "$stderr" == *"package:install:python requests"* ]]
	qsb-workspace create n --network >/dev/null
	run --separate-stderr qsb-exec n -- true
	assert_failure 125
	[[ "$stderr" == *"network:access *"* ]]
	run --separate-stderr qsb-exec --no-network n -- true
	assert_success
	tail -n 1 "$QSB_ROOT/events.jsonl" | jq -e '.event == "execute:complete"'
}

@test "qsb-workspace read and write ask" {
	policy strict
	run --separate-stderr bash -c 'echo hi | qsb-workspace write s1 projects/a.txt'
	assert_failure 68
	assert_diag qsb-workspace PERMISSION_DENIED
	[ ! -e "$QSB_ROOT/ws/s1/fs/projects/a.txt" ]
	local id
	id=$(qsb-perm pending | jq -r '.[0].id')
	qsb-perm approve "$id" >/dev/null
	run --separate-stderr bash -c 'echo hi | qsb-workspace write s1 projects/a.txt'
	assert_success
	run --separate-stderr qsb-workspace read s1 projects/a.txt
	assert_success
	[ "$output" = hi ]
	# a policy that denies reading
	policy_json '{"autoApprove": [], "requireConfirm": [], "denyList": ["file:read"], "workspaceOnly": true, "safeCommands": []}'
	run --separate-stderr qsb-workspace read s1 projects/a.txt
	assert_failure 68
	[[ "$stderr" == *denyList* ]]
	[ -z "$output" ]
}
