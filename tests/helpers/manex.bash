# Runs the EXAMPLES of a man page as a test: in its literal displays, a
# block that is a JSON object is the file the examples name (given as the
# second argument); a line "$ command" is run with bash and the lines after
# it, up to the next "$ ", are its exact output.
# shellcheck shell=bash

# man_literal_blocks FILE: the literal displays of the EXAMPLES section,
# separated by lines "--", with mdoc's escapes undone.
man_literal_blocks() {
	awk '
		/^\.Sh / { inex = ($2 == "EXAMPLES") }
		inex && /^\.Bd -literal/ { inblk = 1; next }
		inex && /^\.Ed/ { if (inblk) print "--"; inblk = 0; next }
		inex && inblk { print }
	' "$1" | sed -e 's/\\e/\\/g' -e "s/\\\\(aq/'/g" -e 's/\\(dq/"/g'
}

# run_man_examples FILE JSONNAME: runs them in the current directory.
run_man_examples() {
	local file=$1 jsonname=$2 block="" line cmd="" expect="" n=0
	flush_cmd() {
		[ -n "$cmd" ] || return 0
		local got
		got=$(bash -c "$cmd") || true	# some examples show a failure
		n=$((n + 1))
		if [ "$got" != "${expect%$'\n'}" ]; then
			fail "example '$cmd': expected
${expect%$'\n'}
got
$got"
		fi
		cmd=""
		expect=""
	}
	while IFS= read -r line; do
		if [ "$line" = "--" ]; then
			if [[ "$block" == "{"* ]]; then
				printf '%s' "$block" >"$jsonname"
			fi
			flush_cmd
			block=""
			continue
		fi
		block+="$line"$'\n'
		if [[ "$line" == '$ '* ]]; then
			flush_cmd
			cmd=${line#\$ }
		elif [ -n "$cmd" ]; then
			expect+="$line"$'\n'
		fi
	done < <(man_literal_blocks "$file")
	[ "$n" -gt 0 ] || fail "no examples found in $file"
}
