#!/usr/bin/env bash
# cluster.sh up|down|status: a Redis Cluster of three masters, each with one
# replica, on six loopback ports (CLUSTER_PORT, default 7001, and the five
# after it), for running the steps on a cluster:
#
#   make cluster-up
#   REDIS_ADDR=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go run ./cmd/step2-lock
#
# `up` uses docker compose (the `cluster` profile of docker-compose.yml,
# redis:8.10.2) when a Docker engine answers and the ports are the default
# ones; otherwise it starts six local redis-server processes, installing
# redis-server first (apt-get or brew) as `make up` does, joins them with
# `redis-cli --cluster create`, and waits until every node says
# cluster_state:ok. Data lives in .services/cluster-7001/ and is thrown away:
# each `up` of a stopped cluster starts an empty one. `up` twice is
# harmless; `down` stops only the processes `up` started, by their pid
# files. Everything is said on stderr.
set -euo pipefail

# The helpers of services.sh (install, reachable, docker_works, as_root...).
# shellcheck source=scripts/services.sh
source "$(dirname "${BASH_SOURCE[0]}")/services.sh"
die() { echo "cluster: $*" >&2; exit 1; }
say() { echo "cluster: $*" >&2; }

first=${CLUSTER_PORT:-7001}
# A node also listens on its port + 10000, for the cluster bus.
if ! [[ $first =~ ^[0-9]+$ ]] || ((first < 1024 || first + 5 + 10000 > 65535)); then
  die "CLUSTER_PORT must be a port from 1024 to 55530 (each node also takes its port + 10000), not \"$first\""
fi
ports=()
for ((p = first; p < first + 6; p++)); do ports+=("$p"); done
# One folder per CLUSTER_PORT: two clusters on other ports are two clusters.
dir="$state/cluster-$first"
started="$state/cluster-$first.started"

# addrs [N]: the first N (default all six) nodes as 127.0.0.1:port words.
addrs() {
  local n=${1:-6} out=()
  for p in "${ports[@]:0:n}"; do out+=("127.0.0.1:$p"); done
  echo "${out[*]}"
}

# cluster_state PORT: the node's cluster_state (ok, fail), or "down".
cluster_state() {
  local out
  out=$(timeout 3 redis-cli -h 127.0.0.1 -p "$1" cluster info 2>/dev/null) || { echo down; return; }
  out=$(tr -d '\r' <<<"$out" | sed -n 's/^cluster_state://p')
  echo "${out:-down}"
}

# all_ok: every node says cluster_state:ok.
all_ok() {
  local p
  for p in "${ports[@]}"; do [[ $(cluster_state "$p") == ok ]] || return 1; done
}

# wait_ok SECONDS: until every node says cluster_state:ok.
wait_ok() {
  for ((i = 0; i < $1 * 5; i++)); do
    all_ok && return 0
    sleep 0.2
  done
  return 1
}

# pid_of PORT: the pid of the redis-server we started on PORT, if it runs.
pid_of() {
  local pid
  pid=$(cat "$dir/$1/redis.pid" 2>/dev/null) || return 1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
  # A pid file outlives its process, and the pid may be reused: only a
  # redis-server is ours.
  [[ $(ps -p "$pid" -o comm= 2>/dev/null) == redis-server* ]] || return 1
  echo "$pid"
}

ready() {
  local how=$1
  say "Redis Cluster ($how): 3 masters and 3 replicas on 127.0.0.1:${ports[0]}-${ports[5]}, cluster_state:ok on every node"
  say "use it with: export REDIS_ADDR=$(addrs 3 | tr ' ' ',')"
}

compose_cluster_up() {
  say "starting the cluster with docker compose (profile cluster, redis:8.10.2)"
  (cd "$root" && docker compose --profile cluster up -d --wait redis-cluster) >&2 ||
    die "docker compose could not start the cluster; see: docker compose --profile cluster logs redis-cluster"
  echo compose >"$started"
  wait_ok 30 || die "the cluster in docker did not reach cluster_state:ok within 30 s; see: docker compose --profile cluster logs redis-cluster"
  ready "docker compose"
}

local_up() {
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    install "redis-server is not installed, and the cluster needs it" redis-server redis
  fi
  rm -rf "$dir" # nodes.conf of an earlier cluster would make them rejoin it
  local p d
  for p in "${ports[@]}"; do
    d="$dir/$p"
    mkdir -p "$d"
    # Failover after 3 s without a master, not the default 15 s: a teaching
    # cluster on one machine, where a silent node is a stopped one.
    {
      echo "bind 127.0.0.1"
      redis_conf "$p" "$d"
      echo "cluster-enabled yes"
      echo "cluster-config-file nodes.conf"
      echo "cluster-node-timeout 3000"
    } | redis-server - >/dev/null 2>&1 || { local_down; die "redis-server did not start on port $p; see $d/redis.log"; }
    echo "$p" >>"$started"
  done
  for p in "${ports[@]}"; do
    reachable_soon 127.0.0.1 "$p" || { local_down; die "redis-server on port $p did not answer; see $dir/$p/redis.log"; }
  done
  # shellcheck disable=SC2046 # one word per node
  if ! redis-cli --cluster create $(addrs) --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1; then
    local_down
    die "redis-cli --cluster create failed; see $dir/create.log"
  fi
  if ! wait_ok 30; then
    local_down
    die "the cluster did not reach cluster_state:ok within 30 s; see $dir/*/redis.log"
  fi
  ready "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
}

local_down() {
  local p pid stopped=0
  for p in "${ports[@]}"; do
    pid=$(pid_of "$p") || continue
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    stopped=$((stopped + 1))
  done
  rm -f "$started"
  ((stopped == 0)) || say "stopped $stopped redis-server processes of the cluster"
}

up() {
  if [[ -f $started ]] && all_ok; then
    ready "already running"
    return 0
  fi
  local p
  for p in "${ports[@]}"; do
    pid_of "$p" >/dev/null && continue
    if reachable 127.0.0.1 "$p" || reachable 127.0.0.1 $((p + 10000)); then
      die "port $p (or its bus port $((p + 10000))) is taken by something this script did not start: stop it, or pick other ports with CLUSTER_PORT=8001 make cluster-up"
    fi
  done
  # Leftovers of a half-started cluster go first.
  [[ -f $started && $(cat "$started") != compose ]] && local_down
  if ((first == 7001)) && docker_works; then
    compose_cluster_up
  else
    local_up
  fi
}

down() {
  [[ -f $started ]] || { say "no cluster started here; nothing to stop"; return 0; }
  if [[ $(cat "$started") == compose ]]; then
    (cd "$root" && docker compose --profile cluster down) >&2
    rm -f "$started"
    say "stopped the cluster in docker compose"
    return 0
  fi
  local_down
}

status() {
  local p rc=0 role s
  for p in "${ports[@]}"; do
    s=$(cluster_state "$p")
    if [[ $s == down ]]; then
      say "127.0.0.1:$p: nothing answers"
      rc=1
      continue
    fi
    role=$(timeout 3 redis-cli -h 127.0.0.1 -p "$p" role 2>/dev/null | head -n 1 | tr -d '\r')
    say "127.0.0.1:$p: $role, cluster_state:$s"
    [[ $s == ok ]] || rc=1
  done
  if [[ -f $started ]]; then say "started here: $(if [[ $(cat "$started") == compose ]]; then echo docker compose; else echo redis-server processes; fi)"; fi
  return $rc
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
