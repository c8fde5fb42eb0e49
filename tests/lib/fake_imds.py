#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the EC2 instance metadata service, for vpc-eni's `node-setup --imds` tests
(docs/vpc-eni.md, The node from the instance metadata service). It serves the paths an ANSWERS
file holds, read again whenever the file changed (parsed once, however big) so a test changes them between runs (a path it lacks is
a 404, as EC2 answers an ENI's ipv4-prefix when no prefix is delegated to it), with IMDSv2's
session: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds gives a token, and a GET
without an issued token in X-aws-ec2-metadata-token is answered 401. The file's "mode" plays a
broken service: "no-token" answers the PUT with 403 (no IMDSv2 session offered), "v1" does too
but answers GETs without a token (an instance that allows IMDSv1 only), "hang" accepts
and never answers, "expire" forgets every token issued so far at the first GET (once); "status" maps a path to the status it gets instead. Every request is logged
as a JSON line to ANSWERS.log (method, path, the token header, the TTL header). Run it inside
the test's own namespace only.

usage: fake_imds.py ADDRESS PORT ANSWERS   (prints "ready" once it listens)"""
import http.server
import json
import os
import secrets
import socketserver
import sys
import threading
import time

TOKEN_PATH = "/latest/api/token"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    tokens = set()
    expired = False
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    cache = (None, None)  # (the file's identity, its answers): a big file is parsed once, not per request

    def answers(self):
        with open(self.server.answers_path) as f:
            st = os.fstat(f.fileno())
            identity = (st.st_ino, st.st_mtime_ns, st.st_size)
            with self.lock:
                if Handler.cache[0] != identity:
                    Handler.cache = (identity, json.load(f))
                return Handler.cache[1]

    def record(self):
        entry = {"method": self.command, "path": self.path, "token": self.headers.get("X-aws-ec2-metadata-token"),
                 "ttl": self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")}
        with self.lock, open(self.server.answers_path + ".log", "a") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, status, body=""):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def serve(self):
        self.record()
        a = self.answers()
        if a.get("mode") == "hang":
            time.sleep(30)
            return
        if self.path in a.get("status", {}):
            return self.reply(a["status"][self.path])
        if self.command == "PUT" and self.path == TOKEN_PATH:
            if a.get("mode") in ("no-token", "v1") or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self.reply(403)
            token = secrets.token_urlsafe(24)
            with self.lock:
                self.tokens.add(token)
            return self.reply(200, token)
        if self.command != "GET":
            return self.reply(405)
        if a.get("mode") == "expire" and not Handler.expired:  # every token issued so far expires, once
            with self.lock:
                Handler.expired = True
                self.tokens.clear()
        if a.get("mode") != "v1" and self.headers.get("X-aws-ec2-metadata-token") not in self.tokens:
            return self.reply(401)
        if self.path not in a["paths"]:
            return self.reply(404)
        return self.reply(200, a["paths"][self.path])

    do_GET = do_PUT = serve


class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):
        """Bound without HTTPServer's reverse lookup of its own address, which no resolver in
        the test's namespace answers (it waited out the resolver's timeout)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


def main(address, port, answers):
    server = Server((address, int(port)), Handler)
    server.daemon_threads = True
    server.answers_path = answers
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(*sys.argv[1:])
