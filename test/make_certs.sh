#!/bin/sh
# make_certs.sh DIR - a throw-away CA and server certificates for tests and
# the demo: good (localhost), wrong host name, expired, and one from an
# unknown CA. Made fresh each time; nothing is committed.
set -eu
d=$1
mkdir -p "$d"
cd "$d"
[ -f done ] && exit 0
q() { "$@" >/dev/null 2>&1; }
ca() { # ca NAME CN
    q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
        -subj "/CN=$2" -keyout "$1.key" -out "$1.crt" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() { # leaf NAME CA SAN [startdate enddate]
    q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
        -keyout "$1.key" -out "$1.csr"
    printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$3" > "$1.ext"
    if [ $# -ge 5 ]; then
        mkdir -p db && : > db/index && echo 01 > db/serial
        cat > ca.cnf <<CNF
[ca]
default_ca=c
[c]
database=db/index
serial=db/serial
new_certs_dir=db
default_md=sha256
policy=p
copy_extensions=none
[p]
commonName=supplied
CNF
        q openssl ca -batch -config ca.cnf -cert "$2.crt" -keyfile "$2.key" -in "$1.csr" \
            -out "$1.crt" -startdate "$4" -enddate "$5" -extfile "$1.ext" -notext
    else
        q openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial \
            -days 30 -out "$1.crt" -extfile "$1.ext"
    fi
}
ca ca "mote test CA"
ca other "some other CA"
leaf server ca localhost
leaf wronghost ca wrong.example
leaf expired ca localhost 20200101000000Z 20200102000000Z
leaf stranger other localhost
touch done
