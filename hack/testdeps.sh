#!/usr/bin/env bash
# Installs, with apt, what the tests need beyond Go and the test servers of
# bin/, where it is missing: Debian's chromium for the browser tests
# (internal/app's status page and GraphiQL tests, internal/demo's GraphiQL
# test), and Node.js with npm for make ui (the GraphiQL bundle) and the
# tests with real JavaScript clients (pkg/transport's audits, the
# graphql-ws/graphql-sse clients of internal/e2e/api). What is present is left alone.
# Without root it uses sudo.
#
# The tests fail, never skip, when a tool is missing: this is what keeps
# `make test` from failing on a machine that has only Go.
set -euo pipefail

# graphql-ws 6 declares "node": ">=20".
min_node=20

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "testdeps: ${missing[*]} missing, and no apt-get to install them: install them yourself (Node.js $min_node or newer)" >&2
    exit 1
  fi
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "testdeps: ${missing[*]} missing; installing needs root or sudo" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  echo "testdeps: installing ${missing[*]} with apt-get"
  # The lock timeout waits for another apt run (another checkout's tests,
  # unattended upgrades) instead of failing at once.
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}"
fi

# Debian 12's nodejs is 18: say so here rather than let npm fail in a test.
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt "$min_node" ]; then
  echo "testdeps: node $(node --version) is too old: the tests' npm packages need Node.js $min_node or newer" \
    "(Debian 13's nodejs package, or NodeSource's packages on Debian 12)" >&2
  exit 1
fi
