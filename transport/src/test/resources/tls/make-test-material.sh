#!/bin/sh
# Makes the TLS test material under transport/src/test/resources/tls (run once, committed; valid 100 years).
# OpenSSL 3. Re-running replaces every file; the tests only need the set to be consistent.
set -eu
cd "$(dirname "$0")"
DAYS=36500
rm -f ./*.pem ./*.srl ./*.cnf
rm -rf capath

# the CA, and a second CA that signs nothing the broker trusts
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days $DAYS -subj "/CN=ringmq test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca-key.pem -out other-ca.pem -days $DAYS \
  -subj "/CN=ringmq other CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

cat > server.cnf <<'CNF'
subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth
CNF
cat > client.cnf <<'CNF'
extendedKeyUsage=clientAuth
CNF

# RSA server key: PKCS#8 (BEGIN PRIVATE KEY) and the same key in PKCS#1 (BEGIN RSA PRIVATE KEY)
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out server-key.pem
openssl pkey -in server-key.pem -traditional -out server-key-pkcs1.pem
openssl req -new -key server-key.pem -subj "/CN=localhost" -out server.csr
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days $DAYS -extfile server.cnf \
  -out server-cert.pem
cat server-cert.pem ca.pem > server-chain.pem

# EC server key in SEC1 (BEGIN EC PRIVATE KEY) and its certificate
openssl ecparam -name prime256v1 -genkey -noout -out server-ec-key.pem
openssl req -new -key server-ec-key.pem -subj "/CN=localhost" -out server-ec.csr
openssl x509 -req -in server-ec.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days $DAYS -extfile server.cnf \
  -out server-ec-cert.pem

# client certificates: CN=alice from the CA, CN=mallory from the other CA
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out alice-key.pem
openssl req -new -key alice-key.pem -subj "/O=ringmq/CN=alice" -out alice.csr
openssl x509 -req -in alice.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days $DAYS -extfile client.cnf \
  -out alice-cert.pem
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out mallory-key.pem
openssl req -new -key mallory-key.pem -subj "/CN=mallory" -out mallory.csr
openssl x509 -req -in mallory.csr -CA other-ca.pem -CAkey other-ca-key.pem -CAcreateserial -days $DAYS \
  -extfile client.cnf -out mallory-cert.pem

# an encrypted key (PKCS#8, password "secret") and an encrypted PKCS#1 key (Proc-Type: 4,ENCRYPTED)
openssl pkcs8 -topk8 -in server-key.pem -v2 aes-256-cbc -passout pass:secret -out encrypted-key.pem
openssl pkey -in server-key.pem -traditional -aes256 -passout pass:secret -out encrypted-key-pkcs1.pem

# an expired server certificate for the same key (not after 2001)
cat > expired-ca.cnf <<'CNF'
[ca]
default_ca=test
[test]
database=index.txt
new_certs_dir=.
serial=expired.srl
default_md=sha256
policy=anything
unique_subject=no
copy_extensions=none
[anything]
commonName=supplied
CNF
: > index.txt
echo 01 > expired.srl
openssl ca -batch -config expired-ca.cnf -cert ca.pem -keyfile ca-key.pem -in server.csr -out expired-cert.pem \
  -startdate 20000101000000Z -enddate 20010101000000Z -extfile server.cnf -notext
rm -f index.txt* expired.srl* ./*.csr ./*.srl ./*.cnf 01.pem

# capath: a directory of PEM certificates (the CA)
mkdir capath
cp ca.pem capath/ca.pem


# a CA database for CRLs signed with 'openssl ca' (next update in 100 years)
crl_config() {
  cat > crl.cnf <<'CNF'
[ca]
default_ca=test
[test]
database=index.txt
crlnumber=crlnumber
default_md=sha256
default_crl_days=36500
CNF
  : > index.txt
  echo 01 > crlnumber
}

# a client certificate CN=bob from the CA, and a CRL of the CA revoking it (next update in 100 years): crlfile
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out bob-key.pem
openssl req -new -key bob-key.pem -subj "/O=ringmq/CN=bob" -out bob.csr
cat > client.cnf <<'CNF'
extendedKeyUsage=clientAuth
CNF
openssl x509 -req -in bob.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days $DAYS -extfile client.cnf \
  -out bob-cert.pem
crl_config
openssl ca -config crl.cnf -cert ca.pem -keyfile ca-key.pem -revoke bob-cert.pem
openssl ca -config crl.cnf -cert ca.pem -keyfile ca-key.pem -gencrl -out crl.pem
rm -f index.txt* crlnumber* ./*.csr ./*.srl ./*.cnf

# subjects as use_subject_as_username must name them the way OpenSSL prints them: one with emailAddress (an OID the
# JDK has no keyword for) and one with a non-ASCII CN
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out carol-key.pem
openssl req -new -key carol-key.pem -subj "/O=ringmq/CN=carol/emailAddress=carol@example.com" -out carol.csr
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out jorg-key.pem
openssl req -new -utf8 -key jorg-key.pem -subj "/O=ringmq/CN=Jörg" -out jorg.csr
cat > client.cnf <<'CNF'
extendedKeyUsage=clientAuth
CNF
for name in carol jorg; do
  openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days $DAYS -extfile client.cnf \
    -out $name-cert.pem
done
# a forged CRL: the CA's name, signed by another key, revoking nothing
openssl req -x509 -newkey rsa:2048 -nodes -keyout forger-key.pem -out forger.pem -days $DAYS -subj "/CN=ringmq test CA"
crl_config
openssl ca -config crl.cnf -cert forger.pem -keyfile forger-key.pem -gencrl -out forged-crl.pem
rm -f index.txt* crlnumber* forger.pem forger-key.pem ./*.csr ./*.srl ./*.cnf

# a CRL of the CA that revokes nothing: a listener's crlfile before bob's revocation is published (reload tests)
crl_config
openssl ca -config crl.cnf -cert ca.pem -keyfile ca-key.pem -gencrl -out crl-none.pem
rm -f index.txt* crlnumber* ./*.cnf
