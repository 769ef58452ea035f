#!/usr/bin/env bash
# Builds the local database images the tests use in place of the official ones (no registry is
# reachable): PostgreSQL, MariaDB and Redis from Debian bookworm's own packages, on the
# debootstrapped base that scripts/docker/build-image.sh makes. Each image carries a label with
# the hash of what it was built from (this script, the shared layer, its directory); an image
# whose label matches is not rebuilt, so a second run only inspects three images.
# Concurrent runs (parallel test files, other worktrees) take turns on a lock file, so the
# second one finds the images built by the first.
# Prints the image map as one JSON line on stdout: {"postgres":"svc-test/postgres:15",...};
# progress and build logs go to stderr.
# Needs: docker, flock; and for a cold build debootstrap and root.
set -Eeuo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd -- "$here/../.." && pwd)"
base_image="${SVC_BASE_IMAGE:-svc-base/debian:bookworm}"
slim_image=svc-test/debian-slim:bookworm
label=svc.test.content-hash
# Bookworm's versions (apt-cache policy postgresql-15 mariadb-server redis-server); each
# Dockerfile checks that the server it installed is the version its tag says.
engines=(postgres mariadb redis)
declare -A version=([postgres]=15 [mariadb]=10.11 [redis]=7)

log() { printf 'test-images: %s\n' "$*" >&2; }

exec 9>"${SVC_TEST_IMAGES_LOCK:-/tmp/svc-test-images.lock}"
flock 9

# sha256 over the relative names and contents of the given files and directories.
content_hash() {
  (cd -- "$here" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64
}

image_label() {
  docker image inspect --format "{{ index .Config.Labels \"$label\" }}" -- "$1" 2>/dev/null || true
}

tag_of() { printf 'svc-test/%s:%s' "$1" "${version[$1]}"; }

print_map() {
  local sep='' e
  printf '{'
  for e in "${engines[@]}"; do
    printf '%s"%s":"%s"' "$sep" "$e" "$(tag_of "$e")"
    sep=','
  done
  printf '}\n'
}

# build TAG HASH DIR [build args...]: skipped when TAG already carries HASH. The image it
# replaces is removed when nothing else refers to it (docker refuses otherwise, which is fine).
build() {
  local tag="$1" hash="$2" dir="$3"
  shift 3
  if [[ "$(image_label "$tag")" == "$hash" ]]; then
    log "$tag is up to date"
    return
  fi
  local old new start=$SECONDS
  old="$(docker image inspect --format '{{.Id}}' -- "$tag" 2>/dev/null || true)"
  log "building $tag"
  DOCKER_BUILDKIT=0 docker build --label "$label=$hash" --tag "$tag" "$@" -- "$here/$dir" >&2
  new="$(docker image inspect --format '{{.Id}}' -- "$tag")"
  if [[ -n "$old" && "$old" != "$new" ]]; then docker image rm -- "$old" >/dev/null 2>&1 || true; fi
  log "built $tag in $((SECONDS - start))s"
}

slim_hash="$(content_hash build.sh debian)"
declare -A want=()
stale=()
for e in "${engines[@]}"; do
  want[$e]="$(content_hash build.sh debian "$e")"
  [[ "$(image_label "$(tag_of "$e")")" == "${want[$e]}" ]] || stale+=("$e")
done

if [[ ${#stale[@]} -gt 0 ]]; then
  start=$SECONDS
  if ! docker image inspect -- "$base_image" >/dev/null 2>&1; then
    SVC_BASE_IMAGE="$base_image" "$repo/scripts/docker/build-image.sh" base >&2
  fi
  build "$slim_image" "$slim_hash" debian --build-arg "BASE_IMAGE=$base_image"
  # One at a time: with two cores, parallel package installs gain little and hide which failed.
  for e in "${stale[@]}"; do
    build "$(tag_of "$e")" "${want[$e]}" "$e" --build-arg "SLIM_IMAGE=$slim_image" --build-arg "VERSION=${version[$e]}"
  done
  log "images ready in $((SECONDS - start))s"
fi
print_map
