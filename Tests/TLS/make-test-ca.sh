#!/usr/bin/env bash
# Makes a test certificate authority and a server certificate it signed for 127.0.0.1,
# localhost and 10.233.0.1 (the phone-link origin of Tests/Benchmarks/phone-link.sh), in DIR
# (default /tmp/mp4probe-tls): ca.pem, server.pem, server.key. With
# --trust (root), the CA is added to the system store, which URLSession on Linux (libcurl)
# and ffmpeg read (Chromium keeps its own store): the HTTPS tests then meet
# the origin as a user meets a CDN's certificate. Prints DIR; the tests find it through
# MP4PROBE_TLS_DIR (without it they are skipped with that message).
set -euo pipefail
dir=${1:-/tmp/mp4probe-tls}
trust=${2:-}
mkdir -p "$dir"
cd "$dir"
if [ ! -s server.pem ] || ! openssl x509 -checkend 86400 -noout -in server.pem >/dev/null 2>&1 \
   || ! openssl x509 -noout -text -in server.pem | grep -q 'IP Address:10.233.0.1'; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj "/CN=mp4probe test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
  printf "subjectAltName=IP:127.0.0.1,IP:10.233.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n" > server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 30 -extfile server.ext 2>/dev/null
  chmod 644 ca.pem server.pem server.key
fi
if [ "$trust" = "--trust" ]; then
  cp ca.pem /usr/local/share/ca-certificates/mp4probe-test-ca.crt
  update-ca-certificates >/dev/null 2>&1
fi
echo "$dir"
