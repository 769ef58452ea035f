#!/usr/bin/env bash
# Container healthcheck for the local MariaDB image, named and used like the official image's:
#   healthcheck.sh [--connect] [--innodb_initialized]
# --connect: a login over TCP on the container's own port succeeds (so the server is past
# start-up and listening on its network, not only on its socket); --innodb_initialized: the
# InnoDB engine is available. No option means --connect. Logs in as the USAGE-only
# `healthcheck` account the entry point made; its password is in the data directory.
set -Euo pipefail

cnf=/var/lib/mysql/.my-healthcheck.cnf
[[ -r "$cnf" ]] || { echo "healthcheck: $cnf is missing or unreadable" >&2; exit 1; }
client=(mariadb --defaults-extra-file="$cnf" --protocol=tcp --host=127.0.0.1 --port="${MARIADB_PORT:-3306}" --batch --skip-column-names)

checks=("$@")
[[ ${#checks[@]} -gt 0 ]] || checks=(--connect)
for c in "${checks[@]}"; do
  case "$c" in
    --connect)
      "${client[@]}" -e 'SELECT 1' >/dev/null || { echo "healthcheck: cannot connect" >&2; exit 1; } ;;
    --innodb_initialized)
      out="$("${client[@]}" -e "SELECT 1 FROM information_schema.ENGINES WHERE ENGINE = 'InnoDB' AND SUPPORT IN ('YES', 'DEFAULT')")" \
        && [[ "$out" == 1 ]] || { echo "healthcheck: InnoDB is not initialised" >&2; exit 1; } ;;
    *) echo "healthcheck: unknown check $c" >&2; exit 2 ;;
  esac
done
