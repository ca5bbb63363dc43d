#!/usr/bin/env bash
# Fails when regenerating deepcopy code, CRDs or RBAC, or the chart's copies of
# them, would change the working tree. The tree is left as it was either way.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

paths=(api config/crd/bases config/rbac/role.yaml
	charts/mcp-catalog-operator/templates/crds
	charts/mcp-catalog-operator/templates/_manager_rules.tpl
	docs/api.md)
before=$(mktemp -d)
trap 'rm -rf "${before}"' EXIT
for p in "${paths[@]}"; do
	[ -e "$p" ] && mkdir -p "${before}/$(dirname "$p")" && cp -r "$p" "${before}/$p"
done

# Put the tree back; verification must not edit it.
restore() {
	for p in "${paths[@]}"; do
		rm -rf "$p"
		if [ -e "${before}/$p" ]; then cp -r "${before}/$p" "$p"; fi
	done
}

if ! make -s generate manifests >/dev/null; then
	restore
	echo "regenerating failed; the tree is unchanged" >&2
	exit 1
fi

stale=0
for p in "${paths[@]}"; do
	if ! diff -r "${before}/$p" "$p" >/dev/null 2>&1; then
		echo "stale: $p" >&2
		stale=1
	fi
done
if [ "${stale}" -ne 0 ]; then
	restore
	echo "generated files are stale: run 'make generate manifests'" >&2
	exit 1
fi
