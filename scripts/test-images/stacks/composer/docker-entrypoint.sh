#!/bin/sh
# The official composer image's entry point: an option or a composer subcommand runs composer.
set -e
if [ "${1#-}" != "$1" ] || ! command -v "$1" >/dev/null 2>&1; then
  set -- composer "$@"
fi
exec "$@"
