#!/bin/sh
# A short tour of qsb on a throw-away root: make demo.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
PATH="$top/bin:$PATH"
QSB_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/qsb-demo.XXXXXX")
export PATH QSB_ROOT
trap 'rm -rf "$QSB_ROOT"' EXIT INT TERM

if [ -t 1 ]; then
	say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
else
	say() { printf '\n$ %s\n' "$*"; }
fi

say qsb-workspace create demo --mode strict --no-network
qsb-workspace create demo --mode strict --no-network --pretty |
    sed -n '1,3p;/sandboxConfig/,/}/p'

say "printf 'echo hello from the sandbox\\n' | qsb-workspace write demo projects/hello.sh"
printf 'echo hello from the sandbox\n' | qsb-workspace write demo projects/hello.sh

say qsb-workspace ls demo projects
qsb-workspace ls demo projects

say qsb-exec demo -- sh hello.sh
qsb-exec demo -- sh hello.sh | jq -c '{stdout, exitCode, backend, mode, duration}'

say qsb-exec demo -- sh -c "'id; ls /; cat /proc/self/status | grep -E \"CapEff|NoNewPrivs|Seccomp:\"'"
qsb-exec demo -- sh -c 'id; ls /; grep -E "CapEff|NoNewPrivs|Seccomp:" /proc/self/status' |
    jq -r .stdout

m="qsb-demo-escape-$$"
say qsb-exec demo -- sh -c "'echo pwned > /etc/$m; echo pwned > \$HOME/../../meta/workspace.json'" "   # escapes"
qsb-exec demo -- sh -c "echo pwned > /etc/$m; echo pwned > \$HOME/../../meta/workspace.json" |
    jq -r '.stderr, "exit status \(.exitCode)"'
if [ -e "/etc/$m" ]; then
	echo "demo: the escape was NOT refused" >&2
	exit 1
fi
echo "(on the host: /etc/$m does not exist)"

say qsb-workspace read demo ../../etc/passwd "   # an escape through the files API"
if qsb-workspace read demo ../../etc/passwd; then
	echo "demo: the escape was NOT refused" >&2
	exit 1
else
	echo "(refused with exit status $?)"
fi

say qsb-workspace destroy demo
qsb-workspace destroy demo
