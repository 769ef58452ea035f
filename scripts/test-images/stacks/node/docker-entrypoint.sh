#!/bin/sh
# The official node image's entry point: an argument list that starts with an option, or names no
# command on PATH, is handed to node.
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
