#!/bin/sh
# Creates Temporal's two PostgreSQL databases and brings both schemas up to the version this
# temporal-sql-tool carries (they are embedded in it). Run by docker-compose.yml's temporal-schema
# service on every `up`: once the schemas are current it changes nothing.
# Reads SQL_PLUGIN, SQL_HOST, SQL_PORT, SQL_USER and SQL_PASSWORD, as temporal-sql-tool does.
set -eu

create() { # create <database>: an existing database is fine, any other failure is not
  if ! out=$(temporal-sql-tool --db "$1" create-database 2>&1); then
    case $out in
      *"already exists"*) ;;
      *) echo "temporal-schema: cannot create database $1 on ${SQL_HOST:-?}:${SQL_PORT:-?} as ${SQL_USER:-?}:" >&2
         echo "$out" >&2
         exit 1 ;;
    esac
  fi
}

setup() { # setup <database> <embedded schema>
  create "$1"
  temporal-sql-tool --db "$1" setup-schema -v 0.0
  temporal-sql-tool --db "$1" update-schema --schema-name "$2"
  echo "temporal-schema: database $1 is at the current $2 schema"
}

setup "${DBNAME:-temporal}" postgresql/v12/temporal
setup "${VISIBILITY_DBNAME:-temporal_visibility}" postgresql/v12/visibility
