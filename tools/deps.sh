#!/bin/sh
# Makes sure the Debian packages a task needs are installed.
# usage: tools/deps.sh GROUP...   (build check demo lint bench sandbox)
# As root it installs what is missing; otherwise it prints the exact
# apt-get line and fails.
set -eu

pkgs=""
for group in "$@"; do
	case $group in
	build)   pkgs="$pkgs gcc make pkg-config libbsd-dev libmd-dev libjsmn-dev" ;;
	check)   pkgs="$pkgs bats bats-assert bats-support jq util-linux procps mandoc shellcheck zsh python3 git" ;;
	demo)    pkgs="$pkgs jq" ;;
	lint)    pkgs="$pkgs mandoc shellcheck zsh" ;;
	bench)   pkgs="$pkgs hyperfine python3" ;;
	sandbox) pkgs="$pkgs bubblewrap" ;;
	*) echo "deps.sh: unknown group '$group'" >&2; exit 2 ;;
	esac
done

command -v dpkg-query >/dev/null 2>&1 || exit 0	# not Debian: the build says what fails

missing=""
for p in $pkgs; do
	case " $missing " in *" $p "*) continue ;; esac
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
	    grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "qsb: missing Debian packages:$missing" >&2
	echo "qsb: run: sudo apt-get install -y$missing" >&2
	exit 1
fi

echo "qsb: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! apt-get install -y -q --no-install-recommends $missing >&2; then
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends $missing >&2
fi
