"""An OTLP/HTTP trace receiver for the end-to-end suite, built on the
OpenTelemetry project's own protobuf definitions (the `opentelemetry-proto`
package), independent of the Rust exporter it receives from.

It listens on 127.0.0.1 (a free port), prints `listening PORT` on stdout, then
for every span of every `POST /v1/traces` (protobuf, gzip or not) prints one
JSON line: trace and span ids in hex, the parent's, name, kind, status,
attributes, links and the resource's attributes; after an export's spans,
`{"exported": N}`, so a reader can tell a whole export from one it has only
begun to read. Anything else it is sent is answered 404 (an unknown path) or
400 (a body that does not parse), and said on stdout as `{"refused": ...}`.
"""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


def value(any_value):
    """An AnyValue as plain JSON."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return attributes(any_value.kvlist_value.values)
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind) if kind else None


def attributes(pairs):
    return {pair.key: value(pair.value) for pair in pairs}


SAYING = threading.Lock()


def say(*lines):
    """Print `lines` together: another request's lines never come between."""
    with SAYING:
        sys.stdout.write("".join(json.dumps(line) + "\n" for line in lines))
        sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            say({"refused": "path", "path": self.path})
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = trace_service_pb2.ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as e:
            say({"refused": "body", "error": str(e)})
            self.send_response(400)
            self.end_headers()
            return
        spans = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append({
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": trace_pb2.Span.SpanKind.Name(span.kind),
                        "status": {
                            "code": trace_pb2.Status.StatusCode.Name(span.status.code),
                            "message": span.status.message,
                        },
                        "attributes": attributes(span.attributes),
                        "links": [
                            {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()}
                            for link in span.links
                        ],
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                    })
        # The export's spans, then a line saying it is whole: a reader that
        # shows spans only export by export never shows half of one.
        say(*spans, {"exported": len(spans)})
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    say_port = f"listening {server.server_address[1]}\n"
    sys.stdout.write(say_port)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
