"""A minimal Lieutenant API for the Commodore side of bench/fetch.sh:
one cluster and one tenant, repositories as file:// URLs."""
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port, work = int(sys.argv[1]), sys.argv[2]
CLUSTER = {
    "id": "c-bench", "tenant": "t-bench", "displayName": "bench",
    "facts": {"distribution": "k3s", "cloud": "local", "region": "here"},
    "dynamicFacts": {},
    "gitRepo": {"url": f"file://{work}/srv/catalog.git"},
}
TENANT = {
    "id": "t-bench", "displayName": "bench",
    "gitRepo": {"url": f"file://{work}/srv/tenant.git"},
    "globalGitRepoURL": f"file://{work}/srv/global.git",
}

class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = None
        if self.path.startswith("/clusters/c-bench"):
            body = CLUSTER
        elif self.path.startswith("/tenants/t-bench"):
            body = TENANT
        data = json.dumps(body or {"reason": "not found"}).encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass

HTTPServer(("127.0.0.1", port), H).serve_forever()
