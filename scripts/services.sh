#!/usr/bin/env bash
# services.sh up|down|status: make Redis and PostgreSQL reachable where the
# programs look for them (REDIS_URL or REDIS_ADDR, DATABASE_URL; defaults
# localhost:6379 and postgres://walletlock:walletlock@localhost:5432/walletlock),
# and make sure they let us log in with the configured credentials.
#
# `up` tries, in order:
#   1. the services already answer and let us log in: use them as they are.
#      One that answers but refuses us stops `up` with what it answered and
#      the two ways out (fix that server, or run ours on other ports);
#   2. a Docker engine answers (`docker info`) and the configuration is the
#      one docker-compose.yml publishes: docker compose up -d --wait;
#   3. local binaries: redis-server, and PostgreSQL's initdb/pg_ctl from PATH
#      or /usr/lib/postgresql/*/bin. Missing ones are installed first with
#      apt-get (as root, or through sudo) or Homebrew; where that cannot be
#      done, `up` stops with the command to run.
# Local servers bind to 127.0.0.1 only and keep their data in .services/ (git
# ignored), or, when running as root and the postgres user cannot reach the
# repo, in a private temporary folder. `up` twice is harmless; `down` stops
# only what `up` started. Everything is said on stderr: stdout may be JSON.
# No password is ever put on a command line or printed.
#
# services.sh redlock-up|redlock-down|redlock-status: the three independent
# Redis nodes of step 6's redlock strategy (REDLOCK_ADDRS, by default
# 127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382), local redis-server
# processes with no persistence, data and pids in .services/redlock-PORT/.
# A node that already answers is used as it is. `redlock-down` (and `down`)
# stop only the nodes `redlock-up` started.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state="$root/.services"
mkdir -p "$state"

die() { echo "services: $*" >&2; exit 1; }
say() { echo "services: $*" >&2; }

# macOS has no timeout(1) unless coreutils is installed.
if ! command -v timeout >/dev/null 2>&1; then
  timeout() {
    local secs=$1 pid watcher rc=0
    shift
    "$@" &
    pid=$!
    (sleep "$secs" && kill "$pid" 2>/dev/null) &
    watcher=$!
    wait "$pid" || rc=$?
    kill "$watcher" 2>/dev/null || true
    return "$rc"
  }
fi

# --- configuration, parsed the way the Go programs read it -----------------

