#!/usr/bin/python3
"""A Kubernetes API server that answers discovery only, so that `kubectl create --dry-run=client
--validate=false -f ...` can map kinds to resources without a cluster (tests/unit/kubernetes.c).
Python's standard library only.

usage: fake_kube_api.py [--port PORT] [--log FILE]

Listens on 127.0.0.1:PORT (default 0: a free port) and prints the port it listens on as one line
on stdout. Each request is logged as a line "METHOD PATH STATUS" to FILE (default stderr).

It answers GET of the legacy (unaggregated) discovery documents kubectl 1.20 and 1.32 request,
for the kinds egret's manifests use (Namespace, ServiceAccount, ConfigMap, DaemonSet,
PriorityClass):

    /version  /api  /api/v1  /apis  /apis/apps/v1  /apis/scheduling.k8s.io/v1

always as Content-Type application/json: kubectl 1.26+ asks for aggregated discovery
(application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList) first and falls back to
these documents when the server answers plain JSON, as a server without aggregated discovery
does. Everything else, and every method but GET, is answered 404 with a Kubernetes Status
object.

What `kubectl create --dry-run=client --validate=false -f DIR` asked for, logged here (each with
?timeout=32s): kubectl 1.20.2 (Debian's kubernetes-client) /api, /apis, then the three group
versions; 1.32.4 (the Google Cloud SDK's, whose dispatcher picks the client for the server's
/version first: /version?timeout=5s) the same. Without --validate=false, 1.32 also asks for
/openapi/v3 and /openapi/v2, 1.20 for /openapi/v2 and /swagger-2.0.0.pb-v1; the 404s make them
refuse to validate ("failed to download openapi"), so the tests pass --validate=false.
"""
import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERBS_ALL = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
VERBS_STATUS = ["get", "patch", "update"]


def resource(name, singular, kind, namespaced, short=None, categories=None, verbs=None):
    r = {"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind,
         "verbs": verbs if verbs is not None else VERBS_ALL}
    if short:
        r["shortNames"] = short
    if categories:
        r["categories"] = categories
    return r


def subresource(name, kind, namespaced, verbs=None):
    return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind,
            "verbs": verbs if verbs is not None else VERBS_STATUS}


def group(name, version="v1"):
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.4",
    "gitCommit": "59526cd4867447956156ae3a602fcbac10a2c335", "gitTreeState": "clean",
    "buildDate": "2025-04-22T16:02:27Z", "goVersion": "go1.23.6", "compiler": "gc",
    "platform": "linux/amd64",
}

CORE_V1 = {
    "kind": "APIResourceList", "groupVersion": "v1",
    "resources": [
        resource("configmaps", "configmap", "ConfigMap", True, ["cm"]),
        resource("namespaces", "namespace", "Namespace", False, ["ns"],
                 verbs=["create", "delete", "get", "list", "patch", "update", "watch"]),
        subresource("namespaces/finalize", "Namespace", False, ["update"]),
        subresource("namespaces/status", "Namespace", False),
        resource("serviceaccounts", "serviceaccount", "ServiceAccount", True, ["sa"]),
        {"name": "serviceaccounts/token", "singularName": "", "namespaced": True,
         "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest",
         "verbs": ["create"]},
    ],
}

APPS_V1 = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
    "resources": [
        resource("daemonsets", "daemonset", "DaemonSet", True, ["ds"], ["all"]),
        subresource("daemonsets/status", "DaemonSet", True),
    ],
}

SCHEDULING_V1 = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "scheduling.k8s.io/v1",
    "resources": [
        resource("priorityclasses", "priorityclass", "PriorityClass", False, ["pc"]),
    ],
}

GROUPS = {
    "kind": "APIGroupList", "apiVersion": "v1",
    "groups": [group("apps"), group("scheduling.k8s.io")],
}


def not_found():
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server could not find the requested resource", "reason": "NotFound",
            "details": {}, "code": 404}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-api"
    log = sys.stderr

    def log_message(self, *args):
        pass

    def answer(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # a client that gave up (its timeout): nothing to answer
        print(f"{self.command} {self.path} {code}", file=self.log, flush=True)

    def do_GET(self):
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        docs = {
            "/version": VERSION,
            "/api": {"kind": "APIVersions", "versions": ["v1"],
                     "serverAddressByClientCIDRs": [{
                         "clientCIDR": "0.0.0.0/0",
                         "serverAddress": "%s:%d" % self.server.server_address[:2]}]},
            "/api/v1": CORE_V1,
            "/apis": GROUPS,
            "/apis/apps/v1": APPS_V1,
            "/apis/scheduling.k8s.io/v1": SCHEDULING_V1,
        }
        if path in docs:
            self.answer(200, docs[path])
        else:
            self.answer(404, not_found())

    def refuse(self):
        length = int(self.headers.get("Content-Length", "0") or "0")
        if length:
            self.rfile.read(length)
        self.answer(404, not_found())

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = refuse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", help="file the requests are logged to (default: stderr)")
    args = ap.parse_args()
    if args.log:
        Handler.log = open(args.log, "a", buffering=1)
    # threads: kubectl asks for the group versions in parallel over kept-alive connections
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
