#!/usr/bin/env bash
# test_certs_cli.sh - runs `gpu-admission certs` and checks what it wrote with the real openssl
# command-line tool (an independent implementation), so a bug in certgen.c cannot hide behind
# a test that reuses certgen.c to read its own output.
# usage: test_certs_cli.sh /path/to/gpu-admission
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*" >&2; }
expect() { # description, command...
  local d=$1; shift
  if "$@" >/dev/null 2>&1; then ok; else bad "$d"; fi
}
expect_not() {
  local d=$1; shift
  if "$@" >/dev/null 2>&1; then bad "$d"; else ok; fi
}
contains() { # description, haystack, needle
  if grep -qF -- "$3" <<<"$2"; then ok; else bad "$1: missing '$3' in: $2"; fi
}

out=$tmp/nested/dir
"$bin" certs --service gpu-admission --namespace gpu-system --out "$out" \
  --san 127.0.0.1 --san webhook.example.test --san ::1 >"$tmp/bundle" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "certs exit $rc: $(cat "$tmp/err")"

# openssl itself accepts the chain, for TLS server use, in strict mode.
v=$(openssl verify -x509_strict -purpose sslserver -CAfile "$out/ca.crt" "$out/tls.crt" 2>&1)
contains "openssl verify" "$v" "$out/tls.crt: OK"

# SANs: the four Service names plus every --san, IPs as IP Address entries.
san=$(openssl x509 -in "$out/tls.crt" -noout -ext subjectAltName 2>&1)
for n in "DNS:gpu-admission," "DNS:gpu-admission.gpu-system," "DNS:gpu-admission.gpu-system.svc," \
  "DNS:gpu-admission.gpu-system.svc.cluster.local" "IP Address:127.0.0.1" \
  "DNS:webhook.example.test" "IP Address:0:0:0:0:0:0:0:1"; do
  contains "subjectAltName" "$san" "$n"
done
contains "127.0.0.1 is not a DNS SAN" "$(grep -c 'DNS:127.0.0.1' <<<"$san")" "0"

# Serving cert: EKU serverAuth, not a CA; CA cert: CA:TRUE critical, keyCertSign.
leaf=$(openssl x509 -in "$out/tls.crt" -noout -text)
contains "EKU" "$leaf" "TLS Web Server Authentication"
contains "leaf not CA" "$leaf" "CA:FALSE"
ca=$(openssl x509 -in "$out/ca.crt" -noout -text)
contains "CA basicConstraints critical" "$ca" "X509v3 Basic Constraints: critical"
contains "CA:TRUE" "$ca" "CA:TRUE"
contains "CA keyUsage" "$ca" "Certificate Sign"
# Self-signed: issuer == subject for the CA; leaf issuer == CA subject.
expect "CA self-signed" openssl verify -CAfile "$out/ca.crt" "$out/ca.crt"
[ "$(openssl x509 -in "$out/tls.crt" -noout -issuer | sed 's/^issuer=//')" = \
  "$(openssl x509 -in "$out/ca.crt" -noout -subject | sed 's/^subject=//')" ] && ok || bad "leaf issuer != CA subject"

# Keys: EC P-256, mode 0600; certificates world-readable is fine.
k=$(openssl pkey -in "$out/tls.key" -noout -text 2>&1)
contains "tls.key is P-256" "$k" "NIST CURVE: P-256"
contains "ca key is P-256" "$(openssl pkey -in "$out/ca.key" -noout -text 2>&1)" "NIST CURVE: P-256"
[ "$(stat -c %a "$out/tls.key")" = 600 ] && ok || bad "tls.key mode $(stat -c %a "$out/tls.key")"
[ "$(stat -c %a "$out/ca.key")" = 600 ] && ok || bad "ca.key mode $(stat -c %a "$out/ca.key")"
[ "$(stat -c %a "$out")" = 700 ] && ok || bad "out dir mode $(stat -c %a "$out")"
[ -z "$(ls "$out" | grep -v -x -e ca.crt -e ca.key -e tls.crt -e tls.key)" ] && ok || bad "stray files: $(ls "$out")"
# The key matches the certificate (compare public keys).
[ "$(openssl pkey -in "$out/tls.key" -pubout)" = "$(openssl x509 -in "$out/tls.crt" -noout -pubkey)" ] && ok || bad "tls.key does not match tls.crt"

# Validity: now-5min .. now+365d.
expect "valid for 364 more days" openssl x509 -in "$out/tls.crt" -noout -checkend $((364 * 86400))
expect_not "not valid for 366 days" openssl x509 -in "$out/tls.crt" -noout -checkend $((366 * 86400))
nb=$(date -d "$(openssl x509 -in "$out/tls.crt" -noout -startdate | cut -d= -f2)" +%s)
d=$(($(date +%s) - nb))
[ $d -ge 290 ] && [ $d -le 400 ] && ok || bad "notBefore is $d s ago, want ~300"

