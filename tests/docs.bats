#!/usr/bin/env bats
# Documentation and packaging: man pages, completions, install/uninstall.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	common_setup
	TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
}

programs() {
	local p
	for p in "$TOP"/src/qsb-*.c; do
		p=${p##*/}
		echo "${p%.c}"
	done
}

@test "every long option in --help is in the man page and both completions" {
	local p opt missing=""
	for p in $(programs); do
		for opt in $("$p" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
			grep -qE -- "(^|[ ,])${opt#-}( |\$)" "$TOP/man/$p.1" ||
				missing="$missing $p:man:$opt"
			grep -q -- "$opt" "$TOP/completions/bash/$p" ||
				missing="$missing $p:bash:$opt"
			grep -q -- "$opt" "$TOP/completions/zsh/_qsb" ||
				missing="$missing $p:zsh:$opt"
		done
	done
	[ -z "$missing" ] || fail "undocumented:$missing"
}

@test "every command in --help is in the man page and both completions" {
	local p c cmds missing=""
	for p in $(programs); do
		cmds=$("$p" --help | sed -n "s/^ *\(usage: \)\{0,1\}$p \([a-z][a-z-]*\)\( .*\)\{0,1\}\$/\2/p" | sort -u)
		[ "$p" != qsb-workspace ] || [ "$(echo "$cmds" | wc -w)" -eq 8 ] ||
			fail "commands of $p not found in --help: $cmds"
		for c in $cmds; do
			grep -q -- "^\.Cm $c\$" "$TOP/man/$p.1" || missing="$missing $p:man:$c"
			grep -q -- "$c" "$TOP/completions/bash/$p" || missing="$missing $p:bash:$c"
			grep -q -- "$c" "$TOP/completions/zsh/_qsb" || missing="$missing $p:zsh:$c"
		done
	done
	[ -z "$missing" ] || fail "undocumented:$missing"
}

@test "man pages are mandoc -Tlint -Wwarning clean" {
	command -v mandoc >/dev/null || fail "mandoc is not installed (tools/deps.sh check)"
	run mandoc -Tlint -Wwarning "$TOP"/man/*
	assert_success
	[ -z "$output" ]
}

@test "completions pass shellcheck and zsh -n" {
	command -v shellcheck >/dev/null || fail "shellcheck is not installed"
	command -v zsh >/dev/null || fail "zsh is not installed"
	run shellcheck -s bash "$TOP"/completions/bash/*
	assert_success
	run zsh -n "$TOP/completions/zsh/_qsb"
	assert_success
}

@test "bash completion offers commands, options and session ids" {
	qsb-workspace create alpha >/dev/null
	run bash -c "source '$TOP/completions/bash/qsb-workspace'
		COMP_WORDS=(qsb-workspace in); COMP_CWORD=1; _qsb_workspace; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(qsb-workspace info ''); COMP_CWORD=2; _qsb_workspace; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(qsb-workspace create x --backend ''); COMP_CWORD=4; _qsb_workspace; echo \"\${COMPREPLY[*]}\""
	assert_success
	assert_line --index 0 "info"
	assert_line --index 1 "alpha"
	assert_line --index 2 "auto bwrap docker firejail native none"
}

@test "make install DESTDIR PREFIX installs everything; uninstall removes exactly that" {
	local d=$BATS_TEST_TMPDIR/inst
	# QSB_MAKEVARS names the build under test (make asan sets it), so that
	# install does not rebuild anything
	# shellcheck disable=SC2086
	run make -s -C "$TOP" install DESTDIR="$d" PREFIX=/usr ${QSB_MAKEVARS:-}
	assert_success
	for p in $(programs); do
		[ -x "$d/usr/bin/$p" ] || fail "missing $p"
		[ -f "$d/usr/share/man/man1/$p.1" ] || fail "missing $p.1"
		[ -f "$d/usr/share/bash-completion/completions/$p" ] || fail "missing completion"
	done
	[ -f "$d/usr/share/man/man7/qsb.7" ]
	[ -f "$d/usr/share/man/man5/qsb-policy.5" ]
	for p in strict compat permissive; do
		jq -e . "$d/usr/share/qsb/policies/$p.json" >/dev/null
	done
	[ -f "$d/usr/share/zsh/vendor-completions/_qsb" ]
	"$d/usr/bin/qsb-workspace" --version
	run make -s -C "$TOP" uninstall DESTDIR="$d" PREFIX=/usr
	assert_success
	run find "$d" -type f
	[ -z "$output" ] || fail "left behind: $output"
	[ ! -e "$d/usr/share/qsb" ] || fail "left behind: $d/usr/share/qsb"
}

@test "tools/deps.sh as non-root prints the exact apt-get line and fails" {
	local fake=$BATS_TEST_TMPDIR/fake
	mkdir -p "$fake"
	# a dpkg that knows only make and bats; an id that is not root
	printf '#!/bin/sh\ncase "$3" in make|bats) echo "install ok installed";; esac\n' >"$fake/dpkg-query"
	printf '#!/bin/sh\necho 1000\n' >"$fake/id"
	printf '#!/bin/sh\necho "apt-get must not run" >&2; exit 99\n' >"$fake/apt-get"
	chmod +x "$fake"/*
	run --separate-stderr env PATH="$fake:$PATH" sh "$TOP/tools/deps.sh" build check
	assert_failure 1
	[[ "$stderr" == *"run: sudo apt-get install -y gcc pkg-config libbsd-dev libmd-dev libjsmn-dev bats-assert"* ]] ||
		fail "$stderr"
	[[ "$stderr" != *"apt-get must not run"* ]]
	run --separate-stderr env PATH="$fake:$PATH" sh "$TOP/tools/deps.sh" bogus
	assert_failure 2
}
