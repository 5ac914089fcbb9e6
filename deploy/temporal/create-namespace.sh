#!/bin/sh
# Waits until the Temporal server answers, then creates the namespace Flotilla runs in unless it exists.
# Run by docker-compose.yml's temporal-namespace service; TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE are
# read as the temporal CLI and Flotilla read them.
set -eu
ns=${TEMPORAL_NAMESPACE:-default}
tries=0
until temporal operator cluster health >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge "${TEMPORAL_WAIT_SECONDS:-300}" ]; then
    echo "temporal-namespace: Temporal at ${TEMPORAL_ADDRESS:-127.0.0.1:7233} did not answer:" >&2
    temporal operator cluster health >&2 || true
    exit 1
  fi
  sleep 1
done
if temporal operator namespace describe --namespace "$ns" >/dev/null 2>&1; then
  echo "temporal-namespace: namespace $ns exists"
else
  temporal operator namespace create --namespace "$ns" --retention "${TEMPORAL_NAMESPACE_RETENTION:-72h}"
fi
