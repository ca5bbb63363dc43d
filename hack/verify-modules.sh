#!/usr/bin/env bash
# Fails when `go mod tidy` would change go.mod or go.sum of the operator's
# module, of any tool module under hack/tools, or of test/monitoring.
# `go mod tidy -diff` only reports, so a dirty tree is checked as it is and
# never edited.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

status=0
for gomod in go.mod hack/tools/*/go.mod test/monitoring/go.mod; do
	dir=$(dirname "${gomod}")
	if ! out=$(cd "${dir}" && go mod tidy -diff 2>&1); then
		echo "not tidy: ${dir} (run 'go mod tidy' there)" >&2
		echo "${out}" >&2
		status=1
	fi
done
exit "${status}"
