#!/bin/sh
# The first start of an empty data directory, as the official postgres image does it for the variables
# Flotilla's docker-compose.yml uses (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA); then the
# server in the foreground. Runs as the postgres user: the server refuses root.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres: POSTGRES_PASSWORD is not set: the database would accept anyone" >&2
    exit 1
  fi
  user=${POSTGRES_USER:-postgres}
  # The password reaches initdb on a pipe, never in a file or on a command line.
  printf '%s\n' "$POSTGRES_PASSWORD" | initdb -D "$PGDATA" --username="$user" --pwfile=/dev/stdin \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >/dev/null
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\";" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres: initialised $PGDATA for $user"
fi
exec "$@"
