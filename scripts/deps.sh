#!/usr/bin/env bash
# deps.sh: make sure the system prerequisites scalegate builds against are
# present (Go toolchain, a C compiler, pkg-config, libenet via pkg-config),
# and, with SCALEGATE_NEED_CHROMIUM=1 (set by scripts/test.sh), the headless
# Chromium the report's browser test renders report.html in: running the gate
# needs no browser. With SCALEGATE_NEED_PROMETHEUS=1 (also set by
# scripts/test.sh) it installs Debian's prometheus, which the PromQL tests
# start on loopback (internal/testkit/promtest): the gate itself queries the
# team's Prometheus and needs none installed.
# On Debian/Ubuntu it installs what is missing with apt-get (as root, or via
# sudo); elsewhere it names what to install and fails.
set -euo pipefail

missing=()
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if ! pkg-config --exists libenet 2>/dev/null; then missing+=(libenet-dev); fi
# Debian's package is `chromium` (Ubuntu's is a snap shim: install Chromium
# another way and put it on PATH as chromium or chromium-browser).
if [ "${SCALEGATE_NEED_CHROMIUM:-0}" = 1 ] && ! command -v chromium >/dev/null 2>&1 &&
  ! command -v chromium-browser >/dev/null 2>&1; then
  missing+=(chromium)
fi

# prometheus is installed alone, without its recommends (the node
# exporter, a daemon the tests do not want).
lean=()
if [ "${SCALEGATE_NEED_PROMETHEUS:-0}" = 1 ] && ! command -v prometheus >/dev/null 2>&1 && [ -z "${PROMETHEUS:-}" ]; then
  lean+=(prometheus)
fi

if [ ${#missing[@]} -gt 0 ] || [ ${#lean[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "deps: need root to install: ${missing[*]} (apt-get install -y ${missing[*]})" >&2; exit 1
      fi
    fi
    echo "deps: installing ${missing[*]} ${lean[*]} with apt-get" >&2
    $sudo apt-get update -qq
    if [ ${#missing[@]} -gt 0 ]; then
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    if [ ${#lean[@]} -gt 0 ]; then
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
    fi
  else
    echo "deps: missing ${missing[*]} ${lean[*]}. Install a C compiler, pkg-config, ENet 1.3.17 development files, Chromium and Prometheus" >&2
    echo "      (Fedora: dnf install gcc pkgconf enet-devel chromium golang-github-prometheus; macOS: brew install pkg-config enet chromium prometheus)." >&2
    exit 1
  fi
fi

if ! command -v go >/dev/null 2>&1; then
  if [ -x /usr/local/go/bin/go ]; then export PATH=/usr/local/go/bin:$PATH; else
    echo "deps: Go 1.26 or newer is required (https://go.dev/dl/)" >&2; exit 1
  fi
fi
