#!/usr/bin/env bash
# services.sh up|down|status: make Redis and PostgreSQL reachable where the
# programs look for them (REDIS_URL or REDIS_ADDR, DATABASE_URL; defaults
# localhost:6379 and postgres://walletlock:walletlock@localhost:5432/walletlock).
#
# `up` tries, in order:
#   1. the services already answer: use them as they are;
#   2. a Docker engine answers (`docker info`): docker compose up -d --wait;
#   3. local binaries: redis-server, and PostgreSQL's initdb/pg_ctl from PATH
#      or /usr/lib/postgresql/*/bin.
# Local servers bind to 127.0.0.1 only and keep their data in .services/ (git
# ignored), or, when running as root and the postgres user cannot reach the
# repo, in a private temporary folder. `up` twice is harmless; `down` stops
# only what `up` started.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state="$root/.services"
mkdir -p "$state"

die() { echo "services: $*" >&2; exit 1; }
say() { echo "services: $*" >&2; } # stderr: stdout may be JSON (make workshop JSON=1 > file)

# --- configuration, parsed the way the Go programs read it -----------------

# url_part URL: prints "user password host port path" with empty fields as -.
url_part() {
  local rest=${1#*://} auth="" hostport path="" user="" pass="" host port=""
  rest=${rest%%\?*}
  if [[ $rest == */* ]]; then path=${rest#*/}; rest=${rest%%/*}; fi
  if [[ $rest == *@* ]]; then auth=${rest%@*}; rest=${rest##*@}; fi
  if [[ $auth == *:* ]]; then user=${auth%%:*}; pass=${auth#*:}; else user=$auth; fi
  hostport=$rest
  if [[ $hostport == *:* ]]; then host=${hostport%:*}; port=${hostport##*:}; else host=$hostport; fi
  echo "${user:--} ${pass:--} ${host:--} ${port:--} ${path:--}"
}

redis_pass=""
if [[ -n ${REDIS_URL:-} ]]; then
  read -r _ p h port _ <<<"$(url_part "$REDIS_URL")"
  [[ $p != - ]] && redis_pass=$p
  redis_host=$h; redis_port=$port
  [[ $redis_host == - ]] && redis_host=localhost
  [[ $redis_port == - ]] && redis_port=6379
else
  addr=${REDIS_ADDR:-localhost:6379}
  redis_host=${addr%:*}; redis_port=${addr##*:}
fi

read -r pg_user pg_pass pg_host pg_port pg_db <<<"$(url_part "${DATABASE_URL:-postgres://walletlock:walletlock@localhost:5432/walletlock?sslmode=disable}")"
[[ $pg_host == - ]] && pg_host=localhost
[[ $pg_port == - ]] && pg_port=5432
[[ $pg_user == - ]] && pg_user=walletlock
[[ $pg_pass == - ]] && pg_pass=""
[[ $pg_db == - ]] && pg_db=$pg_user

is_local() { [[ $1 == localhost || $1 == 127.0.0.1 || $1 == ::1 ]]; }

# reachable HOST PORT: a TCP connect within 2 seconds.
reachable() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# --- Docker ------------------------------------------------------------------

docker_works() { command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; }

compose_up() {
  say "starting redis:8.10.2 and postgres:18 with docker compose"
  (cd "$root" && docker compose up -d --wait) >&2
  touch "$state/compose"
}

# --- local Redis ---------------------------------------------------------------

redis_up() {
  command -v redis-server >/dev/null 2>&1 ||
    die "redis-server not found: apt-get install redis-server (or brew install redis), or start Docker"
  is_local "$redis_host" || die "Redis at $redis_host:$redis_port does not answer and is not on this machine: start it there, or point REDIS_ADDR at a running one"
  local dir="$state/redis"
  mkdir -p "$dir"
  local args=(--bind 127.0.0.1 --port "$redis_port" --daemonize yes
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    --save "" --appendonly no)
  [[ -n $redis_pass ]] && args+=(--requirepass "$redis_pass")
  redis-server "${args[@]}" >/dev/null
  for _ in $(seq 50); do
    reachable 127.0.0.1 "$redis_port" && { touch "$state/redis.started"; say "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$redis_port"; return; }
    sleep 0.1
  done
  die "redis-server did not start; see $dir/redis.log"
}

redis_down() {
  [[ -f $state/redis.started ]] || return 0
  local pid
  pid=$(cat "$state/redis/redis.pid" 2>/dev/null || true)
  [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
  rm -f "$state/redis.started"
  say "stopped redis-server"
}

# --- local PostgreSQL --------------------------------------------------------

pg_bin() {
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    # Follow links: some images link only initdb/pg_ctl/postgres onto PATH.
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [[ -n $d && -x $d/initdb ]] && echo "$d"
}

# as_pg CMD...: run as the postgres user when we are root (initdb and
# postgres refuse to run as root), as ourselves otherwise.
as_pg() {
  if [[ $(id -u) == 0 ]]; then
    su postgres -s /bin/bash -c "$(printf '%q ' "$@")"
  else
    "$@"
  fi
}

# pg_dir: where the cluster lives; created on first use.
pg_dir() {
  if [[ -f $state/pg.dir ]]; then cat "$state/pg.dir"; return; fi
  local dir="$state/pg"
  if [[ $(id -u) == 0 ]]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a postgres user to run PostgreSQL: apt-get install postgresql"
    mkdir -p "$dir" && chown postgres: "$dir" && chmod 700 "$dir"
    if ! su postgres -s /bin/bash -c "test -w '$dir'" 2>/dev/null; then
      rm -rf "$dir"
      dir=$(mktemp -d /tmp/walletlock-pg.XXXXXX)
      chown postgres: "$dir" && chmod 700 "$dir"
    fi
  fi
  mkdir -p "$dir"
  echo "$dir" >"$state/pg.dir"
  echo "$dir"
}

pg_up() {
  local bin
  bin=$(pg_bin) || true
  [[ -n $bin ]] || die "PostgreSQL not found (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin): apt-get install postgresql, or start Docker"
  is_local "$pg_host" || die "PostgreSQL at $pg_host:$pg_port does not answer and is not on this machine: start it there, or point DATABASE_URL at a running one"
  local dir data
  dir=$(pg_dir)
  data="$dir/data"
  if [[ ! -f $data/PG_VERSION ]]; then
    # Peer auth on the socket for setting up; passwords over TCP.
    as_pg "$bin/initdb" -D "$data" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
      --encoding=UTF8 --no-instructions >"$dir/initdb.log" 2>&1 ||
      die "initdb failed; see $dir/initdb.log"
  fi
  # fsync off: this is a throwaway teaching database, and tests should not
  # wait for the disk. Never do this with data you want to keep.
  as_pg "$bin/pg_ctl" -D "$data" -l "$dir/postgres.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null || die "PostgreSQL did not start; see $dir/postgres.log"
  touch "$state/pg.started"
  # Create the role and the database the URL names, once.
  local psql=("$bin/psql" -h "$dir" -p "$pg_port" -U postgres -d postgres -qtAX -v ON_ERROR_STOP=1)
  local found
  found=$(as_pg "${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = '$pg_user'") ||
    die "cannot reach the local PostgreSQL to create role $pg_user; see $dir/postgres.log"
  if [[ -z $found ]]; then
    as_pg "${psql[@]}" -c "CREATE ROLE \"$pg_user\" LOGIN PASSWORD '${pg_pass//\'/\'\'}'" >/dev/null
  fi
  found=$(as_pg "${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = '$pg_db'")
  if [[ -z $found ]]; then
    as_pg "${psql[@]}" -c "CREATE DATABASE \"$pg_db\" OWNER \"$pg_user\"" >/dev/null
  fi
  say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port, database $pg_db"
}

pg_down() {
  [[ -f $state/pg.started ]] || return 0
  local bin
  bin=$(pg_bin)
  as_pg "$bin/pg_ctl" -D "$(cat "$state/pg.dir")/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -f "$state/pg.started"
  say "stopped PostgreSQL"
}

# --- commands ------------------------------------------------------------------

up() {
  local need_redis=1 need_pg=1
  reachable "$redis_host" "$redis_port" && { need_redis=0; say "Redis answers at $redis_host:$redis_port"; }
  reachable "$pg_host" "$pg_port" && { need_pg=0; say "PostgreSQL answers at $pg_host:$pg_port"; }
  ((need_redis || need_pg)) || return 0
  if docker_works; then
    compose_up
    return
  fi
  ((need_redis)) && redis_up
  ((need_pg)) && pg_up
  return 0
}

down() {
  if [[ -f $state/compose ]]; then
    (cd "$root" && docker compose down)
    rm -f "$state/compose"
  fi
  redis_down
  pg_down
}

status() {
  local rc=0
  if reachable "$redis_host" "$redis_port"; then say "Redis: answers at $redis_host:$redis_port"; else say "Redis: nothing at $redis_host:$redis_port"; rc=1; fi
  if reachable "$pg_host" "$pg_port"; then say "PostgreSQL: answers at $pg_host:$pg_port"; else say "PostgreSQL: nothing at $pg_host:$pg_port"; rc=1; fi
  [[ -f $state/compose ]] && say "started here: docker compose"
  [[ -f $state/redis.started ]] && say "started here: redis-server"
  [[ -f $state/pg.started ]] && say "started here: PostgreSQL in $(cat "$state/pg.dir")"
  return $rc
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
