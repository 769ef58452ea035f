#!/usr/bin/env bash
# Builds the control plane's image with no registry:
#   1. a Debian bookworm minbase root filesystem (debootstrap), imported as $SVC_BASE_IMAGE,
#      skipped when that image already exists (it is the slow part);
#   2. the image itself, from a staged context: dist/, node_modules/, package*.json and the
#      host's node binary (bookworm's nodejs is too old).
# Needs: debootstrap, docker, and a built dist/ (npm run build). Run as root.
set -euo pipefail

repo="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)"
base_image="${SVC_BASE_IMAGE:-svc-base/debian:bookworm}"
image="${SVC_IMAGE:-svc/control-plane:latest}"
suite="bookworm"

# The Debian mirror this host already uses, unless one is given.
mirror="${SVC_DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    mirror="$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)"
  elif [[ -f /etc/apt/sources.list ]]; then
    mirror="$(awk '$1 == "deb" && $3 ~ /^bookworm$/ { print $2; exit }' /etc/apt/sources.list)"
  fi
fi

build_base() {
  if docker image inspect -- "$base_image" >/dev/null 2>&1; then
    echo "base image $base_image exists; skipping debootstrap"
    return
  fi
  if [[ -z "$mirror" ]]; then
    echo "no Debian mirror found in apt sources; set SVC_DEBIAN_MIRROR" >&2
    exit 1
  fi
  if [[ ! "$mirror" =~ ^https?:// ]]; then
    echo "mirror must be an http(s) URL: $mirror" >&2
    exit 1
  fi
  local root
  root="$(mktemp -d /tmp/svc-rootfs.XXXXXX)"
  trap 'rm -rf -- "$root"' RETURN
  echo "debootstrap $suite (minbase) from $mirror into $root"
  # debootstrap takes no "--"; the mirror is checked to be a URL instead.
  debootstrap --variant=minbase "$suite" "$root" "$mirror"
  # Keep the image small: no package caches or lists in the base.
  rm -rf -- "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    - "$base_image"
}

build_image() {
  if [[ ! -f "$repo/dist/runtime/cli.js" ]]; then
    echo "dist/runtime/cli.js missing: run npm run build first" >&2
    exit 1
  fi
  local ctx node_bin
  ctx="$(mktemp -d /tmp/svc-image-ctx.XXXXXX)"
  trap 'rm -rf -- "$ctx"' RETURN
  node_bin="$(command -v node)"
  cp -- "$node_bin" "$ctx/node"
  cp -- "$repo/Dockerfile" "$repo/.dockerignore" "$repo/package.json" "$repo/package-lock.json" "$ctx/"
  cp -a -- "$repo/dist" "$repo/node_modules" "$ctx/"
  rm -rf -- "$ctx/dist/tests" "$ctx/dist/bench"
  docker build --build-arg "BASE_IMAGE=$base_image" -t "$image" -- "$ctx"
}

case "${1:-all}" in
  base) build_base ;;
  image) build_image ;;
  all) build_base; build_image ;;
  *) echo "usage: $0 [base|image|all]" >&2; exit 2 ;;
esac
