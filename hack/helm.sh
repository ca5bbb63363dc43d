#!/usr/bin/env bash
# Ensures a helm binary built from the Go module proxy (pinned in
# hack/tools/helm) and prints its path. Cached beside the test control plane.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(awk '/helm.sh\/helm\/v3 /{print $2; exit}' "${here}/tools/helm/go.mod")
store=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
dir="${store}/helm/${version}-$(go env GOOS)-$(go env GOARCH)"
if [[ ! -x "${dir}/helm" ]]; then
	mkdir -p "${dir}"
	echo ">> building helm ${version} from the Go module proxy (first run only; about a minute)" >&2
	tmp=$(mktemp "${dir}/.helm.XXXXXX")
	(cd "${here}/tools/helm" && go build -trimpath -ldflags "-s -w" -o "${tmp}" helm.sh/helm/v3/cmd/helm) >&2
	chmod +x "${tmp}"
	mv -f "${tmp}" "${dir}/helm"
fi
echo "${dir}/helm"
