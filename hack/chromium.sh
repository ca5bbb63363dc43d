#!/usr/bin/env bash
# Ensures a headless-capable Chromium for the console's browser tests and
# prints the path of its binary.
#
# The browser is Debian's (or Ubuntu's) chromium package, installed on first
# use with apt-get: it is the one build every machine of the project can get
# from a package registry, and the distribution keeps it patched. apt installs
# it system-wide, so what is cached is the path found, recorded beside the
# test control plane (<store>/chromium/path); a second run only checks that
# the binary is still there.
#
# CHROMIUM, when it names an executable, wins (any Chromium or Chrome build).
# Installing needs root; as another user the script says what to run instead.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail

if [[ -n "${CHROMIUM:-}" ]]; then
	if [[ -x "${CHROMIUM}" ]]; then
		echo "${CHROMIUM}"
		exit 0
	fi
	echo "hack/chromium.sh: CHROMIUM=${CHROMIUM} is not an executable file" >&2
	exit 1
fi

store=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
record="${store}/chromium/path"
if [[ -f "${record}" ]]; then
	recorded=$(<"${record}")
	if [[ -x "${recorded}" ]]; then
		echo "${recorded}"
		exit 0
	fi
fi

find_chromium() {
	local name
	for name in chromium chromium-browser; do
		if command -v "${name}" >/dev/null 2>&1; then
			command -v "${name}"
			return 0
		fi
	done
	return 1
}

if ! bin=$(find_chromium); then
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "hack/chromium.sh: Chromium is not installed and this system has no apt-get." >&2
		echo "  Install Chromium (or Chrome) and run again with CHROMIUM=/path/to/chromium." >&2
		exit 1
	fi
	if [[ "$(id -u)" != 0 ]]; then
		echo "hack/chromium.sh: Chromium is not installed, and installing it needs root." >&2
		echo "  Run:  sudo apt-get update && sudo apt-get install -y chromium" >&2
		echo "  or set CHROMIUM=/path/to/chromium (any Chromium or Chrome build)." >&2
		exit 1
	fi
	echo ">> installing Debian's chromium with apt-get (first run only)" >&2
	start=$SECONDS
	export DEBIAN_FRONTEND=noninteractive
	# The sandbox helper it recommends is of no use headless as root, where
	# the tests turn the sandbox off.
	if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >&2; then
		echo ">> installing chromium failed" >&2
		exit 1
	fi
	echo ">> installed chromium in $((SECONDS - start))s" >&2
	if ! bin=$(find_chromium); then
		echo "hack/chromium.sh: apt-get installed chromium, but no chromium binary is on PATH" >&2
		exit 1
	fi
fi

# A binary that cannot start (a missing library) is reported here, not as a
# hung browser test.
if ! "${bin}" --version >/dev/null 2>&1; then
	echo "hack/chromium.sh: ${bin} --version fails; the installation is broken:" >&2
	"${bin}" --version >&2 || true
	exit 1
fi
mkdir -p "$(dirname "${record}")"
echo "${bin}" >"${record}.tmp"
mv -f "${record}.tmp" "${record}"
echo "${bin}"
