#!/usr/bin/env bash
# Reads what `go build -v` writes (the path of each package as it is
# compiled, and the compiler's messages) and prints a line every 25
# packages, so that a first build, which compiles Kubernetes' libraries
# for several minutes, is not silent. Any other line passes through.
set -uo pipefail
n=0
start=${SECONDS}
while IFS= read -r line; do
	if [[ ${line} =~ ^[A-Za-z0-9._~/-]+$ ]]; then
		n=$((n + 1))
		if ((n % 25 == 0)); then
			echo ">> compiled ${n} packages in $((SECONDS - start))s (now ${line})"
		fi
	else
		echo "${line}"
	fi
done
if ((n == 1)); then
	echo ">> compiled 1 package in $((SECONDS - start))s"
elif ((n > 1)); then
	echo ">> compiled ${n} packages in $((SECONDS - start))s"
fi
exit 0
