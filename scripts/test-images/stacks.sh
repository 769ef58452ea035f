#!/usr/bin/env bash
# Builds the local stand-ins for the official runtime images that generated build plans
# (lib/buildplan) start from, for tests and `npm run bench:build` (no registry is reachable here):
# node, python (full and slim), golang, distroless static, caddy, php-fpm, composer, ruby (full and
# slim), from bookworm's packages on the same slim Debian layer as the database images. Each keeps
# the conventions of the image it stands for (paths, users, entry points); see its Dockerfile.
# Each image carries a label with the hash of what it was built from (this script, its folder, the
# layer under it, staged host files); an image whose label matches is not rebuilt. Runs take turns
# on the same lock as build.sh, so parallel test processes find the images built by the first.
# Prints the image map as one JSON line on stdout: {"node":"svc-test/stack-node:20",...}; progress and
# build logs go to stderr.
# Needs: docker, flock, node (its binary and bundled npm are copied); for a cold build of the slim
# layer, debootstrap and root.
set -Eeuo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd -- "$here/../.." && pwd)"
base_image="${SVC_BASE_IMAGE:-svc-base/debian:bookworm}"
slim_image=svc-test/debian-slim:bookworm
stack_base=svc-test/stack-base:bookworm
label=svc.test.content-hash
certs_dir="${SVC_EXTRA_CA_DIR:-/usr/local/share/ca-certificates}"

log() { printf 'test-images: %s\n' "$*" >&2; }

node_bin="$(command -v node)"
node_bin="$(readlink -f -- "$node_bin")"
node_modules="$(cd -- "$(dirname -- "$(readlink -f -- "$(command -v npm)")")/../.." && pwd)"
node_major="$("$node_bin" -p 'process.versions.node.split(".")[0]')"

# name -> tag; bookworm's versions (python 3.11, go 1.19, php 8.2, ruby 3.1) and the host's node.
stacks=(node python python-slim golang distroless caddy php composer ruby ruby-slim)
# Under svc-test/stack-*, apart from other local images that may stand in for the same references.
declare -A tag=(
  [node]="svc-test/stack-node:$node_major" [python]=svc-test/stack-python:3.11 [python-slim]=svc-test/stack-python:3.11-slim
  [golang]=svc-test/stack-golang:1.19 [distroless]=svc-test/stack-distroless-static:debian12 [caddy]=svc-test/stack-caddy:2
  [php]=svc-test/stack-php:8.2-fpm [composer]=svc-test/stack-composer:2 [ruby]=svc-test/stack-ruby:3.1
  [ruby-slim]=svc-test/stack-ruby:3.1-slim
)

exec 9>"${SVC_TEST_IMAGES_LOCK:-/tmp/svc-test-images.lock}"
flock 9

# sha256 over the relative names and contents of the given files and directories (under $here).
content_hash() {
  (cd -- "$here" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64
}

image_label() {
  docker image inspect --format "{{ index .Config.Labels \"$label\" }}" -- "$1" 2>/dev/null || true
}

# What is staged into a context from the host, hashed by content.
certs_hash() {
  { find "$certs_dir" -maxdepth 1 -name '*.crt' -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 -r sha256sum | sed 's|  .*/|  |'; } | sha256sum | cut -c1-64
}
node_hash() {
  {
    sha256sum < "$node_bin"
    (cd -- "$node_modules" && find npm corepack -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-64
}

# build TAG HASH CONTEXT [build args...]: skipped when TAG already carries HASH; the image it
# replaces is removed when nothing else refers to it.
build() {
  local tag="$1" hash="$2" dir="$3"
  shift 3
  if [[ "$(image_label "$tag")" == "$hash" ]]; then
    return
  fi
  local old new start=$SECONDS
  old="$(docker image inspect --format '{{.Id}}' -- "$tag" 2>/dev/null || true)"
  log "building $tag"
  DOCKER_BUILDKIT=0 docker build --label "$label=$hash" --tag "$tag" "$@" -- "$dir" >&2
  new="$(docker image inspect --format '{{.Id}}' -- "$tag")"
  if [[ -n "$old" && "$old" != "$new" ]]; then docker image rm -- "$old" >/dev/null 2>&1 || true; fi
  log "built $tag in $((SECONDS - start))s"
}

print_map() {
  local sep='' s
  printf '{'
  for s in "${stacks[@]}"; do
    printf '%s"%s":"%s"' "$sep" "$s" "${tag[$s]}"
    sep=','
  done
  printf ',"debian-slim":"%s"}\n' "$slim_image"
}

# The slim layer's hash is computed exactly as build.sh computes it, so both scripts share it.
slim_hash="$(content_hash build.sh debian)"
base_hash="$(printf '%s\n' "$slim_hash" "$(content_hash stacks.sh stacks/base)" "$(certs_hash)" | sha256sum | cut -c1-64)"
declare -A want=()
stale=()
for s in "${stacks[@]}"; do
  extra=''
  [[ "$s" == node ]] && extra="$(node_hash)"
  want[$s]="$(printf '%s\n' "$base_hash" "$(content_hash stacks.sh "stacks/$s")" "$extra" | sha256sum | cut -c1-64)"
  [[ "$(image_label "${tag[$s]}")" == "${want[$s]}" ]] || stale+=("$s")
done

if [[ ${#stale[@]} -gt 0 || "$(image_label "$stack_base")" != "$base_hash" ]]; then
  start=$SECONDS
  stage="$(mktemp -d /tmp/svc-stack-images.XXXXXX)"
  trap 'rm -rf -- "$stage"' EXIT
  if [[ "$(image_label "$slim_image")" != "$slim_hash" ]]; then
    if ! docker image inspect -- "$base_image" >/dev/null 2>&1; then
      SVC_BASE_IMAGE="$base_image" "$repo/scripts/docker/build-image.sh" base >&2
    fi
    build "$slim_image" "$slim_hash" "$here/debian" --build-arg "BASE_IMAGE=$base_image"
  fi
  cp -r -- "$here/stacks/base" "$stage/base"
  mkdir -p -- "$stage/base/certs"
  find "$certs_dir" -maxdepth 1 -name '*.crt' -type f -exec cp -t "$stage/base/certs" -- {} + 2>/dev/null || true
  build "$stack_base" "$base_hash" "$stage/base" --build-arg "SLIM_IMAGE=$slim_image"
  # One at a time: with two cores, parallel package installs gain little and hide which failed.
  for s in "${stale[@]}"; do
    cp -r -- "$here/stacks/$s" "$stage/$s"
    if [[ "$s" == node ]]; then
      cp -- "$node_bin" "$stage/node/node"
      mkdir -p -- "$stage/node/node_modules"
      cp -r -- "$node_modules/npm" "$node_modules/corepack" "$stage/node/node_modules/"
    fi
    build "${tag[$s]}" "${want[$s]}" "$stage/$s" --build-arg "STACK_BASE=$stack_base"
  done
  log "stack images ready in $((SECONDS - start))s"
fi
print_map
