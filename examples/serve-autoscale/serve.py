#!/usr/bin/env python3
"""A minimal model server: /healthz (ready once the model is loaded), /livez, and
POST /predict, which returns a deterministic "prediction" for the bytes sent.

Standard library only; a real server would load MODEL_NAME onto the GPU here.
"""

import argparse
import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

READY = threading.Event()
MODEL = os.environ.get("MODEL_NAME", "resnet50")


def load_model():
    time.sleep(float(os.environ.get("LOAD_SECONDS", "1")))  # stands for reading weights
    READY.set()


class Handler(BaseHTTPRequestHandler):
    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/livez":
            self.reply(200, {"alive": True})
        elif self.path == "/healthz":
            self.reply(200 if READY.is_set() else 503, {"ready": READY.is_set(), "model": MODEL})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/predict":
            self.reply(404, {"error": "not found"})
            return
        if not READY.is_set():
            self.reply(503, {"error": "model is loading"})
            return
        n = int(self.headers.get("Content-Length", "0"))
        digest = hashlib.sha256(self.rfile.read(n)).digest()
        self.reply(200, {"model": MODEL, "class": digest[0] * 4 + digest[1] % 4})

    def log_message(self, fmt, *args):
        print(f"{self.address_string()} {fmt % args}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=8080)
    args = p.parse_args()
    threading.Thread(target=load_model, daemon=True).start()
    server = ThreadingHTTPServer(("", args.port), Handler)
    print(f"serving {MODEL} on :{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
