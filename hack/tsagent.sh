#!/usr/bin/env bash
# Ensures the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk,
# pinned below) for test/tsagent, the tests' TypeScript MCP client, and the
# TypeScript reference server (npm @modelcontextprotocol/server-everything,
# pinned below, the tests' TypeScript MCP upstream), and prints the
# directory that holds their node_modules.
#
# It is installed from the npm registry on first use, beside the test
# control plane (<store>/tsagent/sdk-<version>/), so a second run only
# checks that it is there. npm runs no install scripts. The install is made
# in a temporary directory and renamed into place once complete: a failed
# or interrupted install leaves nothing that looks installed.
#
# Needs node and npm. Progress goes to stderr; stdout carries only the
# directory.
set -euo pipefail

SDK_VERSION=1.32.2
EVERYTHING_VERSION=2026.8.31
store=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
name="sdk-${SDK_VERSION}-everything-${EVERYTHING_VERSION}"
dir="${store}/tsagent/${name}"
marker="node_modules/@modelcontextprotocol/sdk/package.json"
marker2="node_modules/@modelcontextprotocol/server-everything/package.json"

if [[ -f "${dir}/${marker}" && -f "${dir}/${marker2}" ]]; then
	echo "${dir}"
	exit 0
fi
for tool in node npm; do
	if ! command -v "${tool}" >/dev/null 2>&1; then
		echo "hack/tsagent.sh: ${tool} is not on PATH; the TypeScript MCP client needs Node.js 20 or later and npm" >&2
		exit 1
	fi
done

mkdir -p "${store}/tsagent"
# One install at a time (see hack/envtest.sh); a waiter finds it installed.
exec 9>"${store}/tsagent/.lock"
flock 9
if [[ ! -f "${dir}/${marker}" || ! -f "${dir}/${marker2}" ]]; then
	echo ">> installing @modelcontextprotocol/sdk@${SDK_VERSION} and server-everything@${EVERYTHING_VERSION} with npm into ${dir} (first run only)" >&2
	start=$SECONDS
	# What an install killed half-way left (we hold the lock: none is running).
	rm -rf "${store}/tsagent/.${name}".*
	tmp=$(mktemp -d "${store}/tsagent/.${name}.XXXXXX")
	trap 'rm -rf "${tmp}"' EXIT
	# A package.json of its own, so npm installs here and not into a
	# package.json it finds further up.
	echo '{"private": true}' >"${tmp}/package.json"
	# Both in one install: the server's own dependency on the SDK (a
	# caret range) resolves to the pinned SDK, not to another copy.
	if ! (cd "${tmp}" && npm install --no-audit --no-fund --ignore-scripts --save-exact \
		"@modelcontextprotocol/sdk@${SDK_VERSION}" "@modelcontextprotocol/server-everything@${EVERYTHING_VERSION}") >&2; then
		echo ">> installing @modelcontextprotocol/sdk@${SDK_VERSION} and server-everything@${EVERYTHING_VERSION} failed" >&2
		exit 1
	fi
	for m in "${marker}" "${marker2}"; do
		if [[ ! -f "${tmp}/${m}" ]]; then
			echo ">> npm finished, but ${m} is missing" >&2
			exit 1
		fi
	done
	# A directory left by something else (not complete, or the check above
	# would have found it) is replaced.
	rm -rf "${dir}"
	mv -T "${tmp}" "${dir}"
	trap - EXIT
	echo ">> installed @modelcontextprotocol/sdk@${SDK_VERSION} and server-everything@${EVERYTHING_VERSION} in $((SECONDS - start))s" >&2
fi
echo "${dir}"
