#!/usr/bin/env bash
# Ensures the pinned golangci-lint (with the kube-api-linter plugin compiled
# in; see hack/tools/golangci-lint) is built from the Go module proxy, and
# prints its path. Cached beside the test control plane, keyed by the tool
# module's go.mod, go.sum and main.go, so a version bump rebuilds it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mod="${here}/tools/golangci-lint"
version=$(awk '$1 == "github.com/golangci/golangci-lint/v2" {print $2; exit}' "${mod}/go.mod")
if [[ -z "${version}" ]]; then
	echo "hack/golangci-lint.sh: no golangci-lint requirement in ${mod}/go.mod" >&2
	exit 1
fi
key=$(cat "${mod}/go.mod" "${mod}/go.sum" "${mod}/main.go" | sha256sum | cut -c1-12)
store=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
dir="${store}/golangci-lint/${version}-${key}-$(go env GOOS)-$(go env GOARCH)"
if [[ ! -x "${dir}/golangci-lint" ]]; then
	mkdir -p "${dir}"
	# One build at a time (see hack/envtest.sh); a waiter finds it built.
	exec 9>"${dir}/.lock"
	flock 9
fi
if [[ ! -x "${dir}/golangci-lint" ]]; then
	echo ">> building golangci-lint ${version} with kube-api-linter from the Go module proxy (first run only; several minutes)" >&2
	tmp=$(mktemp "${dir}/.golangci-lint.XXXXXX")
	if ! (cd "${mod}" && go build -trimpath -o "${tmp}" .) >&2; then
		rm -f "${tmp}"
		echo ">> building golangci-lint failed" >&2
		exit 1
	fi
	chmod +x "${tmp}"
	mv -f "${tmp}" "${dir}/golangci-lint"
fi
echo "${dir}/golangci-lint"
