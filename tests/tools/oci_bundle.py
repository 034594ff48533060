#!/usr/bin/env python3
"""Make an OCI bundle for the containers suite (tests/integration/containers.c).

    oci_bundle.py BUNDLE [--rootfs busybox|host] [--cgroups-path PATH] [--netns PATH]
                  [--annotation KEY=VALUE]... [--bind SRC:DST[:ro]]... [--tmpfs DST]...
                  [--env KEY=VALUE]... -- ARGS...

busybox: a root file system of the static busybox and its applets, copied (no image, no
registry). host: the host's /usr, /etc and /lib* bound read-only into an empty root, for the
tests that run python3 and pip in a container. The config starts from `runc spec` and gets the
process, a cgroup path (absolute: where the test wants it), a network namespace to join (the
test's own, or none for a new empty one), annotations and mounts.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def busybox_root(root):
    os.makedirs(os.path.join(root, "bin"), exist_ok=True)
    for d in ("proc", "dev", "sys", "tmp", "etc", "mnt"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy2("/bin/busybox", os.path.join(root, "bin", "busybox"))
    applets = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
    for a in applets:
        link = os.path.join(root, "bin", a)
        if not os.path.lexists(link):
            os.symlink("busybox", link)
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/:/bin/sh\n")


def host_root(root, mounts):
    for d in ("proc", "dev", "sys", "tmp", "usr", "etc", "root", "run"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for d in ("bin", "sbin", "lib", "lib64"):
        src = os.path.join("/", d)
        if os.path.islink(src):  # merged /usr: bin -> usr/bin
            os.symlink(os.readlink(src), os.path.join(root, d))
        elif os.path.isdir(src):
            os.makedirs(os.path.join(root, d), exist_ok=True)
            mounts.append(bind(src, "/" + d, True))
    mounts.append(bind("/usr", "/usr", True))
    mounts.append(bind("/etc", "/etc", True))


def bind(src, dst, ro):
    opts = ["rbind", "rprivate"] + (["ro"] if ro else ["rw"])
    return {"destination": dst, "type": "bind", "source": src, "options": opts}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--rootfs", default="busybox", choices=("busybox", "host"))
    ap.add_argument("--cgroups-path")
    ap.add_argument("--netns")
    ap.add_argument("--annotation", action="append", default=[])
    ap.add_argument("--bind", action="append", default=[])
    ap.add_argument("--tmpfs", action="append", default=[])
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("args", nargs="+")
    a = ap.parse_args()

    os.makedirs(a.bundle, exist_ok=True)
    root = os.path.join(a.bundle, "rootfs")
    os.makedirs(root, exist_ok=True)
    cfg_path = os.path.join(a.bundle, "config.json")
    if os.path.exists(cfg_path):
        os.unlink(cfg_path)
    subprocess.run(["runc", "spec", "--bundle", a.bundle], check=True)
    with open(cfg_path) as f:
        cfg = json.load(f)

    mounts = []
    if a.rootfs == "busybox":
        busybox_root(root)
    else:
        host_root(root, mounts)
    for b in a.bind:
        parts = b.split(":")
        os.makedirs(os.path.join(root, parts[1].lstrip("/")), exist_ok=True)
        mounts.append(bind(parts[0], parts[1], len(parts) > 2 and parts[2] == "ro"))
    for t in a.tmpfs:
        os.makedirs(os.path.join(root, t.lstrip("/")), exist_ok=True)
        mounts.append({"destination": t, "type": "tmpfs", "source": "tmpfs",
                       "options": ["nosuid", "nodev", "mode=1777"]})
    cfg["mounts"].extend(mounts)

    proc = cfg["process"]
    proc["terminal"] = False
    proc["args"] = a.args
    proc["env"] = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   "HOME=/root"] + a.env
    cfg["root"] = {"path": "rootfs", "readonly": False}
    linux = cfg["linux"]
    if a.cgroups_path:
        linux["cgroupsPath"] = a.cgroups_path
    for ns in linux["namespaces"]:
        if ns["type"] == "network" and a.netns:
            ns["path"] = a.netns
    ann = {}
    for kv in a.annotation:
        k, _, v = kv.partition("=")
        ann[k] = v
    if ann:
        cfg["annotations"] = ann
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
