#!/usr/bin/env bash
# Runs the control plane in its own container, on its own network (svc-control) that no app
# joins, with the Docker socket mounted and the API published on loopback only by default.
set -euo pipefail

image="${SVC_IMAGE:-svc/control-plane:latest}"
name="${SVC_CONTAINER:-svc-control-plane}"
publish="${SVC_PUBLISH:-127.0.0.1:9393}"
socket="${SVC_DOCKER_SOCKET:-/var/run/docker.sock}"
data_volume="${SVC_DATA_VOLUME:-svc-control-data}"

if ! docker network inspect -- svc-control >/dev/null 2>&1; then
  docker network create --driver bridge --label svc.managed=true --label svc.role=control -- svc-control
fi

args=(run -d --name "$name" --restart unless-stopped
  --network svc-control
  --label svc.managed=true --label svc.role=control
  -p "$publish:9393"
  -v "$socket:/var/run/docker.sock"
  -v "$data_volume:/var/lib/svc/data")
# Pass through the SVC_* settings present in this environment (master key, tokens...).
while IFS='=' read -r key _; do
  case "$key" in
    SVC_IMAGE|SVC_CONTAINER|SVC_PUBLISH|SVC_DATA_VOLUME|SVC_DOCKER_SOCKET) ;;
    SVC_*) args+=(-e "$key") ;;
  esac
done < <(env)
args+=(-- "$image")
docker "${args[@]}"
