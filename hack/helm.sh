#!/usr/bin/env bash
# Ensures a helm binary built from the Go module proxy (pinned in
# hack/tools/helm) and prints its path. Cached beside the test control plane.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The pinned version is the third field of "require helm.sh/helm/v3 vX.Y.Z".
version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" {print $3; exit}' "${here}/tools/helm/go.mod")
if [[ -z "${version}" ]]; then
	echo "hack/helm.sh: no helm.sh/helm/v3 requirement in hack/tools/helm/go.mod" >&2
	exit 1
fi
store=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
dir="${store}/helm/${version}-$(go env GOOS)-$(go env GOARCH)"
if [[ ! -x "${dir}/helm" ]]; then
	mkdir -p "${dir}"
	# One build at a time (see hack/envtest.sh); a waiter finds it built.
	exec 9>"${dir}/.lock"
	flock 9
fi
if [[ ! -x "${dir}/helm" ]]; then
	echo ">> building helm ${version} from the Go module proxy (first run only; about a minute)" >&2
	tmp=$(mktemp "${dir}/.helm.XXXXXX")
	# What helm's own Makefile stamps in: its version, and the Kubernetes
	# version helm template and lint assume without --kube-version (that of
	# the client-go it is built with; unstamped it would be 1.20).
	kminor=$(awk '$1 == "k8s.io/client-go" {split($2, v, "."); print v[2]; exit}' "${here}/tools/helm/go.mod")
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${version}"
	for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
		ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${kminor}"
	done
	if ! (cd "${here}/tools/helm" && go build -trimpath -ldflags "${ldflags}" -o "${tmp}" helm.sh/helm/v3/cmd/helm) >&2; then
		rm -f "${tmp}"
		echo ">> building helm failed" >&2
		exit 1
	fi
	chmod +x "${tmp}"
	mv -f "${tmp}" "${dir}/helm"
fi
echo "${dir}/helm"
