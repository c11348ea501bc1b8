#!/bin/sh
# Development supervisor for Tilt's live update (tilt/Dockerfile). The
# root filesystem is read-only, so the binary runs from /app, an emptyDir
# the dev overlay mounts (deploy/k8s/overlays/dev/live-update.yaml).
#
# Live update syncs a new binary to /app/sync/agentruntime, then creates
# /tmp/agentruntime.restart. This script then stops the running process
# with SIGTERM (a graceful stop: health NOT_SERVING, drain), puts the new
# binary in place and starts it with the same arguments. The container
# stays up, so the synced binary is not lost. When the process exits on
# its own, the script exits with its status: Kubernetes sees the crash.
set -u

# The paths the Tiltfile and tilt/Dockerfile use; overridable for the test
# that runs this script (deploy/k8s/tilt_test.go).
image_binary=${DEV_IMAGE_BINARY:-/opt/agentruntime/agentruntime}
app=${DEV_APP_DIR:-/app}
trigger=${DEV_RESTART_TRIGGER:-/tmp/agentruntime.restart}
run_binary=$app/run/agentruntime
sync_binary=$app/sync/agentruntime

mkdir -p "$app/run" "$app/sync"
cp "$image_binary" "$run_binary"
rm -f "$trigger" "$sync_binary"

child=
stop() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null
		wait "$child"
		exit $?
	fi
	exit 0
}
trap stop TERM INT

while :; do
	"$run_binary" "$@" &
	child=$!
	while kill -0 "$child" 2>/dev/null; do
		if [ -e "$trigger" ]; then
			rm -f "$trigger"
			kill -TERM "$child"
			wait "$child"
			if [ -f "$sync_binary" ]; then
				# Copy, then rename: never run a half-written binary.
				cp "$sync_binary" "$run_binary.new" && chmod 0555 "$run_binary.new" && mv -f "$run_binary.new" "$run_binary"
			fi
			continue 2
		fi
		# Waiting on a background sleep lets the TERM trap run at once.
		sleep 1 &
		wait $!
	done
	wait "$child"
	exit $?
done
