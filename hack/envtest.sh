#!/usr/bin/env bash
# Ensures the test control plane (kube-apiserver and etcd) exists and prints
# the directory that holds it, for KUBEBUILDER_ASSETS.
#
# Where the network allows it, setup-envtest downloads the release binaries
# (set ENVTEST_DOWNLOAD=0 to skip the attempt); where it does not, both are
# built from the Go module proxy through the pinned tool modules under
# hack/tools/. Either way they are cached outside the repository in the
# setup-envtest store layout (<store>/k8s/<version>-<os>-<arch>/), so a second
# run reuses them.
#
# --with-controller-manager also builds kube-controller-manager (setup-envtest
# has no release of it) into the same directory, from the same pinned module
# as kube-apiserver. Only the test that needs a real garbage collector runs
# it, so suites that do not need it pay nothing for it.
#
# A KUBEBUILDER_ASSETS that already holds both binaries wins.
# Progress goes to stderr; stdout carries only the directory.
set -euo pipefail

K8S_VERSION=${ENVTEST_K8S_VERSION:-1.37.2}
with_kcm=false
for arg in "$@"; do
	case "${arg}" in
	--with-controller-manager) with_kcm=true ;;
	*) echo "usage: $0 [--with-controller-manager]" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

os=$(go env GOOS)
arch=$(go env GOARCH)
store=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
dir="${store}/k8s/${K8S_VERSION}-${os}-${arch}"
if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "${KUBEBUILDER_ASSETS}/kube-apiserver" && -x "${KUBEBUILDER_ASSETS}/etcd" ]]; then
	if ! ${with_kcm} || [[ -x "${KUBEBUILDER_ASSETS}/kube-controller-manager" ]]; then
		echo "${KUBEBUILDER_ASSETS}"
		exit 0
	fi
	# The given control plane lacks only the controller manager: add it there.
	dir=${KUBEBUILDER_ASSETS}
fi
mkdir -p "${dir}"
# One build at a time: a second invocation (a parallel make, another
# checkout) waits for the first and then finds the binaries there, instead
# of compiling the same hundreds of packages beside it.
exec 9>"${dir}/.lock"
flock 9

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

# download asks setup-envtest for the release binaries. It is bounded in
# time, so a machine that cannot reach the download site only loses a moment
# before falling back to the build.
SETUP_ENVTEST_VERSION=v0.25.1
download() {
	[[ "${ENVTEST_DOWNLOAD:-1}" != 0 ]] || return 1
	[[ -x "${dir}/kube-apiserver" && -x "${dir}/etcd" ]] && return 0
	echo ">> trying setup-envtest ${SETUP_ENVTEST_VERSION} to download the control plane ${K8S_VERSION}" >&2
	local got
	if got=$(cd "${here}" && GOFLAGS=-mod=mod timeout 120 go run "sigs.k8s.io/controller-runtime/tools/setup-envtest@${SETUP_ENVTEST_VERSION}" \
		use "${K8S_VERSION}" --bin-dir "${store}" -p path 2>/dev/null) && [[ -x "${got}/kube-apiserver" && -x "${got}/etcd" ]]; then
		if [[ "${got}" != "${dir}" ]]; then
			cp -f "${got}/kube-apiserver" "${got}/etcd" "${dir}/"
		fi
		echo ">> downloaded the control plane into ${dir}" >&2
		return 0
	fi
	echo ">> no download (offline, or no release of ${K8S_VERSION}); building from the Go module proxy instead" >&2
	return 1
}
download || true

k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=${K8S_VERSION%%.*} -X k8s.io/component-base/version.gitMinor=$(echo "${K8S_VERSION}" | cut -d. -f2)"
build kube-apiserver kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${k8s_ldflags}"
build etcd etcd go.etcd.io/etcd/server/v3 "-s -w"
if ${with_kcm}; then
	# The same pinned module as kube-apiserver, so the two share a version
	# and most of their build cache.
	build kube-controller-manager kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager "${k8s_ldflags}"
fi

echo "${dir}"
