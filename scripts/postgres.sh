#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for tests and benchmarks, listening on 127.0.0.1 only.
#
#   eval "$(scripts/postgres.sh start)"   # prints export lines: TOOLGATE_PG_URL, TOOLGATE_PG_DIR
#   scripts/postgres.sh stop [DIR]        # stops the cluster in DIR (default $TOOLGATE_PG_DIR), removes DIR
#
# The server binaries come from $TOOLGATE_PG_BIN (default /usr/lib/postgresql/15/bin). PostgreSQL
# refuses to run as root, so as root the cluster belongs to the `postgres` system user (created
# when missing). Trust authentication is safe only because the server listens on loopback and the
# cluster lives for one run.
set -euo pipefail

BIN=${TOOLGATE_PG_BIN:-/usr/lib/postgresql/15/bin}
DB_NAME=toolgate
DB_USER=toolgate

die() { echo "postgres.sh: $*" >&2; exit 1; }

as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  [[ -x $BIN/initdb && -x $BIN/pg_ctl ]] || die "no PostgreSQL server binaries in $BIN"
  if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin postgres || die "could not create the postgres system user"
  fi
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-pg.XXXXXX")
  chmod 700 "$dir"
  [[ $(id -u) -eq 0 ]] && chown postgres: "$dir"
  as_owner "$BIN/initdb" -D "$dir/data" -U "$DB_USER" --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }
  local port attempt
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$dir' -c max_connections=100 -c fsync=on" \
      start >/dev/null 2>&1; then
      break
    fi
    port=""
  done
  [[ -n $port ]] || { cat "$dir/server.log" >&2 || true; rm -rf "$dir"; die "the server did not start"; }
  as_owner "$BIN/createdb" -h 127.0.0.1 -p "$port" -U "$DB_USER" "$DB_NAME" \
    || { as_owner "$BIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$dir"; die "createdb failed"; }
  echo "export TOOLGATE_PG_URL=postgres://$DB_USER@127.0.0.1:$port/$DB_NAME"
  echo "export TOOLGATE_PG_DIR=$dir"
}

stop() {
  local dir=${1:-${TOOLGATE_PG_DIR:-}}
  [[ -n $dir ]] || die "stop: which cluster? pass its directory or set TOOLGATE_PG_DIR"
  [[ -d $dir/data ]] || die "stop: $dir is not a cluster started by this script"
  as_owner "$BIN/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case ${1:-} in
  start) start ;;
  stop) shift; stop "$@" ;;
  *) die "usage: postgres.sh start | stop [DIR]" ;;
esac
