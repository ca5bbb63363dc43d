#!/usr/bin/env bash
# Writes a release into DIST (default dist/):
#   image/, mcp-catalog-operator_<v>.oci.tar, sbom/   the OCI image (hack/image.sh)
#   install.yaml                                       CRDs, RBAC, Deployment; image pinned by digest
#   mcp-catalog-operator-<chart version>.tgz           the Helm chart, image pinned by digest
#   kubectl-mcp_<os>_<arch>.tar.gz|.zip                the kubectl plugin, 3 OSes x 2 architectures
#   checksums.txt                                      sha256 of every file above but the image layout
#   krew/mcp.yaml                                      the krew manifest with each archive's sha256
#
#   VERSION=vX.Y.Z hack/release.sh
#   hack/release.sh --platforms    prints the plugin's platforms of every release
#
# Refuses to run without a CHANGELOG.md entry for VERSION, so nothing is
# released that nobody described.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${here}/.." && pwd)
every_cli_platform="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
if [[ ${1:-} == --platforms ]]; then
	echo "${every_cli_platform}"
	exit 0
fi
version=${VERSION:?VERSION=vX.Y.Z is required}
dist=${DIST:-${root}/dist}
changelog=${CHANGELOG:-${root}/CHANGELOG.md}
image_repo=${IMAGE_REPO:-ghcr.io/mcp-catalog/mcp-catalog-operator}
release_url=${RELEASE_URL:-https://github.com/mcp-catalog/operator/releases/download}
cli_platforms=${CLI_PLATFORMS:-${every_cli_platform}}
ldflags="-X github.com/mcp-catalog/operator/internal/version.stamped=${version}"
# Builds run in parallel, JOBS at a time (default: one per core).
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

if [[ ! "${version}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "release: VERSION must be a semantic version with a leading v (v1.2.3), got ${version}" >&2
	exit 2
fi
semver=${version#v}
if ! grep -Eq "^## \[?v?${semver//./\\.}\]?([[:space:]]|$)" "${changelog}" 2>/dev/null; then
	echo "release: ${changelog##*/} has no entry for ${version}; add a '## ${version}' section first" >&2
	exit 2
fi
command -v kubectl >/dev/null || { echo "release: kubectl (for kubectl kustomize) is not on PATH" >&2; exit 2; }

rm -rf "${dist}"
mkdir -p "${dist}/krew"

digest=$(JOBS=${jobs} "${here}/image.sh" "${dist}" "${version}" "${ldflags}")
echo ">> image ${image_repo}@${digest}" >&2

echo ">> install.yaml" >&2
overlay=$(mktemp -d)
trap 'rm -rf "${overlay}"' EXIT
cp -r "${root}/config" "${overlay}/config"
cat > "${overlay}/kustomization.yaml" <<YAML
resources:
  - config/default
images:
  - name: mcp-catalog-operator
    newName: ${image_repo}
    digest: ${digest}
YAML
{
	echo "# mcp-catalog-operator ${version}: kubectl apply --server-side -f install.yaml"
	kubectl kustomize "${overlay}"
} > "${dist}/install.yaml"
if ! grep -q "image: ${image_repo}@${digest}" "${dist}/install.yaml"; then
	echo "release: install.yaml does not pin the image digest" >&2
	exit 1
fi

echo ">> chart" >&2
helm=$("${here}/helm.sh")
cp -r "${root}/charts/mcp-catalog-operator" "${overlay}/chart"
sed -i -E "s|^(  digest:).*|\1 \"${digest}\"|" "${overlay}/chart/values.yaml"
grep -q "^  digest: \"${digest}\"" "${overlay}/chart/values.yaml" || { echo "release: could not pin the chart's image digest" >&2; exit 1; }
"${helm}" package "${overlay}/chart" --version "${semver}" --app-version "${version}" -d "${dist}" >&2

echo ">> kubectl-mcp for ${cli_platforms// /, } (${jobs} at a time)" >&2
archiver="${overlay}/archive"
(cd "${root}" && go build -o "${archiver}" ./hack/archive)
# Each platform is a build of its own; one per core at a time keeps the
# cores busy through the stretches where one build waits on a single
# package or links.
build_cli() { # build_cli <os> <arch> <out>
	local start=$SECONDS
	(cd "${root}" && CGO_ENABLED=0 GOOS=$1 GOARCH=$2 go build -trimpath -ldflags "-s -w ${ldflags}" -o "$3" ./cmd/kubectl-mcp) >&2
	echo ">> built kubectl-mcp for $1/$2 in $((SECONDS - start))s" >&2
}
pids=()
for p in ${cli_platforms}; do
	os=${p%/*} arch=${p#*/}
	exe=kubectl-mcp; [[ ${os} == windows ]] && exe=kubectl-mcp.exe
	mkdir -p "${overlay}/cli/${os}_${arch}"
	while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
	build_cli "${os}" "${arch}" "${overlay}/cli/${os}_${arch}/${exe}" &
	pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "${pid}" || failed=1; done
if (( failed )); then
	echo "release: building kubectl-mcp failed" >&2
	exit 1
fi
platform_yaml=""
for p in ${cli_platforms}; do
	os=${p%/*} arch=${p#*/}
	exe=kubectl-mcp; [[ ${os} == windows ]] && exe=kubectl-mcp.exe
	stage="${overlay}/cli/${os}_${arch}"
	files=("${exe}=${stage}/${exe}" "README.md=${root}/README.md")
	[[ -f "${root}/LICENSE" ]] && files+=("LICENSE=${root}/LICENSE")
	# kubectl's plugin completion runs kubectl_complete-mcp; Windows users
	# copy kubectl-mcp.exe under that name instead (docs/cli.md).
	[[ ${os} != windows ]] && files+=("kubectl_complete-mcp=${root}/cmd/kubectl-mcp/kubectl_complete-mcp")
	archive="kubectl-mcp_${os}_${arch}.tar.gz"
	[[ ${os} == windows ]] && archive="kubectl-mcp_${os}_${arch}.zip"
	"${archiver}" -o "${dist}/${archive}" "${files[@]}"
	sum=$(sha256sum "${dist}/${archive}" | cut -d' ' -f1)
	platform_yaml+="    - selector:
        matchLabels: {os: ${os}, arch: ${arch}}
      uri: ${release_url}/${version}/${archive}
      sha256: \"${sum}\"
      bin: ${exe}
"
done

echo ">> krew manifest and checksums" >&2
awk -v version="${version}" -v platforms="${platform_yaml}" '
	/\{\{VERSION\}\}/ { gsub(/\{\{VERSION\}\}/, version) }
	/^ *\{\{PLATFORMS\}\}$/ { printf "%s", platforms; next }
	{ print }
' "${root}/plugins/krew/mcp.yaml.tmpl" > "${dist}/krew/mcp.yaml"
(cd "${dist}" && find . -maxdepth 1 -type f ! -name checksums.txt -printf '%f\n' | sort | xargs sha256sum > checksums.txt)
(cd "${dist}" && find sbom -type f | sort | xargs sha256sum >> checksums.txt)
echo ">> wrote ${dist} (image ${image_repo}@${digest})" >&2
