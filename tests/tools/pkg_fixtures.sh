#!/bin/sh
# Package fixtures for the packages integration tests, built fresh in DIR:
#   a wheel (demo-pkg 1.0) and a PEP 503 simple index for it, the wheel unpacked, a .deb
#   (egret-demo 1.0-1) with a flat apt repository index, an npm tarball (demo-npm 1.0.0), and
#   the hashes each should be reported with (*.sha256, metadata.hash, npm.integrity).
# usage: pkg_fixtures.sh DIR
set -eu
d=$1
mkdir -p "$d/simple/demo-pkg" "$d/repo" "$d/stage/DEBIAN" "$d/stage/usr/share/egret-demo" \
	"$d/npm/package" "$d/unpacked"
/usr/bin/python3 - "$d" <<'PY'
import base64, hashlib, sys, zipfile
d = sys.argv[1]
name, ver = "demo_pkg", "1.0"
info = f"{name}-{ver}.dist-info"
files = {
    f"{name}/__init__.py": b"VALUE = 42\n",
    f"{info}/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n"
                        b"Summary: a package for egret tests\n",
    f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: egret-tests\nRoot-Is-Purelib: true\n"
                     b"Tag: py3-none-any\n",
}
def digest(b):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
record = "".join(f"{p},{digest(b)},{len(b)}\n" for p, b in files.items()) + f"{info}/RECORD,,\n"
whl = f"{d}/{name}-{ver}-py3-none-any.whl"
with zipfile.ZipFile(whl, "w") as z:
    for p, b in files.items():
        z.writestr(p, b)
    z.writestr(f"{info}/RECORD", record)
with zipfile.ZipFile(whl) as z:
    z.extractall(f"{d}/unpacked")
sha = hashlib.sha256(open(whl, "rb").read()).hexdigest()
with open(f"{d}/simple/demo-pkg/index.html", "w") as f:
    f.write(f'<html><body><a href="../../{name}-{ver}-py3-none-any.whl#sha256={sha}">'
            f'{name}-{ver}-py3-none-any.whl</a></body></html>\n')
open(f"{d}/wheel.sha256", "w").write(sha)
open(f"{d}/metadata.hash", "w").write(digest(files[f"{info}/METADATA"]).replace("=", ":", 1))
PY
printf 'Package: egret-demo\nVersion: 1.0-1\nArchitecture: all\nMaintainer: egret tests <tests@egret.invalid>\nDescription: a package for egret tests\n' \
	>"$d/stage/DEBIAN/control"
echo demo >"$d/stage/usr/share/egret-demo/README"
deb="$d/repo/egret-demo_1.0-1_all.deb"
dpkg-deb --build "$d/stage" "$deb" >/dev/null
{
	dpkg-deb -f "$deb"
	echo "Filename: ./egret-demo_1.0-1_all.deb"
	echo "Size: $(stat -c %s "$deb")"
	echo "SHA256: $(sha256sum "$deb" | cut -d' ' -f1)"
} >"$d/repo/Packages"
sha256sum "$deb" | cut -d' ' -f1 | tr -d '\n' >"$d/deb.sha256"
printf '{"name": "demo-npm", "version": "1.0.0", "main": "index.js"}\n' >"$d/npm/package/package.json"
echo 'module.exports = 42;' >"$d/npm/package/index.js"
tar -C "$d/npm" -czf "$d/demo-npm-1.0.0.tgz" package
/usr/bin/python3 -c 'import base64, hashlib, sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode(), end="")' \
	"$d/demo-npm-1.0.0.tgz" >"$d/npm.integrity"
