#!/usr/bin/env bash
# Entry point of the local PostgreSQL image. The contract it keeps is the official image's:
#   POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER
#   (default postgres), POSTGRES_DB (default the user), POSTGRES_INITDB_ARGS,
#   POSTGRES_HOST_AUTH_METHOD (default scram-sha-256); each *_PASSWORD/_USER/_DB may come from a
#   file named by the same variable with _FILE appended. A new cluster is made in $PGDATA on the
#   first start only; /docker-entrypoint-initdb.d/*.sh|*.sql|*.sql.gz run once after it.
#   The server listens on every interface; remote clients authenticate with a password, local
#   socket clients (docker exec) are trusted.
# A command starting with an option runs the server with it; any other command runs as given.
set -Eeuo pipefail

die() { printf 'entrypoint: %s\n' "$*" >&2; exit 1; }

# VAR_FILE names a file holding VAR (Docker secrets); both at once is ambiguous.
from_file() {
  local var="$1" file_var="${1}_FILE"
  if [[ -n "${!var:-}" && -n "${!file_var:-}" ]]; then die "both $var and $file_var are set"; fi
  if [[ -n "${!file_var:-}" ]]; then
    [[ -r "${!file_var}" ]] || die "$file_var names an unreadable file"
    printf -v "$var" '%s' "$(<"${!file_var}")"
    export "${var?}"
  fi
  unset "$file_var"
}

if [[ "${1:-}" == -* ]]; then set -- postgres "$@"; fi
if [[ "${1:-}" != postgres ]]; then exec "$@"; fi

export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

if [[ "$(id -u)" == 0 ]]; then
  # A fresh named volume or bind mount may be root's: hand it (and the socket directory) to
  # postgres, touching only what is not already its own so a restart over a big cluster is cheap.
  install -d -m 0700 -- "$PGDATA"
  find "$PGDATA" \! -user postgres -exec chown postgres:postgres -- '{}' +
  chmod 0700 -- "$PGDATA"
  install -d -o postgres -g postgres -m 3777 /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups -- "${BASH_SOURCE[0]}" "$@"
fi

init_cluster() {
  from_file POSTGRES_PASSWORD
  from_file POSTGRES_USER
  from_file POSTGRES_DB
  local user="${POSTGRES_USER:-postgres}"
  local db="${POSTGRES_DB:-$user}"
  local auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
  if [[ -z "${POSTGRES_PASSWORD:-}" && "$auth" != trust ]]; then
    die "POSTGRES_PASSWORD is not set: the database would accept no remote login (set it, or POSTGRES_HOST_AUTH_METHOD=trust to allow anyone)"
  fi

  local -a extra=()
  if [[ -n "${POSTGRES_INITDB_ARGS:-}" ]]; then read -r -a extra <<<"$POSTGRES_INITDB_ARGS"; fi
  local -a pw=()
  local pwfile=''
  if [[ -n "${POSTGRES_PASSWORD:-}" ]]; then
    pwfile="$(mktemp)"   # mode 0600, postgres's own
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    pw=("--pwfile=$pwfile")
  fi
  initdb --username="$user" "${pw[@]}" --auth-local=trust --auth-host="$auth" "${extra[@]}" -D "$PGDATA" \
    || { [[ -z "$pwfile" ]] || rm -f -- "$pwfile"; die "initdb failed"; }
  [[ -z "$pwfile" ]] || rm -f -- "$pwfile"
  # initdb only writes loopback host lines; remote clients of any address get the same method.
  printf '\n# every remote address: %s\nhost all all all %s\n' "$auth" "$auth" >>"$PGDATA/pg_hba.conf"

  # A server reachable through the socket only, so nothing connects before the setup is done.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p ${PGPORT:-5432}" -w start
  local -a psql_cmd=(psql -X -v ON_ERROR_STOP=1 --username "$user" --no-password)
  if [[ "$db" != postgres ]]; then
    "${psql_cmd[@]}" --dbname postgres --set db="$db" <<<'CREATE DATABASE :"db";'
  fi
  local f
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "entrypoint: running $f"; bash -- "$f" ;;
      *.sql) echo "entrypoint: running $f"; "${psql_cmd[@]}" --dbname "$db" -f "$f" ;;
      *.sql.gz) echo "entrypoint: running $f"; gzip -dc -- "$f" | "${psql_cmd[@]}" --dbname "$db" ;;
      *"/*") ;;
      *) echo "entrypoint: ignoring $f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo 'entrypoint: cluster initialised; starting the server'
}

if [[ ! -s "$PGDATA/PG_VERSION" ]]; then init_cluster; fi
unset POSTGRES_PASSWORD
exec "$@"
