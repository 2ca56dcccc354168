#!/usr/bin/env bash
# Start a PostgreSQL server for the review app's tests and print the URL they read
# (RESCUE_TEST_POSTGRES_URL). Debian's `postgresql` package is installed when missing; an already
# running cluster is reused; the role and database are created once. Runs as root (CI and the
# developers' machines); the server itself runs as the `postgres` user.
#
#   export RESCUE_TEST_POSTGRES_URL="$(bash .ci/postgres.sh)"
set -euo pipefail
ROLE=rescue_test
PASSWORD=rescue_test   # a throwaway role on a loopback-only test server
DB=rescue_test

log() { echo "postgres: $*" >&2; }

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  log "installing Debian's postgresql"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
fi
ver=$(ls /usr/lib/postgresql | sort -V | tail -1)

if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$ver main"; then
  log "creating cluster $ver/main"
  pg_createcluster "$ver" main >&2
fi
# "already running" (exit code 2) is fine
pg_ctlcluster "$ver" main start >/dev/null 2>&1 || true
port=$(pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $3}')

for _ in $(seq 1 60); do
  pg_isready -q -h 127.0.0.1 -p "$port" && break
  sleep 1
done
pg_isready -q -h 127.0.0.1 -p "$port" || { log "server on port $port did not come up"; exit 1; }

psql_admin() { su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -tAc \"$1\""; }
if [ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname='$ROLE'")" != "1" ]; then
  psql_admin "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'" >/dev/null
fi
# DROP DATABASE ... WITH (FORCE) in the tests terminates the sessions still in a test database, an
# autovacuum worker among them: that needs pg_signal_backend (granting it again is a no-op)
psql_admin "GRANT pg_signal_backend TO $ROLE" >/dev/null
if [ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname='$DB'")" != "1" ]; then
  psql_admin "CREATE DATABASE $DB OWNER $ROLE" >/dev/null
fi
echo "postgresql://$ROLE:$PASSWORD@127.0.0.1:$port/$DB"