# check_userinfo NAME URL: refuse a user or password that the URL parser
# would split in the wrong place, before any part of it can be printed.
check_userinfo() {
  local rest=${2#*://} info
  [[ $rest == *@* ]] || return 0
  info=${rest%@*}
  if [[ $info == *[@/?#\ ]* || $info =~ %([^0-9A-Fa-f]|.[^0-9A-Fa-f]|.?$) ]]; then
    die "$1: percent-encode @ : / ? # % and spaces in the user and password (as %40 %3A %2F %3F %23 %25 %20)"
  fi
}

# urldecode S: undo percent-encoding.
urldecode() {
  local s=${1//\\/\\\\}
  printf '%b' "${s//%/\\x}"
}

# parse_url URL: sets u_user u_pass u_host u_port u_path u_query (decoded,
# empty when absent).
parse_url() {
  local rest=${1#*://} auth=""
  u_user="" u_pass="" u_host="" u_port="" u_path="" u_query=""
  if [[ $rest == *\?* ]]; then u_query=${rest#*\?}; rest=${rest%%\?*}; fi
  if [[ $rest == */* ]]; then u_path=${rest#*/}; rest=${rest%%/*}; fi
  if [[ $rest == *@* ]]; then auth=${rest%@*}; rest=${rest##*@}; fi
  if [[ $auth == *:* ]]; then u_user=${auth%%:*}; u_pass=${auth#*:}; else u_user=$auth; fi
  if [[ $rest == *:* ]]; then u_host=${rest%:*}; u_port=${rest##*:}; else u_host=$rest; fi
  u_user=$(urldecode "$u_user")
  u_pass=$(urldecode "$u_pass")
  u_path=$(urldecode "$u_path")
}

# query_param NAME: the value of NAME in u_query.
query_param() {
  local kv
  local IFS='&'
  for kv in $u_query; do
    [[ $kv == "$1="* ]] && { echo "${kv#*=}"; return; }
  done
  return 0
}

redis_scheme=redis redis_user="" redis_pass="" redis_db=0
if [[ -n ${REDIS_URL:-} ]]; then
  check_userinfo REDIS_URL "$REDIS_URL"
  redis_scheme=${REDIS_URL%%://*}
  parse_url "$REDIS_URL"
  redis_user=$u_user redis_pass=$u_pass
  redis_host=${u_host:-localhost} redis_port=${u_port:-6379} redis_db=${u_path:-0}
else
  addr=${REDIS_ADDR:-localhost:6379}
  redis_host=${addr%:*} redis_port=${addr##*:}
fi

pg_url=${DATABASE_URL:-postgres://walletlock:walletlock@localhost:5432/walletlock?sslmode=disable}
check_userinfo DATABASE_URL "$pg_url"
parse_url "$pg_url"
pg_user=${u_user:-walletlock} pg_pass=$u_pass pg_host=${u_host:-localhost} pg_port=${u_port:-5432}
pg_db=${u_path:-$pg_user}
pg_sslmode=$(query_param sslmode)

is_local() { [[ $1 == localhost || $1 == 127.0.0.1 || $1 == ::1 ]]; }

# reachable HOST PORT: a TCP connect within 2 seconds.
# shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
reachable() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }

# reachable_soon HOST PORT: reachable within about 2 seconds, the time a
# service that a package just started may take to listen.
reachable_soon() {
  for _ in $(seq 20); do
    reachable "$1" "$2" && return 0
    sleep 0.1
  done
  return 1
}

# scrub TEXT: TEXT with the configured passwords blanked out, in case a
# server quotes what it was sent. A password that is also the user's name
# (walletlock:walletlock, the public default) is shown as that name anyway.
scrub() {
  local s=$1
  [[ -n $redis_pass && $redis_pass != "$redis_user" ]] && s=${s//"$redis_pass"/***}
  [[ -n $pg_pass && $pg_pass != "$pg_user" ]] && s=${s//"$pg_pass"/***}
  echo "$s"
}

# --- logging in --------------------------------------------------------------

# resp ARG...: one Redis command in the wire format.
resp() {
  local LC_ALL=C a # ${#a} counts bytes, as the protocol does
  printf '*%d\r\n' $#
  for a in "$@"; do printf '$%d\r\n%s\r\n' "${#a}" "$a"; done
}

# redis_login: AUTH as configured, SELECT the database, PING, over a plain
# socket (the password goes down the socket, never onto a command line).
# Prints the server's answer and fails when it is not a welcome.
redis_login() {
  local n=0 line
  exec 3<>"/dev/tcp/$redis_host/$redis_port" || { echo "no connection"; return 1; }
  {
    if [[ -n $redis_pass && -n $redis_user ]]; then resp AUTH "$redis_user" "$redis_pass"; n=$((n + 1))
    elif [[ -n $redis_pass ]]; then resp AUTH "$redis_pass"; n=$((n + 1)); fi
    if [[ $redis_db != 0 ]]; then resp SELECT "$redis_db"; n=$((n + 1)); fi
    resp PING
  } >&3
  for ((n = n + 1; n > 0; n--)); do
    if ! IFS= read -r -t 3 line <&3; then echo "no answer to PING within 3 s: is it Redis?"; return 1; fi
    line=${line%$'\r'}
    case $line in
      -*) scrub "${line#-}"; return 1 ;;
      +*) ;;
      *) echo "an answer that is not Redis's"; return 1 ;;
    esac
  done
  [[ $line == +PONG ]] || { echo "an answer that is not Redis's"; return 1; }
}

psql_bin() {
  local bin
  if command -v psql 2>/dev/null; then return; fi
  bin=$(pg_bin) || true
  [[ -n $bin && -x $bin/psql ]] && echo "$bin/psql"
}

# pg_login: connect as the configured user to the configured database. The
# password travels in psql's environment. Prints the server's answer and
# fails when it refuses.
pg_login() {
  local psql out
  psql=$(psql_bin) || true
  [[ -n $psql ]] || return 2
  if out=$(PGPASSWORD=$pg_pass PGCONNECT_TIMEOUT=5 PGSSLMODE=${pg_sslmode:-prefer} \
    "$psql" -h "$pg_host" -p "$pg_port" -U "$pg_user" -d "$pg_db" -w -qtAX -c 'SELECT 1' 2>&1); then
    return 0
  fi
  # psql: error: connection to server at "x" (127.0.0.1), port 5432 failed: FATAL:  database "w" does not exist
  out=$(grep -m 1 'FATAL:' <<<"$out" || head -n 1 <<<"$out")
  scrub "$(sed -e 's/^psql: error: //' -e 's/^connection to server .* failed: //' -e 's/^FATAL: *//' <<<"$out")"
  return 1
}

# redis_check and pg_check set *_state to ok, refused or absent, and
# *_answer to what a refusing server said.
redis_check() {
  redis_answer="" redis_note=""
  if ! reachable "$redis_host" "$redis_port"; then redis_state=absent; return; fi
  if [[ $redis_scheme == rediss ]]; then
    redis_state=ok redis_note=" (TLS: the login is not checked here)"
  elif redis_answer=$(redis_login 2>/dev/null); then
    redis_state=ok
  else
    redis_state=refused
  fi
}

pg_check() {
  local rc=0
  pg_answer="" pg_note=""
  if ! reachable "$pg_host" "$pg_port"; then pg_state=absent; return; fi
  pg_answer=$(pg_login) || rc=$?
  case $rc in
    0) pg_state=ok ;;
    2) pg_state=ok pg_note=" (psql not found: the login is not checked here)" ;;
    *) pg_state=refused ;;
  esac
}

# free_port START: the first port after START where nothing answers.
free_port() {
  local p
  for ((p = $1 + 1; p < $1 + 50; p++)); do
    reachable 127.0.0.1 "$p" || { echo "$p"; return; }
  done
  echo $(($1 + 1))
}

# ours redis|pg HOST PORT: the server there is one that `up` started.
ours() { is_local "$2" && [[ -f $state/$1.started && $(cat "$state/$1.started") == "$3" ]]; }

# sql_ident NAME: NAME as it must be written in SQL.
sql_ident() { if [[ $1 =~ ^[a-z_][a-z0-9_]*$ ]]; then echo "$1"; else echo "\\\"${1//\"/\"\"}\\\""; fi; }

# refusals [status]: what each refusing server answered (unless status
# said it already), how to fix it there, and the variables that make `up`
# run servers of its own on free ports.
refusals() {
  local own=() pw="<password>"
  [[ $pg_pass == walletlock ]] && pw=walletlock # the default, public anyway
  if [[ $redis_state == refused ]]; then
    [[ ${1:-} == status ]] || say "Redis at $redis_host:$redis_port refuses us: $redis_answer"
    if ours redis "$redis_host" "$redis_port"; then
      say "  fix: it is the Redis \`make up\` started with other settings: make down; make up"
    else
      case $redis_answer in
        NOAUTH*) say "  fix: give it the password it wants: export REDIS_URL='redis://:PASSWORD@$redis_host:$redis_port'" ;;
        WRONGPASS*) say "  fix: give the user and password it knows: export REDIS_URL='redis://USER:PASSWORD@$redis_host:$redis_port'" ;;
        *"without any password configured"*) say "  fix: it has no password: drop it from REDIS_URL" ;;
      esac
    fi
    [[ -n ${REDIS_URL:-} ]] && own+=("REDIS_URL=")
    own+=("REDIS_ADDR=localhost:$(free_port 6379)")
  fi
  if [[ $pg_state == refused ]]; then
    local u d
    u=$(sql_ident "$pg_user") d=$(sql_ident "$pg_db")
    [[ ${1:-} == status ]] || say "PostgreSQL at $pg_host:$pg_port refuses us: $pg_answer"
    if ours pg "$pg_host" "$pg_port"; then
      say "  fix: it is the PostgreSQL \`make up\` started with other settings: make down; make up"
    else
      case $pg_answer in
        'database "'*'" does not exist')
          say "  fix: create the database there: psql -h $pg_host -p $pg_port -U postgres -c \"CREATE DATABASE $d OWNER $u\"" ;;
        *"password authentication failed"* | 'role "'*'" does not exist')
          say "  fix: create the role and the database there: psql -h $pg_host -p $pg_port -U postgres -c \"CREATE ROLE $u LOGIN PASSWORD '$pw'\" -c \"CREATE DATABASE $d OWNER $u\"" ;;
      esac
    fi
    own+=("DATABASE_URL='postgres://walletlock:walletlock@localhost:$(free_port 5432)/walletlock?sslmode=disable'")
  fi
  local it="it alone" one="its own on a free port"
  ((${#own[@]} > 1)) && [[ $redis_state == refused && $pg_state == refused ]] && it="them alone" one="servers of its own on free ports"
  say "or leave $it and let \`make up\` start $one: export ${own[*]}; make up"
}

# --- installing what is missing ------------------------------------------------

# as_root CMD...: run CMD as root, through sudo when we are not root.
as_root() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi; }

# install PURPOSE APT-PACKAGES BREW-PACKAGES: install with the machine's
# package manager where that is safe, or stop with the command to run.
install() {
  local why=$1 apt=$2 brew=$3 log="$state/install.log" sudo=""
  case $(uname -s) in
    Darwin)
      command -v brew >/dev/null 2>&1 ||
        die "$why, and Homebrew is not installed: install it (https://brew.sh), then run: brew install $brew; or start Docker"
      say "installing $brew with brew: $why"
      # shellcheck disable=SC2086 # a list of package names
      brew install $brew >"$log" 2>&1 || die "brew install $brew failed (see $log); run it yourself, then make up"
      ;;
    *)
      if ! command -v apt-get >/dev/null 2>&1; then
        local cmd="your package manager"
        if command -v dnf >/dev/null 2>&1; then cmd="sudo dnf install -y redis postgresql-server"
        elif command -v apk >/dev/null 2>&1; then cmd="sudo apk add redis postgresql"
        elif command -v pacman >/dev/null 2>&1; then cmd="sudo pacman -S --needed redis postgresql"
        elif command -v zypper >/dev/null 2>&1; then cmd="sudo zypper install -y redis postgresql-server"
        fi
        die "$why: install redis-server and PostgreSQL (initdb, pg_ctl) with $cmd, or start Docker"
      fi
      if [[ $(id -u) != 0 ]]; then
        sudo="sudo "
        command -v sudo >/dev/null 2>&1 ||
          die "$why: as root, run: apt-get update && apt-get install -y $apt; or start Docker"
        if ! sudo -n true 2>/dev/null; then
          [[ -t 0 ]] || die "$why, and sudo needs a password: run sudo apt-get update && sudo apt-get install -y $apt; then make up"
          say "installing $apt with sudo apt-get: $why; sudo may ask for your password"
          sudo -v || die "sudo refused: run sudo apt-get update && sudo apt-get install -y $apt; then make up"
        else
          say "installing $apt with sudo apt-get: $why"
        fi
      else
        say "installing $apt with apt-get: $why"
      fi
      as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$log" 2>&1 ||
        die "apt-get update failed (see $log); run ${sudo}apt-get update && ${sudo}apt-get install -y $apt; then make up"
      # shellcheck disable=SC2086 # a list of package names
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $apt >>"$log" 2>&1 ||
        die "apt-get install failed (see $log); run ${sudo}apt-get install -y $apt; then make up"
      ;;
  esac
}

# install_missing: install the binaries that the services we must start
# lack. Sets installed_redis and installed_pg.
install_missing() {
  local apt=() brew=() where=()
  installed_redis=0 installed_pg=0
  # Only for this machine: redis_up and pg_up refuse a server elsewhere.
  if ((need_redis)) && is_local "$redis_host" && ! command -v redis-server >/dev/null 2>&1; then
    apt+=(redis-server) brew+=(redis) where+=("$redis_host:$redis_port")
    installed_redis=1
  fi
  if ((need_pg)) && is_local "$pg_host" && [[ -z $(pg_bin) ]]; then
    apt+=(postgresql) brew+=(postgresql@17) where+=("$pg_host:$pg_port")
    installed_pg=1
  fi
  ((installed_redis || installed_pg)) || return 0
  install "nothing answers at ${where[*]} and ${apt[*]} is not installed" "${apt[*]}" "${brew[*]}"
}

# --- Docker ------------------------------------------------------------------

docker_works() { command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; }

# compose_fits SERVICE...: docker-compose.yml publishes what we are
# configured for (its ports, its credentials, on this machine).
compose_fits() {
  local s
  for s in "$@"; do
    case $s in
      redis) is_local "$redis_host" && [[ $redis_port == 6379 && -z $redis_pass ]] || return 1 ;;
      postgres) is_local "$pg_host" && [[ $pg_port == 5432 && $pg_user == walletlock && $pg_pass == walletlock && $pg_db == walletlock ]] || return 1 ;;
    esac
  done
}

