#!/usr/bin/env bash
# Builds the operator's OCI image for linux/amd64 and linux/arm64 without a
# container engine (hack/tools/ociimage) and prints the image index digest.
#
#   hack/image.sh OUT_DIR VERSION [LDFLAGS]
#
# Writes OUT_DIR/image (an OCI image layout), OUT_DIR/<name>_<version>.oci.tar
# (the same layout as one archive: skopeo/podman "oci-archive:", crane,
# containerd import) and OUT_DIR/sbom/ (an SPDX 2.3 document per platform;
# each is also inside its image at /usr/share/sbom/manager.spdx.json).
# Progress goes to stderr; stdout carries only the digest.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${here}/.." && pwd)
out=${1:?usage: hack/image.sh OUT_DIR VERSION [LDFLAGS]}
version=${2:?usage: hack/image.sh OUT_DIR VERSION [LDFLAGS]}
ldflags=${3:-}
platforms=${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}
mkdir -p "${out}"
out=$(cd "${out}" && pwd)

revision=$(git -C "${root}" rev-parse HEAD 2>/dev/null || echo unknown)
# The commit time, so that the same commit gives the same image bytes.
created=$(git -C "${root}" log -1 --format=%cI 2>/dev/null | xargs -r date -u +%Y-%m-%dT%H:%M:%SZ -d || true)

jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
args=()
pids=()
for p in ${platforms}; do
	os=${p%/*} arch=${p#*/}
	bin="${out}/bin/manager_${os}_${arch}"
	while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
	(
		start=$SECONDS
		cd "${root}" && CGO_ENABLED=0 GOOS=${os} GOARCH=${arch} go build -trimpath -ldflags "-s -w ${ldflags}" -o "${bin}" ./cmd/manager
		echo ">> built the manager for ${p} in $((SECONDS - start))s" >&2
	) >&2 &
	pids+=($!)
	args+=(-binary "${p}=${bin}")
done
failed=0
for pid in "${pids[@]}"; do wait "${pid}" || failed=1; done
if (( failed )); then
	echo "image: building the manager failed" >&2
	exit 1
fi

echo ">> writing the OCI image (${platforms})" >&2
(cd "${here}/tools/ociimage" && go run . \
	-out "${out}/image" \
	-archive "${out}/mcp-catalog-operator_${version}.oci.tar" \
	-sbom-dir "${out}/sbom" \
	-version "${version}" -revision "${revision}" ${created:+-created "${created}"} \
	"${args[@]}")
rm -rf "${out}/bin"
