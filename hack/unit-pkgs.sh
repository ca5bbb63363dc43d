#!/usr/bin/env bash
# Prints the packages whose tests need no control plane: every package of the
# module except those whose test binary links envtest, directly or through a
# shared test harness. Computed, so that a new package is covered on its own.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

envtest=sigs.k8s.io/controller-runtime/pkg/envtest
needs=$(go list -test -f "{{if .ForTest}}{{range .Deps}}{{if eq . \"${envtest}\"}}{{\$.ForTest}}{{\"\\n\"}}{{end}}{{end}}{{end}}" ./... | sort -u)
go list ./... | grep -vxF -f <(printf '%s\n' "${needs}" | grep .) || true