compose_up() {
  say "starting $* with docker compose (redis:8.10.2, postgres:18)"
  (cd "$root" && docker compose up -d --wait "$@") >&2
  touch "$state/compose"
}

# --- local Redis ---------------------------------------------------------------

# rconf S: S quoted for a redis.conf line.
rconf() { local s=${1//\\/\\\\}; echo "\"${s//\"/\\\"}\""; }

# redis_conf PORT DIR: the lines every redis-server we start shares, for
# its configuration on stdin: in the background, its files in DIR, and no
# persistence (these servers hold demo and test data only).
redis_conf() {
  echo "port $1"
  echo "daemonize yes"
  echo "dir $(rconf "$2")"
  echo "pidfile $(rconf "$2/redis.pid")"
  echo "logfile $(rconf "$2/redis.log")"
  echo 'save ""'
  echo "appendonly no"
}

redis_up() {
  is_local "$redis_host" || die "Redis at $redis_host:$redis_port does not answer and is not on this machine: start it there, or point REDIS_ADDR at a running one"
  command -v redis-server >/dev/null 2>&1 ||
    die "redis-server not found: apt-get install redis-server (or brew install redis), or start Docker"
  local dir="$state/redis"
  mkdir -p "$dir"
  # The configuration goes in on stdin, so the password is on no command line.
  {
    echo "bind 127.0.0.1"
    redis_conf "$redis_port" "$dir"
    if [[ -n $redis_user && $redis_user != default ]]; then
      if [[ -n $redis_pass ]]; then echo "user $(rconf "$redis_user") on $(rconf ">$redis_pass") ~* &* +@all"
      else echo "user $(rconf "$redis_user") on nopass ~* &* +@all"; fi
    elif [[ -n $redis_pass ]]; then
      echo "requirepass $(rconf "$redis_pass")"
    fi
  } | redis-server - >/dev/null 2>&1 || die "redis-server did not start; see $dir/redis.log"
  for _ in $(seq 50); do
    reachable 127.0.0.1 "$redis_port" && { echo "$redis_port" >"$state/redis.started"; say "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$redis_port"; return; }
    sleep 0.1
  done
  die "redis-server did not start; see $dir/redis.log"
}

redis_down() {
  [[ -f $state/redis.started ]] || return 0
  local pid
  pid=$(cat "$state/redis/redis.pid" 2>/dev/null || true)
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; fi
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
  # Debian's packages, then Homebrew's versioned (keg-only) formulae.
  for d in $(printf '%s\n' /usr/lib/postgresql/*/bin /opt/homebrew/opt/postgresql@*/bin /usr/local/opt/postgresql@*/bin | sort -V -r); do
    [[ -x $d/initdb ]] && { echo "$d"; return; }
  done
  return 0
}

# as_pg CMD...: run as the postgres user when we are root (initdb and
# postgres refuse to run as root), as ourselves otherwise. From /: su keeps
# the working directory, and psql and initdb fail with "could not change
# directory" in one the postgres user cannot enter (a clone inside a 0700
# folder). Every path given to them is absolute.
as_pg() {
  if [[ $(id -u) == 0 ]]; then
    (cd / && su postgres -s /bin/bash -c "$(printf '%q ' "$@")")
  else
    "$@"
  fi
}

# psql_str S: S quoted for a psql \set argument.
psql_str() { local s=${1//\\/\\\\}; echo "'${s//\'/\'\'}'"; }

# role_sql: the statements that give the configured user its password and
# database, fed to psql on stdin so the password is on no command line.
role_sql() {
  echo "\\set u $(psql_str "$pg_user")"
  echo "\\set p $(psql_str "$pg_pass")"
  echo "\\set d $(psql_str "$pg_db")"
  echo "SELECT format('CREATE ROLE %I LOGIN', :'u') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'u')"
  echo '\gexec'
  [[ -n $pg_pass ]] && echo "SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', :'u', :'p')" && echo '\gexec'
  echo "SELECT format('CREATE DATABASE %I OWNER %I', :'d', :'u') WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'d')"
  echo '\gexec'
}

# pg_dir: where the cluster lives; created on first use.
pg_dir() {
  if [[ -f $state/pg.dir ]]; then cat "$state/pg.dir"; return; fi
  local dir="$state/pg"
  if [[ $(id -u) == 0 ]]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a postgres user to run PostgreSQL: apt-get install postgresql"
    mkdir -p "$dir" && chown postgres: "$dir" && chmod 700 "$dir"
    if ! as_pg test -w "$dir" 2>/dev/null; then
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
  is_local "$pg_host" || die "PostgreSQL at $pg_host:$pg_port does not answer and is not on this machine: start it there, or point DATABASE_URL at a running one"
  local bin
  bin=$(pg_bin) || true
  [[ -n $bin ]] || die "PostgreSQL not found (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin): apt-get install postgresql, or start Docker"
  local dir data
  dir=$(pg_dir)
  data="$dir/data"
  if [[ ! -f $data/PG_VERSION ]]; then
    # Peer auth on the socket for setting up; passwords over TCP. The C
    # locale exists everywhere, even where no locale is installed.
    as_pg "$bin/initdb" -D "$data" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
      --encoding=UTF8 --no-locale --no-instructions >"$dir/initdb.log" 2>&1 ||
      die "initdb failed; see $dir/initdb.log"
  fi
  # fsync off: this is a throwaway teaching database, and tests should not
  # wait for the disk. Never do this with data you want to keep.
  as_pg "$bin/pg_ctl" -D "$data" -l "$dir/postgres.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null || die "PostgreSQL did not start; see $dir/postgres.log"
  echo "$pg_port" >"$state/pg.started"
  role_sql | as_pg "$bin/psql" -h "$dir" -p "$pg_port" -U postgres -d postgres -qtAX -v ON_ERROR_STOP=1 >/dev/null ||
    die "cannot create role $pg_user and database $pg_db in the local PostgreSQL; see $dir/postgres.log"
  say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port, database $pg_db"
}

# pg_setup_packaged: the postgresql package we just installed started a
# server of its own on our port. It is new and empty: give it our role and
# database, as its postgres user over its socket.
pg_setup_packaged() {
  local bin
  bin=$(pg_bin)
  say "the postgresql package started its own server on port $pg_port; creating role $pg_user and database $pg_db in it (\`make down\` leaves it running)"
  if [[ $(id -u) == 0 ]]; then
    role_sql | as_pg "$bin/psql" -p "$pg_port" -d postgres -qtAX -v ON_ERROR_STOP=1 >/dev/null
  else
    role_sql | (cd / && sudo -u postgres "$bin/psql" -p "$pg_port" -d postgres -qtAX -v ON_ERROR_STOP=1) >/dev/null
  fi || die "cannot create role $pg_user and database $pg_db there; do it as its postgres user, or set DATABASE_URL to another port"
}

pg_down() {
  [[ -f $state/pg.started ]] || return 0
  local bin
  bin=$(pg_bin)
  as_pg "$bin/pg_ctl" -D "$(cat "$state/pg.dir")/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -f "$state/pg.started"
  say "stopped PostgreSQL"
}

# --- Redlock's nodes -------------------------------------------------------------

redlock_addrs=${REDLOCK_ADDRS:-127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382}

# redlock_nodes: the host:port of each node, one a line; stops on a bad one.
redlock_nodes() {
  local addr
  local IFS=,
  for addr in $redlock_addrs; do
    addr=${addr// /}
    [[ $addr == *:* && ${addr##*:} =~ ^[0-9]+$ ]] || die "REDLOCK_ADDRS: \"$addr\" is not host:port"
    echo "$addr"
  done
}

redlock_up() {
  local addr host port dir need=() answered=0 started=0 n=0
  local nodes
  nodes=$(redlock_nodes) || exit 1
  for addr in $nodes; do
    n=$((n + 1))
    host=${addr%:*} port=${addr##*:}
    if reachable "$host" "$port"; then
      answered=$((answered + 1))
      continue
    fi
    is_local "$host" || die "Redlock node $addr does not answer and is not on this machine: start it there, or change REDLOCK_ADDRS"
    need+=("$addr")
  done
  ((n >= 3)) || die "REDLOCK_ADDRS names $n nodes; Redlock needs at least 3"
  if ((${#need[@]} > 0)) && ! command -v redis-server >/dev/null 2>&1; then
    install "nothing answers at ${need[*]} and redis-server is not installed" redis-server redis
  fi
  for addr in "${need[@]}"; do
    host=${addr%:*} port=${addr##*:}
    dir="$state/redlock-$port"
    mkdir -p "$dir"
    # No persistence, on purpose: a node that restarts comes back empty,
    # which is what the drill shows Redlock cannot survive.
    {
      if [[ $host == ::1 ]]; then echo "bind ::1"; else echo "bind 127.0.0.1"; fi
      redis_conf "$port" "$dir"
    } | redis-server - >/dev/null 2>&1 || die "the Redlock node on port $port did not start; see $dir/redis.log"
    reachable_soon "$host" "$port" || die "the Redlock node on port $port did not start; see $dir/redis.log"
    echo "$port" >"$dir/started"
    started=$((started + 1)) answered=$((answered + 1))
  done
  local already=""
  ((answered > started)) && already=", $((answered - started)) already running"
  say "Redlock nodes: $answered of $n answer at $redlock_addrs (started $started here$already)"
}

redlock_down() {
  local f dir pid stopped=0
  for f in "$state"/redlock-*/started; do
    [[ -f $f ]] || continue
    dir=$(dirname "$f")
    pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
    if [[ -n $pid ]] && kill "$pid" 2>/dev/null; then
      # Wait, bounded, until it is gone: a redlock-up right after must
      # find the port free.
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$f"
    stopped=$((stopped + 1))
  done
  ((stopped == 0)) || say "stopped $stopped Redlock node(s)"
}

redlock_status() {
  local addr answered=0 n=0 down=()
  local nodes
  nodes=$(redlock_nodes) || exit 1
  for addr in $nodes; do
    n=$((n + 1))
    if reachable "${addr%:*}" "${addr##*:}"; then answered=$((answered + 1)); else down+=("$addr"); fi
  done
  if ((answered == n)); then
    say "Redlock nodes: $n of $n answer at $redlock_addrs"
    return 0
  fi
  say "Redlock nodes: $answered of $n answer (nothing at ${down[*]}): make redlock-up"
  return 1
}

# --- commands ------------------------------------------------------------------

# welcome: say which servers let us in; stop with the ways out when one
# refuses.
welcome() {
  [[ $redis_state == ok ]] && say "Redis at $redis_host:$redis_port lets us in$redis_note"
  [[ $pg_state == ok ]] && say "PostgreSQL at $pg_host:$pg_port lets $pg_user into $pg_db$pg_note"
  if [[ $redis_state == refused || $pg_state == refused ]]; then refusals; exit 1; fi
}

up() {
  redis_check
  pg_check
  if [[ $redis_state == refused || $pg_state == refused ]]; then welcome; fi
  need_redis=0 need_pg=0
  [[ $redis_state == absent ]] && need_redis=1
  [[ $pg_state == absent ]] && need_pg=1
  if ! ((need_redis || need_pg)); then welcome; return 0; fi

  local services=()
  ((need_redis)) && services+=(redis)
  ((need_pg)) && services+=(postgres)
  if docker_works; then
    if compose_fits "${services[@]}"; then
      compose_up "${services[@]}"
      redis_check
      pg_check
      welcome
      return 0
    fi
    say "Docker runs, but docker-compose.yml publishes other ports or credentials than configured: using local binaries"
  fi

  install_missing
  # A package may have started a service of its own on our port (Debian's
  # do): use it if it lets us in rather than fight it for the port.
  if ((installed_redis)) && reachable_soon "$redis_host" "$redis_port"; then
    say "the redis-server package started its own Redis at $redis_host:$redis_port (\`make down\` leaves it running)"
    need_redis=0
  fi
  if ((installed_pg)) && reachable_soon "$pg_host" "$pg_port"; then
    need_pg=0
    pg_check
    [[ $pg_state == refused ]] && pg_setup_packaged
  fi
  ((need_redis)) && redis_up
  ((need_pg)) && pg_up
  redis_check
  pg_check
  welcome
}

down() {
  if [[ -f $state/compose ]]; then
    (cd "$root" && docker compose down) >&2
    rm -f "$state/compose"
  fi
  redis_down
  pg_down
  redlock_down
}

status() {
  local rc=0
  redis_check
  pg_check
  case $redis_state in
    ok) say "Redis: answers at $redis_host:$redis_port and lets us in$redis_note" ;;
    refused) say "Redis: answers at $redis_host:$redis_port but refuses us: $redis_answer"; rc=1 ;;
    absent) say "Redis: nothing at $redis_host:$redis_port"; rc=1 ;;
  esac
  case $pg_state in
    ok) say "PostgreSQL: answers at $pg_host:$pg_port and lets $pg_user into $pg_db$pg_note" ;;
    refused) say "PostgreSQL: answers at $pg_host:$pg_port but refuses us: $pg_answer"; rc=1 ;;
    absent) say "PostgreSQL: nothing at $pg_host:$pg_port"; rc=1 ;;
  esac
  [[ -f $state/compose ]] && say "started here: docker compose"
  [[ -f $state/redis.started ]] && say "started here: redis-server"
  [[ -f $state/pg.started ]] && say "started here: PostgreSQL in $(cat "$state/pg.dir")"
  if [[ $redis_state == refused || $pg_state == refused ]]; then refusals status; fi
  return $rc
}

# scripts/cluster.sh sources this file for its helpers: then no command runs.
[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  redlock-up) redlock_up ;;
  redlock-down) redlock_down ;;
  redlock-status) redlock_status ;;
  *) echo "usage: $0 up|down|status|redlock-up|redlock-down|redlock-status" >&2; exit 2 ;;
esac
