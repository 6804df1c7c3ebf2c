#!/usr/bin/env bash
# Issue 61's shared cache, as an outside tester tries it: two `serve` processes on one cache
# directory, three clients asking random ranges (up to 1 MiB) of a 20 s film through either,
# and `mp4probe cache evict DIR --max-size 0|1M|4M` every 0-0.3 s, for DURATION seconds (45 by
# default); with KILL=1 one `serve` is killed and started again every 2-5 s. Every response
# body is compared with the film: prints the responses, their statuses and how many carried
# wrong bytes (exit 1 when any did). RATE=2m paces the origin at 2 MB/s per connection.
#
#   [DURATION=45] [RATE=2m] [KILL=1] Tests/Benchmarks/shared-cache-stress.sh [MP4PROBE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Benchmarks/nginx-origin.sh
bin=$(release_binary "$@")
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}/shared-cache
mkdir -p "$dir/www"
[ -f "$dir/www/film20.mp4" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i sine=frequency=440 \
  -t 20 -c:v libx264 -preset ultrafast -b:v 2000k -g 50 -c:a aac -b:a 64k "$dir/www/film20.mp4"
start_origin "$dir" "$dir/www"
cache="$dir/cache"
rm -rf "$cache"
path=/film20.mp4
[ -n "${RATE:-}" ] && path=/rate$RATE/film20.mp4
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; stop_origin; }
trap cleanup EXIT
# serve N: starts the Nth proxy on the shared cache; its base URL lands in $dir/serveN.out.
serve() {
  rm -f "$dir/serve$1.out"
  "$bin" serve --cache "$cache" > "$dir/serve$1.out" 2>> "$dir/serve$1.err" &
  pids[$1]=$!
  for _ in $(seq 100); do [ -s "$dir/serve$1.out" ] && break; sleep 0.05; done
}
serve 0; serve 1
python3 - "$dir" "$origin$path" "$dir/www/film20.mp4" "${DURATION:-45}" "$bin" "$cache" "${KILL:-0}" "${pids[0]}" "${pids[1]}" <<'PY'
import os, random, signal, subprocess, sys, threading, time, urllib.parse, http.client
dir, origin, film, seconds, binary, cache, kill, *pids = sys.argv[1:]
seconds, kill = float(seconds), kill == "1"
pids = [int(p) for p in pids]
data = open(film, "rb").read()
quoted = urllib.parse.quote(origin, safe="")
def base(n):
    try: return open(f"{dir}/serve{n}.out").readline().strip()
    except OSError: return ""
end = time.time() + seconds
lock = threading.Lock()
counts = {"responses": 0, "wrong": 0, "failed": 0, "statuses": {}}
def client(seed):
    rnd = random.Random(seed)
    while time.time() < end:
        url = base(rnd.randrange(2))
        if not url: time.sleep(0.01); continue
        start = rnd.randrange(len(data)); last = min(len(data) - 1, start + rnd.randrange(1 << 20))
        host = url.split("/")[2]
        try:
            c = http.client.HTTPConnection(host, timeout=60)
            c.request("GET", "/" + url.split("/", 3)[3] + "v.mp4?url=" + quoted, headers={"Range": f"bytes={start}-{last}"})
            r = c.getresponse(); body = r.read(); c.close()
        except Exception:
            with lock: counts["failed"] += 1
            continue
        with lock:
            counts["responses"] += 1
            counts["statuses"][r.status] = counts["statuses"].get(r.status, 0) + 1
            if r.status in (200, 206):
                want = data[start:last + 1] if r.status == 206 else data
                # A response cut short is a failure the player sees; wrong bytes are not.
                if body != want[:len(body)]:
                    counts["wrong"] += 1
                    print(f"WRONG: status {r.status} bytes {start}-{last}: {len(body)} bytes, first difference at +{next(i for i in range(len(body)) if body[i] != want[i])}", flush=True)
def evict():
    rnd = random.Random(7)
    while time.time() < end:
        subprocess.run([binary, "cache", "evict", cache, "--max-size", rnd.choice(["0", "1M", "4M"])], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0, 0.3))
def killer():
    rnd = random.Random(11)
    while time.time() < end:
        time.sleep(rnd.uniform(2, 5))
        n = rnd.randrange(2)
        os.kill(pids[n], signal.SIGKILL)
        open(f"{dir}/serve{n}.out", "w").close()
        p = subprocess.Popen([binary, "serve", "--cache", cache], stdout=open(f"{dir}/serve{n}.out", "w"), stderr=subprocess.DEVNULL)
        pids[n] = p.pid
        for _ in range(100):
            if base(n): break
            time.sleep(0.05)
threads = [threading.Thread(target=client, args=(s,)) for s in range(3)] + [threading.Thread(target=evict)]
if kill: threads.append(threading.Thread(target=killer))
for t in threads: t.start()
for t in threads: t.join()
for p in pids:
    try: os.kill(p, signal.SIGTERM)
    except OSError: pass
print(f"responses {counts['responses']} (statuses {dict(sorted(counts['statuses'].items()))}), failed {counts['failed']}, wrong bytes in {counts['wrong']}")
sys.exit(1 if counts["wrong"] else 0)
PY
