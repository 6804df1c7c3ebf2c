#!/usr/bin/env bash
# Compiles Sources/MP4ProbeAVFoundation (the AVPlayer adapter, `#if canImport(AVFoundation)`)
# on a machine without AVFoundation, against AVFoundationStub.swift, in Swift 6 language mode
# with strict concurrency: a change that captures a non-Sendable request in a task, or calls
# MP4IO's ResourceLoading wrongly, fails here. What it cannot check: the real SDK's
# annotations and availability (the apple.yml workflow builds against the SDK on macOS).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${TMPDIR:-/tmp}/mp4probe-apple-shell"
rm -rf "$work/Sources"
mkdir -p "$work/Sources/AVFoundation" "$work/Sources/Shell"
cat > "$work/Package.swift" <<MANIFEST
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "appleshell", dependencies: [.package(path: "$root")], targets: [
  .target(name: "AVFoundation"),
  .target(name: "Shell", dependencies: ["AVFoundation", .product(name: "MP4IO", package: "$(basename "$root")")],
          swiftSettings: [.define("STUB_AVFOUNDATION")]),
], swiftLanguageModes: [.v6])
MANIFEST
cp "$here/AVFoundationStub.swift" "$work/Sources/AVFoundation/AVFoundation.swift"
sed 's/^#if canImport(AVFoundation)$/#if canImport(AVFoundation) || STUB_AVFOUNDATION/' \
  "$root/Sources/MP4ProbeAVFoundation/CachingResourceLoader.swift" > "$work/Sources/Shell/CachingResourceLoader.swift"
grep -q "STUB_AVFOUNDATION" "$work/Sources/Shell/CachingResourceLoader.swift" || { echo "typecheck.sh: the adapter no longer starts with '#if canImport(AVFoundation)'"; exit 1; }
cd "$work"
swift build 2>&1 | grep -v "^\[[0-9]*/[0-9]*\]"
echo "the AVPlayer adapter compiles in Swift 6 mode against the AVFoundation stub"
