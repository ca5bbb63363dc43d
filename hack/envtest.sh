#!/usr/bin/env bash
# Ensures the test control plane (kube-apiserver and etcd) exists and prints
# the directory that holds it, for KUBEBUILDER_ASSETS.
#
# Binary downloads are not assumed to work, so both are built from the Go
# module proxy through the pinned tool modules under hack/tools/. They are
# cached outside the repository in the setup-envtest store layout
# (<store>/k8s/<version>-<os>-<arch>/), so a second run reuses them.
#
# A KUBEBUILDER_ASSETS that already holds both binaries wins.
# Progress goes to stderr; stdout carries only the directory.
set -euo pipefail

K8S_VERSION=${ENVTEST_K8S_VERSION:-1.37.2}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "${KUBEBUILDER_ASSETS}/kube-apiserver" && -x "${KUBEBUILDER_ASSETS}/etcd" ]]; then
	echo "${KUBEBUILDER_ASSETS}"
	exit 0
fi

os=$(go env GOOS)
arch=$(go env GOARCH)
store=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
dir="${store}/k8s/${K8S_VERSION}-${os}-${arch}"
mkdir -p "${dir}"

build() { # build <name> <tool module dir> <package> <ldflags>
	local name=$1 mod=$2 pkg=$3 ldflags=$4
	if [[ -x "${dir}/${name}" ]]; then
		return 0
	fi
	echo ">> building ${name} from the Go module proxy into ${dir} (first run only; several minutes on 2 cores)" >&2
	local start=$SECONDS tmp
	tmp=$(mktemp "${dir}/.${name}.XXXXXX")
	# A heartbeat, so a long silent compile does not look like a hang.
	( while sleep 30; do echo ">> still building ${name} ($((SECONDS - start))s)" >&2; done ) &
	local beat=$!
	if ! (cd "${here}/tools/${mod}" && go build -trimpath -ldflags "${ldflags}" -o "${tmp}" "${pkg}") >&2; then
		kill "${beat}" 2>/dev/null || true
		rm -f "${tmp}"
		echo ">> building ${name} failed" >&2
		return 1
	fi
	kill "${beat}" 2>/dev/null || true
	chmod +x "${tmp}"
	mv -f "${tmp}" "${dir}/${name}"
	echo ">> built ${name} in $((SECONDS - start))s" >&2
}

build kube-apiserver kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
	"-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=${K8S_VERSION%%.*} -X k8s.io/component-base/version.gitMinor=$(echo "${K8S_VERSION}" | cut -d. -f2)"
build etcd etcd go.etcd.io/etcd/server/v3 "-s -w"

echo "${dir}"
