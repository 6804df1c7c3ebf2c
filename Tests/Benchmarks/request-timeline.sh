#!/usr/bin/env bash
# Where each request of ffmpeg's start of the 300-fragment film (fragmented-start.sh) spends its
# time, from the system calls of one run (`perf record` of connect, accept4, recvfrom and the
# sends): for each of ffmpeg's ~303 requests, its connect -> the server's accept, the accept ->
# the server's first read of the request, that read -> the server's first send of the answer,
# and that send -> ffmpeg's next connect (ffmpeg's own part). Runs, one after the other: nginx
# direct, `serve` with a fresh cache (the walk ahead runs beside ffmpeg), and `serve` again with
# the cache the first run left (nothing fetched). Needs perf (linux-perf) and root or
# kernel.perf_event_paranoid <= -1. Not a test: one run each; repeat it.
#
#   Tests/Benchmarks/request-timeline.sh [MP4PROBE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Benchmarks/nginx-origin.sh
fragmented_bench "$@"
start_origin "$dir" "$dir/www"
trap 'stop_origin' EXIT
events="-e syscalls:sys_enter_connect -e syscalls:sys_exit_accept4 -e syscalls:sys_enter_recvfrom -e syscalls:sys_enter_sendto -e syscalls:sys_enter_writev -e syscalls:sys_enter_sendfile64"
# record NAME SERVER_PID URL
record() {
  perf record -q $events -a -o "$dir/timeline.perf" -- ffmpeg -v error -nostdin -i "$3" -t 2 -f null - 2>/dev/null
  perf script -i "$dir/timeline.perf" -F comm,pid,time,event,trace 2>/dev/null > "$dir/timeline-$1.txt"
  python3 - "$dir/timeline-$1.txt" "$2" "$1" <<'PY'
import re, sys, statistics
path, server, name = sys.argv[1], sys.argv[2], sys.argv[3]
events = []
for line in open(path):
    m = re.match(r'\s*(.+?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)', line)
    if m: events.append((float(m.group(3)), m.group(1).strip(), m.group(2), m.group(4), m.group(5)))
def fd(trace):
    m = re.search(r'fd: 0x([0-9a-f]+)', trace)
    return int(m.group(1), 16) if m else None
connects = [t for t, comm, pid, e, tr in events if comm == 'ffmpeg' and 'connect' in e]
accepts = []
for t, comm, pid, e, tr in events:
    if pid == server and 'exit_accept4' in e:
        m = re.search(r'0x([0-9a-f]+)\s*$', tr)
        value = int(m.group(1), 16) if m else -1
        if 0 <= value < 1 << 20: accepts.append((t, value))
reads = [(t, fd(tr)) for t, comm, pid, e, tr in events if pid == server and 'recvfrom' in e]
sends = [(t, fd(tr)) for t, comm, pid, e, tr in events if pid == server and ('sendto' in e or 'writev' in e or 'sendfile' in e)]
rows = []
for at, client in accepts:
    read = next((t for t, f in reads if f == client and t >= at), None)
    send = next((t for t, f in sends if f == client and t >= at), None)
    before = max((c for c in connects if c <= at), default=None)
    after = min((c for c in connects if c > at), default=None)
    if None not in (read, send, before, after) and before <= at <= read <= send <= after:
        rows.append((at - before, read - at, send - read, after - send))
print("%s: %d connects, %d requests timed, ffmpeg's first to last connect %.3f s" % (name, len(connects), len(rows), connects[-1] - connects[0] if connects else 0))
for i, what in enumerate(["connect -> accept", "accept -> first read", "first read -> first send", "first send -> next connect"]):
    values = sorted(r[i] * 1e6 for r in rows) or [0]
    print("  %-27s median %5.0f us  90th %5.0f us  sum %.3f s" % (what, statistics.median(values), values[int(len(values) * 0.9)], sum(values) / 1e6))
PY
}
record direct "$(pgrep -f 'nginx: worker' | head -1)" "$origin/paced/frag600.mp4"
start_serve "$dir/timeline-cache" "$origin/paced/frag600.mp4"
pid=$serve_pid url=$serve_url
record "serve, fresh cache" "$pid" "$url"
sleep 0.5
record "serve, warm cache" "$pid" "$url"
kill "$pid"; wait "$pid" 2>/dev/null || true
