#!/bin/sh
# gen.sh regenerates the captured runner output in this folder by running the
# sample projects in src/ with the real tools inside the sandbox image
# (deploy/sandbox/build-offline.sh): pytest, unittest, jest, mocha, node --test
# and go test. Usage: pipeline/testreport/testdata/gen.sh [image]
set -eu
cd "$(dirname "$0")"
image="${1:-selfcode-sandbox:latest}"
docker run --rm --network none -u 0 -v "$PWD:/out" -w /tmp "$image" sh -c '
set +e
cp -r /out/src /tmp/src && cd /tmp/src
mkdir -p /out/pytest /out/unittest /out/jest /out/mocha /out/tap /out/gotext
(cd py && python3 -m pytest -rA -p no:cacheprovider --junitxml=/out/pytest/junit.xml > /out/pytest/rA.txt 2>&1)
(cd py && python3 -m pytest -v -p no:cacheprovider > /out/pytest/v.txt 2>&1)
(cd pybroken && python3 -m pytest -rA -p no:cacheprovider --junitxml=/out/pytest/broken-junit.xml > /out/pytest/broken-rA.txt 2>&1)
(cd py && python3 -m unittest -v test_calc > /out/unittest/v.txt 2>&1)
(cd pybroken && python3 -m unittest -v test_ok test_broken > /out/unittest/broken-v.txt 2>&1)
(cd js && jest --ci --json --outputFile=/out/jest/report.json calc.test.js > /out/jest/stdout.txt 2>&1)
(cd jsbroken && jest --ci --json --outputFile=/out/jest/broken.json > /out/jest/broken-stdout.txt 2>&1)
(cd js && mocha --reporter json --reporter-option output=/out/mocha/report.json calc.mocha.js > /out/mocha/stdout.txt 2>&1)
(cd js && mocha --reporter json calc.mocha.js > /out/mocha/json-stdout.txt 2>/dev/null)
(cd js && mocha calc.mocha.js > /out/mocha/spec.txt 2>&1)
(cd js && node --test calc.node.js > /out/tap/node-test.txt 2>&1)
(cd gomod && GOFLAGS=-mod=mod HOME=/tmp GOCACHE=/tmp/gocache go test ./... > /out/gotext/plain.txt 2>&1)
(cd gomod && HOME=/tmp GOCACHE=/tmp/gocache go test -v ./... > /out/gotext/v.txt 2>&1)
sed -i "s#/tmp/src/#/work/#g; s#/tmp/gocache[^ ]*##g" /out/*/*.txt /out/*/*.json /out/*/*.xml
chown -R '"$(id -u):$(id -g)"' /out
'
{
	echo "# Captured runner output"
	echo
	echo "Written by gen.sh from the projects in src/, inside $image:"
	docker run --rm "$image" sh -c 'cat /etc/selfcode-sandbox-release; echo "pytest: $(python3 -m pytest --version 2>&1)"; echo "jest: $(jest --version)"; echo "mocha: $(mocha --version)"' | sed 's/^/- /'
	echo
	echo "Paths under /tmp/src/ are rewritten to /work/ (the sandbox checkout). The files in"
	echo "go/ are older captures of go test -json. Nothing here is hand-edited."
} > README.md
