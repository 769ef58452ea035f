#!/usr/bin/env bash
# Builds the control plane's image with no registry:
#   1. a Debian bookworm minbase root filesystem (debootstrap), imported as $SVC_BASE_IMAGE;
#   2. the image itself, from a staged context: dist/, node_modules/, package*.json and the
#      host's node binary (bookworm's nodejs is too old).
# Both are cached by a content hash of what goes into them, recorded as a label: the base by its
# recipe (suite, variant, mirror), the image by its inputs (Dockerfile, package files, dist/,
# node_modules/, the node binary, the base image's id). When nothing changed, nothing is built
# and a rerun takes about a second (hashing); the image is also tagged with its hash.
# The last line on stdout is `image=<the built image's hash tag>`.
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

# Bump when the way the base is made changes (what the hash of its recipe cannot see).
base_recipe_version=1

label_of() {
  docker image inspect --format "{{ index .Config.Labels \"$2\" }}" -- "$1" 2>/dev/null || true
}

build_base() {
  local key
  key="$(printf '%s\n' "$base_recipe_version" "$suite" minbase "$mirror" | sha256sum | cut -c1-64)"
  if [[ "$(label_of "$base_image" svc.base.key)" == "$key" ]]; then
    echo "base image $base_image is up to date ($key); skipping debootstrap" >&2
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
  echo "debootstrap $suite (minbase) from $mirror into $root" >&2
  # debootstrap takes no "--"; the mirror is checked to be a URL instead.
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2
  # Keep the image small: no package caches or lists in the base.
  rm -rf -- "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL svc.base.key=$key" \
    - "$base_image" >&2
}

# The hash of everything the image is made of (paths and contents), without staging anything.
image_key() {
  local node_bin="$1" base_id
  base_id="$(docker image inspect --format '{{.Id}}' -- "$base_image")"
  {
    echo "base $base_id"
    cd -- "$repo"
    sha256sum -- Dockerfile .dockerignore package.json package-lock.json
    echo "node $(sha256sum < "$node_bin")"
    find dist node_modules -type f ! -path 'dist/tests/*' ! -path 'dist/bench/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum --
  } | sha256sum | cut -c1-64
}

build_image() {
  if [[ ! -f "$repo/dist/runtime/cli.js" ]]; then
    echo "dist/runtime/cli.js missing: run npm run build first" >&2
    exit 1
  fi
  local ctx node_bin key keyed
  node_bin="$(readlink -f -- "$(command -v node)")"
  key="$(image_key "$node_bin")"
  keyed="${image%:*}:${key:0:16}"
  if [[ "$(label_of "$keyed" svc.image.key)" == "$key" ]]; then
    echo "image $keyed is up to date; not rebuilt" >&2
    docker tag -- "$keyed" "$image"
    echo "image=$keyed"
    return
  fi
  ctx="$(mktemp -d /tmp/svc-image-ctx.XXXXXX)"
  trap 'rm -rf -- "$ctx"' RETURN
  cp -- "$node_bin" "$ctx/node"
  cp -- "$repo/Dockerfile" "$repo/.dockerignore" "$repo/package.json" "$repo/package-lock.json" "$ctx/"
  cp -a -- "$repo/dist" "$repo/node_modules" "$ctx/"
  rm -rf -- "$ctx/dist/tests" "$ctx/dist/bench"
  docker build --build-arg "BASE_IMAGE=$base_image" --label "svc.image.key=$key" -t "$keyed" -t "$image" -- "$ctx" >&2
  echo "image=$keyed"
}

case "${1:-all}" in
  base) build_base ;;
  image) build_image ;;
  all) build_base; build_image ;;
  *) echo "usage: $0 [base|image|all]" >&2; exit 2 ;;
esac
