#!/usr/bin/python3
"""An OTLP/HTTP logs receiver for egret's integration tests, decoding with Python's protobuf
(Debian's python3-protobuf) and modules protoc generated from the OTLP .proto files: an
implementation independent of egretd's protobuf-c.

usage: otlp_receiver.py PYTHON_MODULE_DIR PORT OUTPUT [REFUSE_FIRST]

Each log record becomes one JSON line in OUTPUT: event_name, severity, body, attributes, the
resource's attributes and the request's arrival time. Each request is also logged as a line
{"request": N, "status": S, "time": T, "encoding": "gzip", "records": R}. The first
REFUSE_FIRST requests (default 0) are answered 503 with Retry-After: 1.
"""
import gzip
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

sys.path.insert(0, sys.argv[1])
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2  # noqa: E402

PORT = int(sys.argv[2])
OUT = open(sys.argv[3], "a", buffering=1)
REFUSE = int(sys.argv[4]) if len(sys.argv) > 4 else 0
requests = 0


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        global requests
        requests += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        enc = self.headers.get("Content-Encoding", "")
        if requests <= REFUSE:
            OUT.write(json.dumps({"request": requests, "status": 503, "time": time.time(),
                                  "encoding": enc, "records": 0}) + "\n")
            self.send_response(503)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if enc == "gzip":
            body = gzip.decompress(body)
        req = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
        n = 0
        for rl in req.resource_logs:
            res = {kv.key: value(kv.value) for kv in rl.resource.attributes}
            for sl in rl.scope_logs:
                for lr in sl.log_records:
                    n += 1
                    OUT.write(json.dumps({
                        "event_name": lr.event_name,
                        "severity": lr.severity_number,
                        "severity_text": lr.severity_text,
                        "time_unix_nano": lr.time_unix_nano,
                        "body": value(lr.body),
                        "attributes": {kv.key: value(kv.value) for kv in lr.attributes},
                        "resource": res,
                        "scope": sl.scope.name,
                    }) + "\n")
        OUT.write(json.dumps({"request": requests, "status": 200, "time": time.time(),
                              "encoding": enc, "records": n}) + "\n")
        resp = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(resp)))
        self.end_headers()
        self.wfile.write(resp)


HTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
