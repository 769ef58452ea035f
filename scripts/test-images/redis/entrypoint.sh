#!/usr/bin/env bash
# Entry point of the local Redis image, with the official image's contract: the command is
# `redis-server [config file] [--option value ...]`, or only the options / the config file
# (the server is implied); anything else runs as given. The server runs as redis in /data, with
# protected mode off unless the command turns it on (options given later win over earlier ones).
set -Eeuo pipefail

if [[ "${1:-}" == -* || "${1:-}" == *.conf ]]; then set -- redis-server "$@"; fi
if [[ "${1:-}" != redis-server ]]; then exec "$@"; fi

if [[ "$(id -u)" == 0 ]]; then
  find . \! -user redis -exec chown redis:redis -- '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups -- "${BASH_SOURCE[0]}" "$@"
fi

shift
# redis-server takes a config file only as its first argument, so the default goes after it.
declare -a conf=()
if [[ $# -gt 0 && "$1" != -* ]]; then conf=("$1"); shift; fi
exec redis-server "${conf[@]}" --protected-mode no "$@"
