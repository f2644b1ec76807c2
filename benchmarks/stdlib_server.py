"""Python's own ``http.server.ThreadingHTTPServer`` (HTTP/1.0: one connection per
request; a listen backlog of 5) serving ``/{index}`` objects as the loopback
server generates them, each reply ``--latency`` seconds late. Prints its URL."""

from __future__ import annotations

import argparse
import http.server
import time

from dataloader_api.io.loopback import generated_object


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--size", type=int, default=100 * 1024)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            index = int(self.path[1:]) if self.path[1:].isdigit() else -1
            time.sleep(args.latency)
            if not 0 <= index < args.objects:
                self.send_error(404)
                return
            body = generated_object(index, args.size)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
