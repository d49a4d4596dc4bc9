#!/bin/sh
# An extension that never answers: it starts a grandchild and waits. $1 is a directory where it
# records both pids, and a marker if it ever receives SIGTERM (sevro must SIGKILL the group).
trap 'echo term > "$1/terminated"' TERM
sleep 300 &
echo $! > "$1/grandchild.pid"
echo $$ > "$1/child.pid"
wait
