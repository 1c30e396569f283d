#!/usr/bin/env bash
# A private PostgreSQL server for tests, on a free loopback port, stopped by PID.
#   postgres.sh start DIR   -> initdb in DIR (new), start it; prints "PGURL=... PGPID=... PGPORT=..." on one line
#   postgres.sh stop DIR    -> fast shutdown of the server started in DIR, then removes DIR
# Needs Debian's postgresql (initdb and postgres under /usr/lib/postgresql/*/bin). PostgreSQL refuses
# to run as root, so as root it runs as the `postgres` user that package creates.
set -euo pipefail
cmd="${1:-}" dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: postgres.sh start|stop DIR" >&2; exit 2; }
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
[ -x "$bin/initdb" ] || { echo "postgres.sh: no PostgreSQL server found: install Debian's postgresql" >&2; exit 1; }
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "$cmd" in
start)
  mkdir -p "$dir"
  # The postgres user must reach DIR: a mktemp -d parent is root's alone.
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; chmod a+x "$(dirname "$dir")"; fi
  port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
  as_owner "$bin/initdb" -D "$dir/data" -U holdfast --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  pid="$(head -n 1 "$dir/data/postmaster.pid")"
  echo "PGURL=postgres://holdfast@127.0.0.1:$port/postgres PGPID=$pid PGPORT=$port"
  ;;
stop)
  if [ -f "$dir/data/postmaster.pid" ]; then
    pid="$(head -n 1 "$dir/data/postmaster.pid")"
    kill -CONT "$pid" 2>/dev/null || true
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  fi
  rm -rf "$dir"
  ;;
*) echo "usage: postgres.sh start|stop DIR" >&2; exit 2 ;;
esac
