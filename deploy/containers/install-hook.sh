#!/bin/sh
# Put egret's OCI hook where container runtimes look for it (README "Protecting containers"):
#
#   install-hook.sh [--host-root DIR] [--egretctl PATH] [--control PATH]
#                   [--exempt-namespace NS]... [--docker-root DIR] RUNTIME...
#
# RUNTIME: podman (hooks.d), crio (hooks.d), containerd (a base runtime spec for its CRI
# plugin), docker (the egret-runc runtime wrapper in daemon.json), or auto (each one whose
# binary or socket is on the host). --host-root is where the host's / is mounted (the
# Kubernetes DaemonSet's init container: /host); paths written are the host's. Every runtime
# needs --egretctl on the HOST (a hook whose binary is missing is dropped by podman and CRI-O
# without a word: this script refuses to install one). Exit 0 when every runtime named was set
# up, 1 otherwise; it says what it did and what is left to do (restarts).
set -eu

root=
egretctl=/usr/local/sbin/egretctl
control=
docker_root=
exempt=
here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "install-hook: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--host-root) root=${2%/}; shift ;;
	--egretctl) egretctl=$2; shift ;;
	--control) control=$2; shift ;;
	--docker-root) docker_root=$2; shift ;;
	--exempt-namespace) exempt="$exempt --exempt-namespace $2"; shift ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || die "which runtime? podman, crio, containerd, docker or auto"
[ -x "$root$egretctl" ] || die "$root$egretctl is not an executable: runtimes would drop the hook"

# egretctl as the host runs it, with the options every hook line needs
ctl() {
	if [ -n "$control" ]; then
		"$root$egretctl" --control "$control" "$@"
	else
		"$root$egretctl" "$@"
	fi
}

# shellcheck disable=SC2086 # $exempt is a list of words
# (the setup_ functions run in an || list, where set -e does not stop them: each step says
# || return 1)
hooks_d() { # DIR: egret's createRuntime hook as a hooks.d file there
	mkdir -p "$root$1" || return 1
	ctl oci-hook hooks-d --hook "$egretctl" $exempt createRuntime >"$root$1/egret.json.tmp" ||
		return 1
	mv "$root$1/egret.json.tmp" "$root$1/egret.json" || return 1
	echo "install-hook: $1/egret.json"
}

setup_podman() {
	# podman reads /usr/share/containers/oci/hooks.d unless hooks_dir says otherwise
	hooks_d /usr/share/containers/oci/hooks.d || return 1
	echo "install-hook: podman: new containers get the hook (rootless podman reads no hooks" \
		"unless hooks_dir is set in containers.conf)"
}

setup_crio() {
	hooks_d /etc/containers/oci/hooks.d || return 1
	echo "install-hook: cri-o: restart crio to load the hook (systemctl restart crio)"
}

# shellcheck disable=SC2086
setup_containerd() {
	spec=/etc/containerd/egret-base-spec.json
	mkdir -p "$root/etc/containerd" || return 1
	if [ -e "$root$spec" ]; then
		cp "$root$spec" "$root$spec.tmp" || return 1
	elif command -v ctr >/dev/null 2>&1; then
		ctr oci spec >"$root$spec.tmp" || return 1
	else
		echo "install-hook: containerd: no ctr here to write a default spec" \
			"(ctr oci spec > $spec)" >&2
		return 1
	fi
	ctl oci-hook inject --hook "$egretctl" $exempt "$root$spec.tmp" || return 1
	mv "$root$spec.tmp" "$root$spec" || return 1
	echo "install-hook: $spec"
	echo "install-hook: containerd: set, in /etc/containerd/config.toml, and restart containerd:"
	echo "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]"
	echo "    base_runtime_spec = \"$spec\""
	echo "  (containerd 2.x: [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc])"
}

setup_docker() {
	install -D -m 0755 "$here/egret-runc" "$root/usr/local/sbin/egret-runc" || return 1
	args="\"--egret-egretctl=$egretctl\""
	[ -n "$control" ] && args="$args, \"--egret-control=$control\""
	[ -n "$docker_root" ] && args="$args, \"--egret-docker-root=$docker_root\""
	conf=$root/etc/docker/daemon.json
	if [ -e "$conf" ]; then
		if ! command -v python3 >/dev/null 2>&1; then
			echo "install-hook: docker: $conf exists and there is no python3 to merge" \
				"egret's runtime into it" >&2
			return 1
		fi
		python3 - "$conf" "[$args]" <<'PY'
import json, sys
path, args = sys.argv[1], json.loads(sys.argv[2])
with open(path) as f:
    conf = json.load(f)
conf.setdefault("runtimes", {})["egret"] = {"path": "/usr/local/sbin/egret-runc",
                                            "runtimeArgs": args}
conf["default-runtime"] = "egret"
with open(path + ".tmp", "w") as f:
    json.dump(conf, f, indent=2)
PY
		[ $? = 0 ] || return 1
		mv "$conf.tmp" "$conf" || return 1
	else
		mkdir -p "$root/etc/docker" || return 1
		printf '{\n  "runtimes": {"egret": {"path": "/usr/local/sbin/egret-runc", "runtimeArgs": [%s]}},\n  "default-runtime": "egret"\n}\n' "$args" >"$conf" || return 1
	fi
	echo "install-hook: /etc/docker/daemon.json: runtime egret (egret-runc) is the default"
	echo "install-hook: docker: reload it (kill -HUP \$(pidof dockerd), or systemctl reload docker)"
}

present() { # RUNTIME: its binary or socket on the host
	case $1 in
	podman) [ -x "$root/usr/bin/podman" ] ;;
	crio) [ -x "$root/usr/bin/crio" ] || [ -S "$root/run/crio/crio.sock" ] ;;
	containerd) [ -S "$root/run/containerd/containerd.sock" ] ;;
	docker) [ -x "$root/usr/bin/dockerd" ] || [ -S "$root/run/docker.sock" ] ;;
	esac
}

rc=0
for rt in "$@"; do
	case $rt in
	auto)
		found=
		for r in podman crio containerd docker; do
			if present "$r"; then
				found=1
				"setup_$r" || rc=1
			fi
		done
		[ -n "$found" ] || die "auto: no container runtime found under ${root:-/}"
		;;
	podman | crio | containerd | docker) "setup_$rt" || rc=1 ;;
	*) die "unknown runtime $rt (podman, crio, containerd, docker, auto)" ;;
	esac
done
exit $rc