# Serial: random, positive, about 128 bits, different per certificate.
s1=$(openssl x509 -in "$out/tls.crt" -noout -serial | cut -d= -f2)
s2=$(openssl x509 -in "$out/ca.crt" -noout -serial | cut -d= -f2)
[ ${#s1} -ge 26 ] && [ ${#s1} -le 34 ] && [ "$s1" != "$s2" ] && ok || bad "serials $s1 $s2"

# stdout: exactly one line, the base64 of ca.crt.
[ "$(wc -l <"$tmp/bundle")" = 1 ] && ok || bad "stdout has $(wc -l <"$tmp/bundle") lines"
[ "$(cat "$tmp/bundle")" = "$(base64 -w0 "$out/ca.crt")" ] && ok || bad "caBundle != base64(ca.crt)"
contains "stderr names files" "$(cat "$tmp/err")" "$out/tls.crt"

# Re-running reuses the CA (caBundle unchanged), issues a new serving cert signed by it.
old_fp=$(openssl x509 -in "$out/tls.crt" -noout -fingerprint -sha256)
"$bin" certs --service gpu-admission --namespace gpu-system --out "$out" >"$tmp/bundle2" 2>"$tmp/err2"
[ $? -eq 0 ] && ok || bad "rerun failed: $(cat "$tmp/err2")"
cmp -s "$tmp/bundle" "$tmp/bundle2" && ok || bad "rerun changed the caBundle"
[ "$old_fp" != "$(openssl x509 -in "$out/tls.crt" -noout -fingerprint -sha256)" ] && ok || bad "rerun did not reissue tls.crt"
expect "reissued verifies" openssl verify -CAfile "$out/ca.crt" "$out/tls.crt"
# --new-ca replaces it.
"$bin" certs --service gpu-admission --namespace gpu-system --out "$out" --new-ca >"$tmp/bundle3" 2>/dev/null
cmp -s "$tmp/bundle" "$tmp/bundle3" && bad "--new-ca kept the caBundle" || ok
expect_not "old CA does not verify the new cert" openssl verify -CAfile <(base64 -d "$tmp/bundle") "$out/tls.crt"

# RSA-2048.
r=$tmp/rsa
"$bin" certs --service svc --namespace ns --out "$r" --key-type rsa --days 30 >/dev/null 2>&1
[ $? -eq 0 ] && ok || bad "rsa run failed"
contains "rsa key" "$(openssl pkey -in "$r/tls.key" -noout -text 2>&1)" "Private-Key: (2048 bit"
contains "rsa ca key" "$(openssl x509 -in "$r/ca.crt" -noout -text)" "Public-Key: (2048 bit)"
expect "rsa verifies" openssl verify -purpose sslserver -CAfile "$r/ca.crt" "$r/tls.crt"
expect "rsa valid 29 days" openssl x509 -in "$r/tls.crt" -noout -checkend $((29 * 86400))
expect_not "rsa not valid 31 days" openssl x509 -in "$r/tls.crt" -noout -checkend $((31 * 86400))

# Bad input: exit 1, a message, nothing written.
n=$tmp/never
for args in "--service Bad_Name --namespace ns" "--service a --namespace ns --san a,DNS:evil" \
  "--service a --namespace ns --days 0" "--service a --namespace ns --days x" \
  "--service a --namespace ns --key-type dsa" "--service a --namespace ns --days 400 --ca-days 10" \
  "--service a --namespace ns --bogus" "--service a --namespace ns --san"; do
  # shellcheck disable=SC2086
  "$bin" certs $args --out "$n" >"$tmp/o" 2>"$tmp/e"
  rc=$?
  [ $rc -eq 1 ] && [ -s "$tmp/e" ] && [ ! -s "$tmp/o" ] && ok || bad "'$args' rc=$rc stderr=$(cat "$tmp/e")"
  [ ! -e "$n/tls.key" ] && ok || bad "'$args' wrote a key"
done
"$bin" certs --service a --namespace ns >/dev/null 2>&1
[ $? -eq 1 ] && ok || bad "missing --out accepted"
# Half a CA in --out: refused, not silently replaced.
h=$tmp/half; mkdir -p "$h"; cp "$out/ca.crt" "$h/"
"$bin" certs --service a --namespace ns --out "$h" >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && ok || bad "half CA accepted"
contains "half CA message" "$(cat "$tmp/e")" "--new-ca"

# --help documents every flag.
help=$("$bin" certs --help)
[ $? -eq 0 ] && ok || bad "--help exit"
for f in --service --namespace --out --days --ca-days --san --key-type --new-ca --help; do
  contains "--help documents $f" "$help" "$f"
done

echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
