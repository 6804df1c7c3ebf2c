#!/usr/bin/env python3
"""Prints the UDID of the iOS simulator a test job runs on: an available iPhone on the newest
available iOS runtime (`xcrun simctl list -j devices available`, or that JSON on stdin with
`-`). A name alone is ambiguous ("iPhone SE (3rd generation)" cut at its parenthesis named no
device) and says no OS version. Exits 1 with what it found when there is none."""
import json, re, subprocess, sys

def pick(listing):
    best = None
    for runtime, devices in listing.get("devices", {}).items():
        m = re.search(r"iOS-(\d+)-(\d+)(?:-(\d+))?$", runtime)
        if not m:
            continue
        version = tuple(int(x or 0) for x in m.groups())
        for device in devices:
            if device.get("isAvailable", True) and device.get("name", "").startswith("iPhone"):
                key = (version, device["name"])
                if best is None or key > best[0]:
                    best = (key, device["udid"], device["name"], ".".join(map(str, version)))
    return best

if __name__ == "__main__":
    text = sys.stdin.read() if sys.argv[1:] == ["-"] else subprocess.run(
        ["xcrun", "simctl", "list", "-j", "devices", "available"], check=True, capture_output=True, text=True).stdout
    best = pick(json.loads(text))
    if best is None:
        print("::error::no available iPhone simulator; simctl listed: " + text[:2000], file=sys.stderr)
        sys.exit(1)
    print(f"{best[2]}, iOS {best[3]}", file=sys.stderr)
    print(best[1])
