#!/usr/bin/env bash
# Starts the services the tests need (PostgreSQL, Redis) when they are not
# already answering on loopback, using the commands this machine documents.
# Installs nothing and changes nothing that is already running.
set -euo pipefail

wait_for() { # name, check command...
  local name=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "services: $name did not come up" >&2
  return 1
}

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432 -q
fi
if ! psql -h 127.0.0.1 -U postgres -d test -Atc 'select 1' >/dev/null 2>&1; then
  psql -h 127.0.0.1 -U postgres -d postgres -c 'CREATE DATABASE test' >/dev/null
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
  echo "services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis bash -c 'redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG'
fi
echo "services: PostgreSQL and Redis are up"
