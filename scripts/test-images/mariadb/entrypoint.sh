#!/usr/bin/env bash
# Entry point of the local MariaDB image, keeping the official image's contract:
#   one of MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MARIADB_RANDOM_ROOT_PASSWORD;
#   MARIADB_ROOT_HOST (default %), MARIADB_DATABASE, MARIADB_USER + MARIADB_PASSWORD (granted
#   everything on that database). MYSQL_* names are accepted as aliases, and each secret may
#   come from a file named by VAR_FILE. The data directory is initialised on the first start
#   only, then /docker-entrypoint-initdb.d/*.sh|*.sql|*.sql.gz run once.
#   A `healthcheck`@localhost account (USAGE only, password in $DATADIR/.my-healthcheck.cnf)
#   serves healthcheck.sh.
# A command starting with an option runs the server with it; any other command runs as given.
set -Eeuo pipefail

die() { printf 'entrypoint: %s\n' "$*" >&2; exit 1; }

DATADIR=/var/lib/mysql
SOCKET=/run/mysqld/mysqld.sock

if [[ "${1:-}" == -* ]]; then set -- mariadbd "$@"; fi
case "${1:-}" in
  mariadbd | mysqld) ;;
  *) exec "$@" ;;
esac

if [[ "$(id -u)" == 0 ]]; then
  install -d -m 0755 -- "$DATADIR"
  find "$DATADIR" \! -user mysql -exec chown mysql:mysql -- '{}' +
  install -d -o mysql -g mysql -m 0755 /run/mysqld
  exec setpriv --reuid=mysql --regid=mysql --init-groups -- "${BASH_SOURCE[0]}" "$@"
fi

# MARIADB_X, else MYSQL_X, else the file named by MARIADB_X_FILE or MYSQL_X_FILE.
setting() {
  local name="$1" v f
  for v in "MARIADB_$name" "MYSQL_$name"; do
    if [[ -n "${!v:-}" ]]; then printf '%s' "${!v}"; return; fi
  done
  for f in "MARIADB_${name}_FILE" "MYSQL_${name}_FILE"; do
    if [[ -n "${!f:-}" ]]; then
      [[ -r "${!f}" ]] || die "$f names an unreadable file"
      printf '%s' "$(<"${!f}")"
      return
    fi
  done
}

# A value as a single-quoted SQL string literal (backslash escapes are on by default).
sql_string() {
  local s="$1"
  s="${s//\\/\\\\}"
  s="${s//\'/\\\'}"
  printf "'%s'" "$s"
}
# A name as a backquoted SQL identifier.
sql_ident() {
  printf '`%s`' "${1//\`/\`\`}"
}

init_datadir() {
  local root_pw allow_empty random_root root_host db user pw
  root_pw="$(setting ROOT_PASSWORD)"
  allow_empty="$(setting ALLOW_EMPTY_ROOT_PASSWORD)"
  random_root="$(setting RANDOM_ROOT_PASSWORD)"
  root_host="$(setting ROOT_HOST)"
  root_host="${root_host:-%}"
  db="$(setting DATABASE)"
  user="$(setting USER)"
  pw="$(setting PASSWORD)"
  if [[ -z "$root_pw" && -z "$allow_empty" && -z "$random_root" ]]; then
    die "the database is uninitialised and no root password option is set: set MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD or MARIADB_RANDOM_ROOT_PASSWORD"
  fi
  if [[ -n "$user" && -z "$pw" ]]; then die "MARIADB_USER is set without MARIADB_PASSWORD"; fi
  if [[ "$user" == root ]]; then die "MARIADB_USER=root: the root account is set with MARIADB_ROOT_PASSWORD"; fi
  if [[ -z "$root_pw" && -n "$random_root" ]]; then
    root_pw="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
    echo "entrypoint: GENERATED ROOT PASSWORD: $root_pw"
  fi

  echo 'entrypoint: initialising the data directory'
  mariadb-install-db --datadir="$DATADIR" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve >/dev/null

  # A server on the socket only, so nothing connects before the accounts are set.
  mariadbd --skip-networking --socket="$SOCKET" --datadir="$DATADIR" &
  local pid=$! i
  for i in $(seq 1 120); do
    if mariadb-admin --socket="$SOCKET" --user=root --silent ping >/dev/null 2>&1; then break; fi
    kill -0 "$pid" 2>/dev/null || die "the bootstrap server exited"
    sleep 0.5
  done
  mariadb-admin --socket="$SOCKET" --user=root --silent ping >/dev/null 2>&1 || die "the bootstrap server did not answer"

  local hc_pw
  hc_pw="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  (umask 077; printf '[client]\nuser=healthcheck\npassword=%s\n' "$hc_pw" >"$DATADIR/.my-healthcheck.cnf")

  {
    echo 'SET @@SESSION.SQL_LOG_BIN = 0;'
    # Only the accounts asked for remain: no anonymous ones, no root on other host names.
    echo "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');"
    echo "DELETE FROM mysql.proxies_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');"
    echo 'FLUSH PRIVILEGES;'
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $(sql_string "$root_pw");"
    if [[ "$root_host" != localhost ]]; then
      echo "CREATE USER 'root'@$(sql_string "$root_host") IDENTIFIED BY $(sql_string "$root_pw");"
      echo "GRANT ALL ON *.* TO 'root'@$(sql_string "$root_host") WITH GRANT OPTION;"
      echo "GRANT PROXY ON ''@'%' TO 'root'@$(sql_string "$root_host") WITH GRANT OPTION;"
    fi
    local h
    for h in localhost 127.0.0.1 ::1; do
      echo "CREATE USER 'healthcheck'@'$h' IDENTIFIED BY $(sql_string "$hc_pw");"
    done
    if [[ -n "$db" ]]; then
      echo "CREATE DATABASE IF NOT EXISTS $(sql_ident "$db");"
    fi
    if [[ -n "$user" ]]; then
      echo "CREATE USER $(sql_string "$user")@'%' IDENTIFIED BY $(sql_string "$pw");"
      if [[ -n "$db" ]]; then
        echo "GRANT ALL ON $(sql_ident "$db").* TO $(sql_string "$user")@'%';"
      fi
    fi
  } | mariadb --socket="$SOCKET" --user=root --batch --skip-column-names

  local f
  local -a client=(mariadb --socket="$SOCKET" --user=root --batch)
  if [[ -n "$db" ]]; then client+=("--database=$db"); fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "entrypoint: running $f"; bash -- "$f" ;;
      *.sql) echo "entrypoint: running $f"; MYSQL_PWD="$root_pw" "${client[@]}" <"$f" ;;
      *.sql.gz) echo "entrypoint: running $f"; gzip -dc -- "$f" | MYSQL_PWD="$root_pw" "${client[@]}" ;;
      *"/*") ;;
      *) echo "entrypoint: ignoring $f" ;;
    esac
  done

  # SIGTERM is a clean shutdown, and needs no password.
  kill -TERM "$pid"
  wait "$pid" || die "the bootstrap server did not stop cleanly"
  echo 'entrypoint: data directory initialised; starting the server'
}

if [[ ! -d "$DATADIR/mysql" ]]; then init_datadir; fi
unset MARIADB_ROOT_PASSWORD MYSQL_ROOT_PASSWORD MARIADB_PASSWORD MYSQL_PASSWORD
exec "$@"
